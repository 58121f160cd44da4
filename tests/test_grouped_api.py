"""The grouped calls on the CPU: bad input names the argument; the contiguous-layout helper; 3-D quantisation."""

from __future__ import annotations

import pytest
import torch

import gemmgen
from gemmgen.quant import is_tma_aligned_scales, tma_aligned_scales

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
