"""The fused epilogues on the CPU: problem and legality rules (each bad combination rejected with its rule named),
the compile matrix over kinds x {e4m3 out, SwiGLU, both}, the kernel name, the API's argument checks before any GPU
is needed, and the weight-interleaving and output-buffer helpers."""

from __future__ import annotations

import pytest
import torch

import gemmgen
from gemmgen.ir import H100_SXM, DType, GemmConfig, GemmKind, GemmProblem, ScaleRecipe
from gemmgen.legality import check
from gemmgen.moe import interleave_gate_up
from gemmgen.stages import build
from gemmgen.tuning.table import problem_key, row_key

E4M3 = torch.float8_e4m3fn
KINDS = {"dense": (GemmKind.NORMAL, 1, 4096), "contiguous": (GemmKind.M_GROUPED_CONTIGUOUS, 8, 8192),
         "masked": (GemmKind.M_GROUPED_MASKED, 8, 256)}


def _problem(kind: str, out: DType = DType.E4M3, swiglu: bool = False, m: int | None = None) -> GemmProblem:
    k, groups, rows = KINDS[kind]
    return GemmProblem(m or rows, 4096, 7168, kind=k, groups=groups, out_dtype=out, swiglu=swiglu)


@pytest.mark.parametrize("kwargs,words", [
    ({"swiglu": True, "n": 384}, ["GemmProblem.n", "multiple of 256"]),
    ({"swiglu": True, "out_dtype": DType.FP32}, ["swiglu", "bf16 or e4m3"]),
    ({"out_dtype": DType.E4M3, "accumulate": True}, ["fused epilogues", "accumulate"]),
    ({"out_dtype": DType.E4M3, "scales": ScaleRecipe.A1x128_B1x128}, ["fused epilogues", "1x128/1x128"]),
    ({"swiglu": "yes"}, ["GemmProblem.swiglu", "bool"]),
    ({"out_dtype": DType.E4M3, "n": 200}, ["GemmProblem.n", "multiple of 16"]),
])
def test_problem_rejects_what_the_epilogue_does_not_implement(kwargs: dict, words: list[str]) -> None:
    fields = {"m": 128, "n": 512, "k": 256, **kwargs}
    with pytest.raises(ValueError) as err:
        GemmProblem(**fields)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_k_grouped_has_no_fused_epilogue() -> None:
    with pytest.raises(ValueError, match="k-grouped GEMM is the weight gradient.*fp32 D"):
        GemmProblem(128, 512, 256, kind=GemmKind.K_GROUPED, groups=2, out_dtype=DType.E4M3,
                    scales=ScaleRecipe.A1x128_B1x128)


@pytest.mark.parametrize("swiglu,config,words", [
    (True, {"block_n": 128}, ["block_n=128", "swiglu needs block_n=256"]),
    (False, {"block_n": 192}, ["block_n=192", "multiple of 128"]),
    (False, {"block_n": 128, "swap_ab": 1}, ["swap_ab=1", "unswapped"]),
    (False, {"block_n": 128, "k_splits": 2}, ["k_splits=2", "without split-K"]),
    (True, {"block_n": 256, "stages": 4, "cross_tile": 1}, ["cross_tile=1", "spills"]),
])
def test_legality_lists_each_broken_epilogue_rule(swiglu: bool, config: dict, words: list[str]) -> None:
    p = _problem("dense", swiglu=swiglu, m=64 if config.get("swap_ab") else 4096)
    c = GemmConfig(block_m=64 if config.get("swap_ab") else 128, block_k=128, stages=config.pop("stages", 3),
                   cluster=1, **config)
    errors = check(p, c, H100_SXM)
    text = " | ".join(errors)
    assert all(w in text for w in words), text


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("out,swiglu", [(DType.E4M3, False), (DType.BF16, True), (DType.E4M3, True)])
def test_fused_kernels_compile_without_spills(kind: str, out: DType, swiglu: bool, settings) -> None:
    built = build(_problem(kind, out, swiglu), None, H100_SXM, settings=settings)
    res = built.meta["resources"]
    assert res["spill_stores"] == 0 and res["spill_loads"] == 0, built.name
    assert ("_swiglu" in built.name) == swiglu and built.name.startswith(f"sm90_e4m3_{out.value}_nt")
    plan = built.kernel.plan
    assert plan.map("out").dims[0].scale == (2048 if swiglu else 4096)  # D's columns
    assert plan.has_param("d_scales") == (out is DType.E4M3)
    counts = built.meta["sass_counts"]
    assert counts["UTMASTG"] >= 1 and counts["QGMMA"] >= 1
    assert "div_rn_noftz_f32_slowpath" not in (built.folder / "kernel.sass").read_text()  # no CALL per value


def test_a_table_row_of_the_plain_gemm_does_not_serve_the_swiglu_one() -> None:
    plain, glu = _problem("contiguous", DType.BF16), _problem("contiguous", DType.BF16, swiglu=True)
    assert row_key(problem_key(plain)) != row_key(problem_key(glu))
    old_row = {k: v for k, v in problem_key(plain).items() if k != "swiglu"}  # a table written before the field
    assert row_key(old_row) == row_key(problem_key(plain))


def _dense(m: int = 4, n: int = 256, k: int = 128):
    a = (torch.zeros(m, k).to(E4M3), torch.ones(m, 1))
    b = (torch.zeros(n, k).to(E4M3), torch.ones(n // 128, 1))
    return a, b


@pytest.mark.parametrize("call,words", [
    (lambda a, b: gemmgen.fp8_gemm_nt(a, b, torch.empty(4, 256, dtype=E4M3)), ["out_scales", "(4, 2)"]),
    (lambda a, b: gemmgen.fp8_gemm_nt(a, b, torch.empty(4, 256, dtype=E4M3), out_scales=torch.empty(4, 1)),
     ["out_scales", "shape (4, 2)"]),
    (lambda a, b: gemmgen.fp8_gemm_nt(a, b, torch.empty(4, 256, dtype=torch.bfloat16), out_scales=torch.empty(4, 2)),
     ["out_scales", "only an e4m3 out"]),
    (lambda a, b: gemmgen.fp8_gemm_nt(a, b, torch.empty(4, 256, dtype=torch.bfloat16), swiglu=True),
     ["out:", "shape (4, 128)"]),
    (lambda a, b: gemmgen.fp8_gemm_nt(a, b, torch.empty(4, 128, dtype=torch.float32), swiglu=True),
     ["out:", "bfloat16 or float8_e4m3fn"]),
    (lambda a, b: gemmgen.fp8_gemm_nt(a, b, torch.empty(4, 128, dtype=torch.bfloat16), swiglu=1),
     ["swiglu", "bool"]),
])
def test_fused_arguments_are_checked_before_the_gpu(call, words: list[str]) -> None:
    a, b = _dense()
    with pytest.raises((TypeError, ValueError)) as err:
        call(a, b)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_swiglu_needs_whole_gate_up_blocks() -> None:
    a = (torch.zeros(4, 128).to(E4M3), torch.ones(4, 1))
    b = (torch.zeros(384, 128).to(E4M3), torch.ones(3, 1))
    with pytest.raises(ValueError, match="multiple of 256"):
        gemmgen.fp8_gemm_nt(a, b, torch.empty(4, 192, dtype=torch.bfloat16), swiglu=True)


def test_interleave_gate_up_alternates_128_row_blocks() -> None:
    gate, up = torch.randn(2, 256, 8), torch.randn(2, 256, 8)
    w = interleave_gate_up(gate, up)
    assert w.shape == (2, 512, 8)
    assert torch.equal(w[:, :128], gate[:, :128]) and torch.equal(w[:, 128:256], up[:, :128])
    assert torch.equal(w[:, 256:384], gate[:, 128:]) and torch.equal(w[:, 384:], up[:, 128:])
    sg, su = torch.randn(2, 2, 1), torch.randn(2, 2, 1)  # their 128x128 block scales: one row per block
    s = interleave_gate_up(sg, su, rows_per_block=1)
    assert torch.equal(s[:, 0], sg[:, 0]) and torch.equal(s[:, 1], su[:, 0]) and torch.equal(s[:, 2], sg[:, 1])
    with pytest.raises(ValueError, match="rows_per_block"):
        interleave_gate_up(torch.randn(100, 8), torch.randn(100, 8))


def test_empty_per_token_fp8_is_in_the_tma_layout() -> None:
    q, s = gemmgen.empty_per_token_fp8(3, 5, 300)
    assert q.dtype == E4M3 and q.shape == (3, 5, 300) and s.shape == (3, 5, 3)
    assert gemmgen.quant.is_tma_aligned_scales(s)
    with pytest.raises(ValueError, match="shape"):
        gemmgen.empty_per_token_fp8(5)
