"""The grouped calls on the CPU: bad input names the argument; the contiguous-layout helper; 3-D quantisation."""

from __future__ import annotations

import importlib

import pytest
import torch

import gemmgen
from gemmgen.errors import NoGpuError
from gemmgen.quant import is_tma_aligned_scales, tma_aligned_scales
from gemmgen.runtime.driver import gpu_available

E4M3 = torch.float8_e4m3fn


def _contig(m: int = 256, n: int = 64, k: int = 256, groups: int = 3):
    a = torch.zeros(m, k).to(E4M3)
    sa = torch.ones(m, -(-k // 128))
    b = torch.zeros(groups, n, k).to(E4M3)
    sb = torch.ones(groups, -(-n // 128), -(-k // 128))
    out = torch.empty(m, n, dtype=torch.bfloat16)
    m_indices = torch.zeros(m, dtype=torch.int32)
    return [a, sa, b, sb, out, m_indices]


def _masked(groups: int = 3, m: int = 64, n: int = 64, k: int = 256):
    a = torch.zeros(groups, m, k).to(E4M3)
    sa = torch.ones(groups, m, -(-k // 128))
    b = torch.zeros(groups, n, k).to(E4M3)
    sb = torch.ones(groups, -(-n // 128), -(-k // 128))
    out = torch.empty(groups, m, n, dtype=torch.bfloat16)
    masked_m = torch.zeros(groups, dtype=torch.int32)
    return [a, sa, b, sb, out, masked_m]


def _with(args: list, index: int, value) -> list:
    args = list(args)
    args[index] = value
    return args


CONTIGUOUS_BAD = {
    "m_indices_dtype": (_with(_contig(), 5, torch.zeros(256, dtype=torch.int64)), TypeError, ["m_indices:", "int32"]),
    "m_indices_length": (_with(_contig(), 5, torch.zeros(200, dtype=torch.int32)), ValueError,
                         ["m_indices:", "(256,)", "(200,)"]),
    "m_indices_2d": (_with(_contig(), 5, torch.zeros(256, 1, dtype=torch.int32)), ValueError, ["m_indices:", "1-D"]),
    "m_total_alignment": (_contig(m=200), ValueError, ["a:", "M_total = 200", "multiple of", "128"]),
    "b_not_grouped": (_with(_contig(), 2, torch.zeros(64, 256).to(E4M3)), ValueError, ["b:", "3-D"]),
    "sb_groups": (_with(_contig(), 3, torch.ones(2, 1, 2)), ValueError, ["sb:", "3 groups", "(2, 1, 2)"]),
    "sb_shape": (_with(_contig(), 3, torch.ones(3, 2, 2)), ValueError, ["sb:", "(3, 1, 2)", "(3, 2, 2)"]),
    "sa_shape": (_with(_contig(), 1, torch.ones(256, 3)), ValueError, ["sa:", "(256, 2)"]),
    "out_shape": (_with(_contig(), 4, torch.empty(256, 32, dtype=torch.bfloat16)), ValueError, ["out:", "(256, 64)"]),
    "b_k": (_with(_contig(), 2, torch.zeros(3, 64, 128).to(E4M3)), ValueError, ["b:", "K=256"]),
}


@pytest.mark.parametrize("case", sorted(CONTIGUOUS_BAD))
def test_contiguous_bad_arguments_are_named(case: str) -> None:
    (a, sa, b, sb, out, m_indices), exc, words = CONTIGUOUS_BAD[case]
    with pytest.raises(exc) as info:
        gemmgen.m_grouped_fp8_gemm_nt_contiguous((a, sa), (b, sb), out, m_indices)
    for word in words:
        assert word in str(info.value), f"{word!r} not in {info.value}"


MASKED_BAD = {
    "b_groups": (_with(_masked(), 2, torch.zeros(2, 64, 256).to(E4M3)), ValueError, ["b:", "3 groups", "as a has"]),
    "sb_groups": (_with(_masked(), 3, torch.ones(4, 1, 2)), ValueError, ["sb:", "3 groups"]),
    "sa_groups": (_with(_masked(), 1, torch.ones(2, 64, 2)), ValueError, ["sa:", "3 groups"]),
    "out_groups": (_with(_masked(), 4, torch.empty(2, 64, 64, dtype=torch.bfloat16)), ValueError,
                   ["out:", "3 groups"]),
    "out_rows": (_with(_masked(), 4, torch.empty(3, 32, 64, dtype=torch.bfloat16)), ValueError,
                 ["out:", "(3, 64, 64)"]),
    "sa_shape": (_with(_masked(), 1, torch.ones(3, 64, 3)), ValueError, ["sa:", "(3, 64, 2)"]),
    "masked_m_length": (_with(_masked(), 5, torch.zeros(4, dtype=torch.int32)), ValueError, ["masked_m:", "(3,)"]),
    "masked_m_dtype": (_with(_masked(), 5, torch.zeros(3)), TypeError, ["masked_m:", "int32"]),
    "a_2d": (_with(_masked(), 0, torch.zeros(64, 256).to(E4M3)), ValueError, ["a:", "3-D"]),
}


@pytest.mark.parametrize("case", sorted(MASKED_BAD))
def test_masked_bad_arguments_are_named(case: str) -> None:
    (a, sa, b, sb, out, masked_m), exc, words = MASKED_BAD[case]
    with pytest.raises(exc) as info:
        gemmgen.m_grouped_fp8_gemm_nt_masked((a, sa), (b, sb), out, masked_m, 32)
    for word in words:
        assert word in str(info.value), f"{word!r} not in {info.value}"


@pytest.mark.parametrize("expected_m", [0, -3, 2.5, True, "64"])
def test_masked_expected_m_is_checked(expected_m) -> None:
    a, sa, b, sb, out, masked_m = _masked()
    with pytest.raises(ValueError, match="expected_m:"):
        gemmgen.m_grouped_fp8_gemm_nt_masked((a, sa), (b, sb), out, masked_m, expected_m)


def test_grouped_config_keys_are_checked() -> None:
    a, sa, b, sb, out, m_indices = _contig()
    with pytest.raises(ValueError, match="config: unknown field 'blockm'"):
        gemmgen.api._overrides({"blockm": 64})
    with pytest.raises(ValueError, match="config: block_m expects an integer"):
        gemmgen.api._overrides({"block_m": "64"})


# ---------------------------------------------------------------- m_grouped_bf16_gemm_nt_contiguous

BF16 = torch.bfloat16


def _bf16_contig(m: int = 256, n: int = 64, k: int = 256, groups: int = 3):
    return [torch.zeros(m, k, dtype=BF16), torch.zeros(groups, n, k, dtype=BF16), torch.empty(m, n, dtype=BF16),
            torch.zeros(m, dtype=torch.int32)]


BF16_CONTIGUOUS_BAD = {
    "a_fp8": (_with(_bf16_contig(), 0, torch.zeros(256, 256).to(E4M3)), TypeError, ["a:", "bfloat16", "float8"]),
    "a_3d": (_with(_bf16_contig(), 0, torch.zeros(2, 128, 256, dtype=BF16)), ValueError, ["a:", "2-D"]),
    "b_not_grouped": (_with(_bf16_contig(), 1, torch.zeros(64, 256, dtype=BF16)), ValueError, ["b:", "3-D"]),
    "b_fp8": (_with(_bf16_contig(), 1, torch.zeros(3, 64, 256).to(E4M3)), TypeError, ["b:", "bfloat16"]),
    "b_k": (_with(_bf16_contig(), 1, torch.zeros(3, 64, 128, dtype=BF16)), ValueError, ["b:", "(G, N, 256)", "K=256"]),
    "k_multiple": (_bf16_contig(k=100), ValueError, ["a:", "multiple of 8", "K=100"]),
    "n_multiple": (_bf16_contig(n=12), ValueError, ["b:", "multiple of 8", "N=12"]),
    "m_total_alignment": (_bf16_contig(m=200), ValueError, ["a:", "M_total = 200", "multiple of", "128"]),
    "out_fp32": (_with(_bf16_contig(), 2, torch.empty(256, 64)), TypeError, ["out:", "bfloat16", "float32"]),
    "out_fp16": (_with(_bf16_contig(), 2, torch.empty(256, 64, dtype=torch.half)), TypeError, ["out:", "bfloat16"]),
    "out_shape": (_with(_bf16_contig(), 2, torch.empty(256, 32, dtype=BF16)), ValueError, ["out:", "(256, 64)"]),
    "m_indices_dtype": (_with(_bf16_contig(), 3, torch.zeros(256, dtype=torch.int64)), TypeError,
                        ["m_indices:", "int32"]),
    "m_indices_length": (_with(_bf16_contig(), 3, torch.zeros(200, dtype=torch.int32)), ValueError,
                         ["m_indices:", "(256,)", "(200,)"]),
    "not_a_tensor": (_with(_bf16_contig(), 3, [0] * 256), TypeError, ["m_indices:", "torch.Tensor", "list"]),
}


@pytest.mark.parametrize("case", sorted(BF16_CONTIGUOUS_BAD))
def test_bf16_contiguous_bad_arguments_are_named(case: str) -> None:
    (a, b, out, m_indices), exc, words = BF16_CONTIGUOUS_BAD[case]
    with pytest.raises(exc) as info:
        gemmgen.m_grouped_bf16_gemm_nt_contiguous(a, b, out, m_indices)
    for word in words:
        assert word in str(info.value), f"{word!r} not in {info.value}"


def test_bf16_contiguous_m_zero_and_no_gpu() -> None:
    """M_total = 0 launches nothing (no GPU needed); otherwise, without a GPU, the call says so."""
    a, b, out, m_indices = _bf16_contig(m=0)
    assert gemmgen.m_grouped_bf16_gemm_nt_contiguous(a, b, out, m_indices) is out
    if not gpu_available():
        with pytest.raises(NoGpuError, match="no CUDA GPU"):
            gemmgen.m_grouped_bf16_gemm_nt_contiguous(*_bf16_contig())


def test_bf16_contiguous_kernel_checks_its_arguments(settings) -> None:
    """A built bf16 contiguous kernel called directly: checked as m_grouped_bf16_gemm_nt_contiguous is, then
    against the N and K it was built for; M_total = 0 returns without a GPU."""
    from gemmgen.ir import H200_SXM, DType, GemmKind, GemmProblem, ScaleRecipe
    from gemmgen.stages import build

    problem = GemmProblem(256, 64, 256, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=3, a_dtype=DType.BF16,
                          b_dtype=DType.BF16, scales=ScaleRecipe.NONE)
    kernel = build(problem, {"block_m": 64}, H200_SXM, settings=settings)
    a, b, out, m_indices = _bf16_contig(m=0)
    assert kernel(a, b, out, m_indices) is out
    with pytest.raises(ValueError, match="b: this kernel was built for N=64, K=256; got N=128"):
        kernel(*_bf16_contig(m=0, n=128))
    with pytest.raises(TypeError, match="out: expected dtype torch.bfloat16"):
        kernel(a, b, out.float(), m_indices)


def test_bf16_contiguous_is_exported() -> None:
    assert "m_grouped_bf16_gemm_nt_contiguous" in gemmgen.__all__
    assert gemmgen.m_grouped_bf16_gemm_nt_contiguous is gemmgen.api.m_grouped_bf16_gemm_nt_contiguous


# ---------------------------------------------------------------- m_grouped_bf16_gemm_nt_masked

def _bf16_masked(m_max: int = 64, n: int = 64, k: int = 256, groups: int = 3):
    return [torch.zeros(groups, m_max, k, dtype=BF16), torch.zeros(groups, n, k, dtype=BF16),
            torch.empty(groups, m_max, n, dtype=BF16), torch.zeros(groups, dtype=torch.int32)]


BF16_MASKED_BAD = {
    "a_fp8": (_with(_bf16_masked(), 0, torch.zeros(3, 64, 256).to(E4M3)), TypeError, ["a:", "bfloat16", "float8"]),
    "a_2d": (_with(_bf16_masked(), 0, torch.zeros(64, 256, dtype=BF16)), ValueError, ["a:", "3-D"]),
    "b_groups": (_with(_bf16_masked(), 1, torch.zeros(2, 64, 256, dtype=BF16)), ValueError,
                 ["b:", "3 groups", "as a has"]),
    "b_fp8": (_with(_bf16_masked(), 1, torch.zeros(3, 64, 256).to(E4M3)), TypeError, ["b:", "bfloat16"]),
    "b_k": (_with(_bf16_masked(), 1, torch.zeros(3, 64, 128, dtype=BF16)), ValueError, ["b:", "(G, N, 256)"]),
    "k_multiple": (_bf16_masked(k=100), ValueError, ["a:", "multiple of 8", "K=100"]),
    "n_multiple": (_bf16_masked(n=12), ValueError, ["b:", "multiple of 8", "N=12"]),
    "out_fp32": (_with(_bf16_masked(), 2, torch.empty(3, 64, 64)), TypeError, ["out:", "bfloat16", "float32"]),
    "out_groups": (_with(_bf16_masked(), 2, torch.empty(2, 64, 64, dtype=BF16)), ValueError, ["out:", "3 groups"]),
    "out_rows": (_with(_bf16_masked(), 2, torch.empty(3, 32, 64, dtype=BF16)), ValueError, ["out:", "(3, 64, 64)"]),
    "masked_m_length": (_with(_bf16_masked(), 3, torch.zeros(4, dtype=torch.int32)), ValueError,
                        ["masked_m:", "(3,)"]),
    "masked_m_dtype": (_with(_bf16_masked(), 3, torch.zeros(3)), TypeError, ["masked_m:", "int32"]),
}


@pytest.mark.parametrize("case", sorted(BF16_MASKED_BAD))
def test_bf16_masked_bad_arguments_are_named(case: str) -> None:
    (a, b, out, masked_m), exc, words = BF16_MASKED_BAD[case]
    with pytest.raises(exc) as info:
        gemmgen.m_grouped_bf16_gemm_nt_masked(a, b, out, masked_m, 32)
    for word in words:
        assert word in str(info.value), f"{word!r} not in {info.value}"


@pytest.mark.parametrize("expected_m", [0, -3, 2.5, True, "64"])
def test_bf16_masked_expected_m_is_checked(expected_m) -> None:
    with pytest.raises(ValueError, match="expected_m:"):
        gemmgen.m_grouped_bf16_gemm_nt_masked(*_bf16_masked(), expected_m)


def test_bf16_masked_m_zero_and_no_gpu() -> None:
    """M_max = 0 launches nothing (no GPU needed); otherwise, without a GPU, the call says so."""
    a, b, out, masked_m = _bf16_masked(m_max=0)
    assert gemmgen.m_grouped_bf16_gemm_nt_masked(a, b, out, masked_m, 32) is out
    if not gpu_available():
        with pytest.raises(NoGpuError, match="no CUDA GPU"):
            gemmgen.m_grouped_bf16_gemm_nt_masked(*_bf16_masked(), 32)


def test_bf16_masked_kernel_checks_its_arguments(settings) -> None:
    """A built bf16 masked kernel called directly is checked as m_grouped_bf16_gemm_nt_masked is (not as the FP8
    masked call, which would ask for scales), then against its N and K."""
    from gemmgen.ir import H200_SXM, DType, GemmKind, GemmProblem, ScaleRecipe
    from gemmgen.stages import build

    problem = GemmProblem(32, 64, 256, kind=GemmKind.M_GROUPED_MASKED, groups=3, a_dtype=DType.BF16,
                          b_dtype=DType.BF16, scales=ScaleRecipe.NONE)
    kernel = build(problem, None, H200_SXM, settings=settings)
    assert kernel.name.startswith("sm90_bf16_bf16_nt_gmasked_"), kernel.name
    a, b, out, masked_m = _bf16_masked(m_max=0)
    assert kernel(a, b, out, masked_m) is out
    with pytest.raises(ValueError, match="b: this kernel was built for N=64, K=256; got N=128"):
        kernel(*_bf16_masked(m_max=0, n=128))
    with pytest.raises(TypeError, match="out: expected dtype torch.bfloat16"):
        kernel(a, b, out.float(), masked_m)


def test_bf16_masked_is_exported_and_an_op() -> None:
    assert "m_grouped_bf16_gemm_nt_masked" in gemmgen.__all__
    assert gemmgen.m_grouped_bf16_gemm_nt_masked is gemmgen.api.m_grouped_bf16_gemm_nt_masked
    importlib.import_module("gemmgen.ops")  # registers the ops
    assert hasattr(torch.ops.gemmgen, "m_grouped_bf16_gemm_nt_masked")


# ---------------------------------------------------------------- the contiguous layout helper

def test_alignment() -> None:
    assert gemmgen.get_m_alignment_for_contiguous_layout() == 128


def test_contiguous_layout_round_trip() -> None:
    counts = [300, 0, 1, 128, 129]
    layout = gemmgen.contiguous_layout(counts)
    assert layout.offsets == (0, 384, 384, 512, 640) and layout.m_total == 896
    expected = [0] * 300 + [-1] * 84 + [2] + [-1] * 127 + [3] * 128 + [4] * 129 + [-1] * 127
    assert layout.m_indices.dtype == torch.int32 and layout.m_indices.tolist() == expected
    x = torch.randn(sum(counts), 16)
    aligned = layout.scatter(x)
    assert aligned.shape == (896, 16) and torch.equal(aligned[layout.m_indices < 0], torch.zeros(896 - 558, 16))
    assert torch.equal(layout.gather(aligned), x)
    assert torch.equal(aligned[384], x[300])  # expert 2's only row starts its segment


@pytest.mark.parametrize("counts", [[], [3, -1], [2.5], [True]])
def test_contiguous_layout_bad_counts(counts) -> None:
    with pytest.raises(ValueError, match="counts:"):
        gemmgen.contiguous_layout(counts)


def test_contiguous_layout_bad_rows() -> None:
    layout = gemmgen.contiguous_layout([3, 4])
    with pytest.raises(ValueError, match="x: expected 7 rows"):
        layout.scatter(torch.zeros(8, 2))
    with pytest.raises(ValueError, match="y: expected 256 rows"):
        layout.gather(torch.zeros(7, 2))


# ---------------------------------------------------------------- 3-D (masked) quantisation and scale layout

def test_per_token_cast_3d_matches_per_group() -> None:
    x = torch.randn(3, 37, 300)
    q, s = gemmgen.per_token_cast_to_fp8(x)
    assert q.shape == x.shape and s.shape == (3, 37, 3) and is_tma_aligned_scales(s)
    assert s.stride() == (3 * 40, 1, 40)  # groups stacked, each M-major with the M stride rounded up to 4
    for g in range(3):
        qg, sg = gemmgen.per_token_cast_to_fp8(x[g])
        assert torch.equal(q[g].view(torch.uint8), qg.view(torch.uint8)) and torch.equal(s[g], sg)


def test_per_block_cast_3d_matches_per_group() -> None:
    w = torch.randn(2, 200, 300)
    q, s = gemmgen.per_block_cast_to_fp8(w)
    assert q.shape == w.shape and s.shape == (2, 2, 3) and s.is_contiguous()
    for g in range(2):
        qg, sg = gemmgen.per_block_cast_to_fp8(w[g])
        assert torch.equal(q[g].view(torch.uint8), qg.view(torch.uint8)) and torch.equal(s[g], sg)


def test_tma_aligned_scales_3d() -> None:
    sa = torch.randn(4, 13, 5)
    aligned = tma_aligned_scales(sa)
    assert torch.equal(aligned, sa) and is_tma_aligned_scales(aligned) and not is_tma_aligned_scales(sa)
    assert tma_aligned_scales(aligned) is aligned


@pytest.mark.parametrize("accumulate", [True, False])
def test_k_grouped_without_k_is_the_only_no_kernel_case(accumulate: bool) -> None:
    """validate.k_grouped_without_k (shared by the public call and a direct kernel call): with rows, groups and
    every K = 0 there is no kernel, D += 0 keeps out and D = 0 zeroes it; anything else (some K, or M = 0, or no groups,
    whose env has no "k") is not this case."""
    from gemmgen.runtime import validate

    c = torch.randn(3, 4, 8)
    out = c.clone()
    assert validate.k_grouped_without_k(out, {"m": 4, "g": 3, "k": 0}, accumulate) is out
    assert torch.equal(out, c) if accumulate else not out.any()
    for env in ({"m": 4, "g": 3, "k": 128}, {"m": 0, "g": 3}, {"m": 4, "g": 0}):
        out = c.clone()
        assert validate.k_grouped_without_k(out, env, accumulate) is None and torch.equal(out, c), env


def test_direct_k_grouped_call_checks_before_its_no_kernel_shortcut(monkeypatch) -> None:
    """A direct k-grouped kernel call whose groups all have K = 0 still refuses a B of another N or an out of another
    dtype (the shortcut comes after the kernel's checks, as in any call); the device check is stubbed (CPU box)."""
    from gemmgen.ir import DType, GemmKind, GemmProblem, ScaleRecipe
    from gemmgen.runtime.launch import Launcher

    problem = GemmProblem(256, 1000, 1024, kind=GemmKind.K_GROUPED, groups=3, out_dtype=DType.FP32,
                          accumulate=False, scales=ScaleRecipe.A1x128_B1x128)
    launcher = Launcher(gemmgen.build(problem, {"block_m": 128, "block_n": 40}))
    out = torch.ones(256, 1000)

    def checked(b_rows: int, out_t: torch.Tensor):
        b = torch.zeros(b_rows, 0, dtype=torch.float8_e4m3fn)
        return {"a": torch.zeros(256, 0, dtype=torch.float8_e4m3fn), "b": b, "out": out_t}, {"m": 256, "g": 3, "k": 0}

    monkeypatch.setattr(launcher, "_check", lambda *_: checked(999, out))
    with pytest.raises(ValueError, match="N=1000"):
        launcher()
    monkeypatch.setattr(launcher, "_check", lambda *_: checked(1000, out.to(torch.bfloat16)))
    with pytest.raises(TypeError, match="out: this kernel writes"):
        launcher()
    monkeypatch.setattr(launcher, "_check", lambda *_: checked(1000, out))
    assert launcher() is out and not out.any()  # D = 0 over no K: zeroed, no kernel
