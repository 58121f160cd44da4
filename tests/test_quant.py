"""FP8 quantisation helpers against a plain torch reference written here, plus the TMA scale layout."""

from __future__ import annotations

import math

import pytest
import torch

import gemmgen
from gemmgen.quant import (
    calc_diff,
    dequantize_a,
    dequantize_b,
    per_block_cast_to_fp8,
    per_token_cast_to_fp8,
    tma_aligned_scales,
)

FP8_MAX = 448.0


def _ref_quant(x: torch.Tensor, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference: blocks of `rows` x 128 (rows=1: per token; 128: per block); amax >= 1e-4, scale = amax / 448."""
    x = x.float()
    q = torch.empty(x.shape, dtype=torch.float8_e4m3fn)
    scales = torch.empty(math.ceil(x.shape[0] / rows), math.ceil(x.shape[1] / 128))
    for bi in range(scales.shape[0]):
        for bj in range(scales.shape[1]):
            r, c = slice(bi * rows, (bi + 1) * rows), slice(bj * 128, (bj + 1) * 128)
            block = x[r, c]
            scale = block.abs().max().clamp(min=1e-4) / FP8_MAX
            scales[bi, bj] = scale
            q[r, c] = (block / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q, scales


def _same_bytes(a: torch.Tensor, b: torch.Tensor) -> None:
    assert a.dtype == b.dtype == torch.float8_e4m3fn and a.shape == b.shape
    mismatch = (a.view(torch.uint8) != b.view(torch.uint8)).sum().item()
    assert mismatch == 0, f"{mismatch} fp8 bytes differ"


SHAPES = [(4, 256), (7, 300), (130, 128), (33, 16), (1, 1296)]  # K % 128 != 0 in most


@pytest.mark.parametrize("m,k", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_per_token_matches_reference(m: int, k: int, dtype: torch.dtype) -> None:
    torch.manual_seed(m * 1000 + k)
    x = (torch.randn(m, k) * torch.logspace(-3, 3, k)).to(dtype)  # a wide dynamic range per row
    q, sa = per_token_cast_to_fp8(x)
    q_ref, s_ref = _ref_quant(x, rows=1)
    _same_bytes(q, q_ref)
    assert sa.shape == s_ref.shape and torch.equal(sa, s_ref)


@pytest.mark.parametrize("n,k", [(256, 256), (200, 300), (136, 128), (8, 16), (384, 1296)])
def test_per_block_matches_reference(n: int, k: int) -> None:
    torch.manual_seed(n * 1000 + k)
    w = torch.randn(n, k) * 3
    w[: min(n, 128), :7] *= 1000  # one block with a much larger amax than the rest
    q, sb = per_block_cast_to_fp8(w)
    q_ref, s_ref = _ref_quant(w, rows=128)
    _same_bytes(q, q_ref)
    assert sb.shape == s_ref.shape and sb.is_contiguous() and torch.equal(sb, s_ref)


def test_zero_blocks_are_finite_zeros() -> None:
    x = torch.zeros(5, 300)
    x[0, 200:] = 1.0  # block (0, 1) is non-zero, every other block is all zero
    q, sa = per_token_cast_to_fp8(x)
    assert torch.isfinite(sa).all() and (sa > 0).all()
    assert torch.equal(sa[1], torch.full((3,), 1e-4 / FP8_MAX))
    assert not q.float().isnan().any() and q.float()[1:].abs().sum() == 0
    qb, sb = per_block_cast_to_fp8(torch.zeros(130, 130))
    assert torch.isfinite(sb).all() and (sb > 0).all() and qb.float().abs().sum() == 0
    assert torch.isfinite(dequantize_a(q, sa)).all() and torch.isfinite(dequantize_b(qb, sb)).all()


def test_huge_values_stay_finite() -> None:
    x = torch.randn(3, 256)
    x[1, 5] = 1e30
    x[2, 130] = -1e30
    q, sa = per_token_cast_to_fp8(x)
    deq = dequantize_a(q, sa)
    assert torch.isfinite(q.float()).all() and torch.isfinite(deq).all()
    assert q.float().abs().max() <= FP8_MAX
    assert float(deq[1, 5]) == pytest.approx(1e30, rel=1e-6) and float(deq[2, 130]) == pytest.approx(-1e30, rel=1e-6)
    qb, sb = per_block_cast_to_fp8(x * 1e8)  # 1e38, near float32's max: q clamps to 448, scale stays finite
    assert torch.isfinite(dequantize_b(qb, sb)).all()


# ---------------------------------------------------------------- the TMA-aligned SA layout

@pytest.mark.parametrize("m", [1, 3, 4, 5, 130])
def test_per_token_scales_are_tma_aligned(m: int) -> None:
    _, sa = per_token_cast_to_fp8(torch.randn(m, 300))  # 3 scale blocks
    assert sa.shape == (m, 3)
    assert sa.stride(0) == 1 and sa.stride(1) == math.ceil(m / 4) * 4
    assert sa.data_ptr() % 16 == 0


def test_tma_aligned_scales_converts_row_major() -> None:
    rm = torch.randn(5, 3)  # row-major: stride (3, 1)
    al = tma_aligned_scales(rm)
    assert al.shape == rm.shape and torch.equal(al, rm)
    assert (al.stride(0), al.stride(1)) == (1, 8)
    again = tma_aligned_scales(al)
    assert again.data_ptr() == al.data_ptr() and again.stride() == al.stride()


def test_tma_aligned_scales_rejects_non_2d() -> None:
    with pytest.raises(ValueError, match="sa"):
        tma_aligned_scales(torch.randn(8))


# ---------------------------------------------------------------- round trip and calc_diff

def test_round_trip_error_is_small() -> None:
    torch.manual_seed(0)
    x = torch.randn(64, 1000, dtype=torch.bfloat16)
    w = torch.randn(300, 1000) * 0.02
    err_a = (dequantize_a(*per_token_cast_to_fp8(x)) - x.double()).abs().max() / x.double().abs().max()
    err_b = (dequantize_b(*per_block_cast_to_fp8(w)) - w.double()).abs().max() / w.double().abs().max()
    assert 0 < err_a < 0.07 and 0 < err_b < 0.07  # e4m3 has 3 mantissa bits: <= 2^-4 relative
    assert calc_diff(dequantize_a(*per_token_cast_to_fp8(x)), x) < 1e-3


def test_calc_diff() -> None:
    torch.manual_seed(1)
    x, y = torch.randn(64, 64), torch.randn(64, 64)
    assert calc_diff(x, x) == 0.0  # 2*sum(x^2) / sum(2*x^2): doubling is exact
    assert calc_diff(x, y) > 0.5  # independent: sum(xy) ~ 0 -> ~1
    assert calc_diff(x, -x) == pytest.approx(2.0)
    assert calc_diff(torch.zeros(3), torch.zeros(3)) == 0.0


# ---------------------------------------------------------------- bad inputs

@pytest.mark.parametrize("fn,name", [(per_token_cast_to_fp8, "x"), (per_block_cast_to_fp8, "w")])
@pytest.mark.parametrize("bad,exc", [
    (torch.randn(128), ValueError),
    (torch.randn(2, 2, 2, 128), ValueError),
    (torch.ones(4, 128, dtype=torch.int32), TypeError),
    (torch.randn(4, 128).to(torch.float8_e4m3fn), TypeError),
    ([[1.0, 2.0]], TypeError),
])
def test_bad_inputs(fn, name: str, bad, exc: type[Exception]) -> None:
    with pytest.raises(exc) as info:
        fn(bad)
    assert str(info.value).startswith(f"{name}: ")


# ---------------------------------------------------------------- non-finite input

def test_non_finite_values_poison_only_their_block() -> None:
    """inf or NaN in a block makes that block's scale NaN (and its values 0): exactly the outputs that read it are
    NaN; every other block is quantised as if the bad one were not there."""
    x = torch.randn(4, 300)
    x[1, 5], x[2, 260] = float("inf"), float("nan")
    q, s = per_token_cast_to_fp8(x)
    bad = torch.zeros(4, 3, dtype=torch.bool)
    bad[1, 0] = bad[2, 2] = True
    assert s[bad].isnan().all() and s[~bad].isfinite().all()
    assert (q[1, :128].float() == 0).all() and (q[2, 256:].float() == 0).all()
    clean_q, clean_s = per_token_cast_to_fp8(torch.where(x.isfinite(), x, 0.0))
    assert torch.equal(s[~bad], clean_s[~bad]) and torch.equal(q[0].float(), clean_q[0].float())
    w = torch.randn(2, 200, 300)
    w[1, 150, 10] = float("-inf")
    qw, sw = per_block_cast_to_fp8(w)
    assert sw[1, 1, 0].isnan() and sw.isnan().sum() == 1 and (qw[1, 128:, :128].float() == 0).all()


# --- e5m2, stochastic rounding, strided inputs (issue 8, item 7) -------------------------------------------------

def test_e5m2_casts_use_the_formats_range() -> None:
    torch.manual_seed(0)
    x = torch.randn(64, 300) * 3
    q, s = gemmgen.per_token_cast_to_fp8(x, torch.float8_e5m2)
    assert q.dtype == torch.float8_e5m2 and q.float().abs().max() <= 57344.0
    assert torch.allclose(q.float().abs().amax(dim=1)[:1], torch.tensor([57344.0]), rtol=0.13)  # amax maps to max
    back = q.float() * s.repeat_interleave(128, dim=1)[:, :300]
    assert ((back - x).abs() <= x.abs() * 2.0**-2 + 1e-6).all()  # 2 mantissa bits: relative error <= 2^-3 (+ ulp)
    w = torch.randn(300, 260)
    qb, sb = gemmgen.per_block_cast_to_fp8(w, torch.float8_e5m2)
    assert qb.dtype == torch.float8_e5m2 and sb.shape == (3, 3)


@pytest.mark.parametrize("dtype,mantissa_bits,min_subnormal",
                         [(torch.float8_e4m3fn, 3, 2.0**-9), (torch.float8_e5m2, 2, 2.0**-16)])
def test_stochastic_rounding_is_unbiased_and_reproducible(dtype, mantissa_bits, min_subnormal) -> None:
    """Over 4000 draws the mean of each element's FP8 value (in scaled units) is within 5 standard errors of the
    value; one draw's spread is at most half the local spacing (ulp), so the bound is 5 * (ulp / 2) / sqrt(4000)."""
    torch.manual_seed(1)
    x = torch.randn(4, 256) * torch.logspace(-4, 0, 256)  # normal and subnormal FP8 ranges after scaling
    near, s = gemmgen.per_token_cast_to_fp8(x, dtype)
    scaled = (x.double() / s.double().repeat_interleave(128, dim=1))
    gen = torch.Generator().manual_seed(1234)
    n = 4000
    mean = sum(gemmgen.per_token_cast_to_fp8(x, dtype, rounding="stochastic", generator=gen)[0].double()
               for _ in range(n)) / n
    ulp = torch.clamp(2.0 ** (torch.floor(torch.log2(scaled.abs().clamp(min=1e-30))) - mantissa_bits),
                      min=min_subnormal)
    assert ((mean - scaled).abs() <= 5 * (ulp / 2) / n**0.5).all()
    # nearest rounding is off by up to half an ulp on the same inputs: far outside that bound somewhere
    assert ((near.double() - scaled).abs() > 5 * (ulp / 2) / n**0.5).any()
    a = gemmgen.per_token_cast_to_fp8(x, dtype, rounding="stochastic", generator=torch.Generator().manual_seed(7))
    b = gemmgen.per_token_cast_to_fp8(x, dtype, rounding="stochastic", generator=torch.Generator().manual_seed(7))
    c = gemmgen.per_token_cast_to_fp8(x, dtype, rounding="stochastic", generator=torch.Generator().manual_seed(8))
    assert torch.equal(a[0].view(torch.uint8), b[0].view(torch.uint8))
    assert not torch.equal(a[0].view(torch.uint8), c[0].view(torch.uint8))


def test_stochastic_draws_are_the_two_neighbours() -> None:
    """amax 448 makes the scale 1; 1.078125 lies between the e4m3 codes 1.0 and 1.125 (step 1/8 there), so it rounds
    up with probability 0.625 and to nothing else."""
    x = torch.zeros(1, 128)
    x[0, 0], x[0, 1] = 448.0, 1.078125
    gen = torch.Generator().manual_seed(0)
    draws = torch.tensor([float(gemmgen.per_token_cast_to_fp8(x, rounding="stochastic", generator=gen)[0][0, 1])
                          for _ in range(2000)])
    assert set(draws.tolist()) == {1.0, 1.125}
    assert abs(float((draws == 1.125).double().mean()) - 0.625) < 0.05
    assert float(gemmgen.per_token_cast_to_fp8(x)[0][0, 1]) == 1.125  # nearest: always up here


def test_casts_accept_strided_inputs_and_write_k_major() -> None:
    torch.manual_seed(2)
    wt = torch.randn(384, 200, dtype=torch.bfloat16)  # a [K, N] weight; the GEMM wants [N, K]
    q1, s1 = gemmgen.per_block_cast_to_fp8(wt.t())
    q2, s2 = gemmgen.per_block_cast_to_fp8(wt.t().contiguous())
    assert q1.is_contiguous() and q1.shape == (200, 384)
    assert torch.equal(q1.view(torch.uint8), q2.view(torch.uint8)) and torch.equal(s1, s2)
    x = torch.randn(300, 64)[::2]  # a row-strided view
    qa, sa = gemmgen.per_token_cast_to_fp8(x)
    qb, sb_ = gemmgen.per_token_cast_to_fp8(x.contiguous())
    assert torch.equal(qa.view(torch.uint8), qb.view(torch.uint8)) and torch.equal(sa, sb_)


def test_cast_options_are_checked() -> None:
    x = torch.randn(4, 128)
    with pytest.raises(TypeError, match="dtype"):
        gemmgen.per_token_cast_to_fp8(x, torch.float16)
    with pytest.raises(ValueError, match="rounding"):
        gemmgen.per_token_cast_to_fp8(x, rounding="up")
    with pytest.raises(ValueError, match="generator"):
        gemmgen.per_token_cast_to_fp8(x, generator=torch.Generator())
    with pytest.raises(TypeError, match="generator"):
        gemmgen.per_block_cast_to_fp8(x, rounding="stochastic", generator=3)  # type: ignore[arg-type]


def test_per_tensor_and_per_channel_casts_reconstruct() -> None:
    x = torch.randn(37, 300) * torch.linspace(0.1, 10, 37)[:, None]
    q, s = gemmgen.per_tensor_cast_to_fp8(x)
    assert q.dtype == torch.float8_e4m3fn and s.shape == () and q.shape == x.shape and q.is_contiguous()
    assert float(s) == pytest.approx(float(x.abs().max()) / 448.0)
    assert ((q.double() * s.double() - x.double()).abs() <= 2**-4 * x.abs().max() + 1e-12).all()
    q, s = gemmgen.per_channel_cast_to_fp8(x.t().contiguous().t(), torch.float8_e5m2)  # strided input
    assert q.dtype == torch.float8_e5m2 and s.shape == (37,) and q.is_contiguous()
    assert torch.allclose(s, x.abs().amax(dim=1) / 57344.0)
    rel = (q.double() * s.double()[:, None] - x.double()).abs() / x.abs().amax(dim=1, keepdim=True).double()
    assert (rel <= 2**-3).all()  # e5m2: 2 mantissa bits, half an ulp relative to the row's max
