"""The fused epilogues on the GPU: e4m3 D with its 1x128 scales (bit for bit per_token_cast_to_fp8 of the bf16 D of
the same kernel config), SwiGLU against float64, in the dense, contiguous and masked kinds, with their edges."""

from __future__ import annotations

import pytest
import torch

import gemmgen
from gemmgen.moe import interleave_gate_up
from gemmgen.quant import dequantize_a, dequantize_b

pytestmark = pytest.mark.gpu
POISON = 0x7F  # e4m3fn NaN: a byte the kernel never writes (it saturates), so an untouched byte stays this
TILE = {"block_m": 128, "block_n": 256, "k_splits": 1}  # one tile config for the bf16 and the e4m3 call: same sums


def _gen(seed: int) -> torch.Generator:
    return torch.Generator(device="cuda").manual_seed(seed)


def _poisoned(shape: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    q, s = gemmgen.empty_per_token_fp8(*shape, device="cuda")
    q.view(torch.uint8).fill_(POISON)
    s.fill_(float("nan"))
    return q, s


def _swiglu64(h: torch.Tensor) -> torch.Tensor:
    """float64 SwiGLU of an interleaved product [.., 2I]: gate blocks of 128 columns, then their up blocks."""
    blocks = h.unflatten(-1, (h.shape[-1] // 256, 2, 128))
    g, u = blocks.select(-2, 0).flatten(-2), blocks.select(-2, 1).flatten(-2)
    return g * torch.sigmoid(g) * u


def _same_cast(q: torch.Tensor, s: torch.Tensor, bf16: torch.Tensor, rows: torch.Tensor) -> None:
    """The kernel's e4m3 values and scales equal per_token_cast_to_fp8 of its bf16 D on the written rows."""
    want_q, want_s = gemmgen.per_token_cast_to_fp8(bf16[rows])
    got_q, got_s = q[rows], s[rows]
    nan = torch.isnan(want_s)
    assert torch.equal(torch.isnan(got_s), nan)
    assert torch.equal(got_s[~nan], want_s[~nan]), "scales differ from per_token_cast_to_fp8 of the bf16 D"
    differ = (got_q.view(torch.uint8) != want_q.view(torch.uint8)).sum().item()
    assert differ == 0, f"{differ} e4m3 values differ from per_token_cast_to_fp8 of the bf16 D"


def _within_fp8(q: torch.Tensor, s: torch.Tensor, ref: torch.Tensor) -> None:
    """Dequantized e4m3 D against the float64 reference: e4m3 keeps 3 mantissa bits (2^-4 relative) above its
    subnormals (steps of 2^-9 x 448 x scale), plus the bf16 rounding before it (2^-8)."""
    deq = dequantize_a(q, s)
    step = s.double().repeat_interleave(128, dim=-1)[..., :ref.shape[-1]]
    bad = (deq - ref).abs() > 0.07 * ref.abs() + 448 * 2.0 ** -9 * step
    assert not bad.any(), f"{bad.sum().item()} values outside the e4m3 bound"


@pytest.mark.parametrize("m,n,k", [(1, 256, 512), (300, 640, 1024), (128, 384, 7168), (77, 208, 256)])
def test_dense_e4m3_out_is_the_cast_of_the_bf16_out(m: int, n: int, k: int) -> None:
    gen = _gen(m + n)
    a = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda", generator=gen))
    b = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda", generator=gen))
    config = {**TILE, "block_n": 128}
    bf16 = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemmgen.fp8_gemm_nt(a, b, bf16, config=config)
    q, s = _poisoned((m, n))
    gemmgen.fp8_gemm_nt(a, b, q, out_scales=s, config=config)
    torch.cuda.synchronize()
    _same_cast(q, s, bf16, torch.arange(m, device="cuda"))
    _within_fp8(q, s, dequantize_a(*a) @ dequantize_b(*b).t())


def test_a_nan_row_gets_a_nan_scale_and_zeros() -> None:
    """A NaN in A's scales makes its row of D NaN: the cast helper's rule (NaN scale, zero values) holds."""
    m, n, k = 64, 256, 256
    gen = _gen(5)
    qa, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda", generator=gen))
    sa[7, 1] = float("nan")
    b = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda", generator=gen))
    bf16 = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    gemmgen.fp8_gemm_nt((qa, sa), b, bf16, config={**TILE, "block_n": 128})
    q, s = _poisoned((m, n))
    gemmgen.fp8_gemm_nt((qa, sa), b, q, out_scales=s, config={**TILE, "block_n": 128})
    torch.cuda.synchronize()
    assert torch.isnan(s[7]).all() and (q[7].view(torch.uint8) == 0).all()
    _same_cast(q, s, bf16, torch.arange(m, device="cuda"))


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float8_e4m3fn])
@pytest.mark.parametrize("m,inter,k", [(256, 256, 1024), (77, 384, 512)])
def test_dense_swiglu_matches_float64(out_dtype: torch.dtype, m: int, inter: int, k: int) -> None:
    gen = _gen(m + inter)
    a = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda", generator=gen))
    gate, up = (torch.randn(inter, k, device="cuda", generator=gen) for _ in range(2))
    b = gemmgen.per_block_cast_to_fp8(interleave_gate_up(gate, up))
    ref = _swiglu64(dequantize_a(*a) @ dequantize_b(*b).t())
    bf16 = torch.full((m, inter), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemmgen.fp8_gemm_nt(a, b, bf16, swiglu=True, config=TILE)
    torch.cuda.synchronize()
    assert gemmgen.calc_diff(bf16, ref) < 1e-5
    assert torch.allclose(bf16.double(), ref, rtol=2 ** -7, atol=1e-3 * ref.abs().max().item())
    if out_dtype is torch.float8_e4m3fn:
        q, s = _poisoned((m, inter))
        gemmgen.fp8_gemm_nt(a, b, q, out_scales=s, swiglu=True, config=TILE)
        torch.cuda.synchronize()
        _same_cast(q, s, bf16, torch.arange(m, device="cuda"))
        _within_fp8(q, s, ref)


@pytest.mark.parametrize("swiglu", [False, True])
def test_contiguous_fused_leaves_padding_rows_and_empty_experts_alone(swiglu: bool) -> None:
    counts = [130, 0, 1, 255]  # an empty expert, a one-row expert, partial tiles
    layout = gemmgen.contiguous_layout(counts, device="cuda")
    g, n, k = len(counts), 512, 1024
    gen = _gen(11)
    a = gemmgen.per_token_cast_to_fp8(layout.scatter(torch.randn(sum(counts), k, device="cuda", generator=gen)))
    w = torch.randn(g, n, k, device="cuda", generator=gen)
    b = gemmgen.per_block_cast_to_fp8(w)
    n_out = n // 2 if swiglu else n
    bf16 = torch.full((layout.m_total, n_out), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemmgen.m_grouped_fp8_gemm_nt_contiguous(a, b, bf16, layout.m_indices, swiglu=swiglu, config=TILE)
    q, s = _poisoned((layout.m_total, n_out))
    gemmgen.m_grouped_fp8_gemm_nt_contiguous(a, b, q, layout.m_indices, out_scales=s, swiglu=swiglu, config=TILE)
    torch.cuda.synchronize()
    valid = layout.m_indices >= 0
    _same_cast(q, s, bf16, valid)
    assert (q[~valid].view(torch.uint8) == POISON).all() and torch.isnan(s[~valid]).all()
    wq = dequantize_b(*b)
    ref = torch.zeros(layout.m_total, n, dtype=torch.float64, device="cuda")
    for e in range(g):
        rows = layout.m_indices == e
        ref[rows] = dequantize_a(*a)[rows] @ wq[e].t()
    ref = _swiglu64(ref) if swiglu else ref
    _within_fp8(q[valid], s[valid], ref[valid])


@pytest.mark.parametrize("swiglu", [False, True])
def test_masked_fused_leaves_rows_past_masked_m_alone(swiglu: bool) -> None:
    g, m_max, n, k = 4, 192, 512, 512
    gen = _gen(13)
    a = gemmgen.per_token_cast_to_fp8(torch.randn(g, m_max, k, device="cuda", generator=gen))
    b = gemmgen.per_block_cast_to_fp8(torch.randn(g, n, k, device="cuda", generator=gen))
    masked_m = torch.tensor([0, 1, 130, 192], dtype=torch.int32, device="cuda")
    n_out = n // 2 if swiglu else n
    bf16 = torch.full((g, m_max, n_out), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemmgen.m_grouped_fp8_gemm_nt_masked(a, b, bf16, masked_m, 64, swiglu=swiglu, config=TILE)
    q, s = _poisoned((g, m_max, n_out))
    gemmgen.m_grouped_fp8_gemm_nt_masked(a, b, q, masked_m, 64, out_scales=s, swiglu=swiglu, config=TILE)
    torch.cuda.synchronize()
    valid = torch.arange(m_max, device="cuda")[None, :] < masked_m[:, None]
    _same_cast(q, s, bf16, valid)
    assert (q[~valid].view(torch.uint8) == POISON).all() and torch.isnan(s[~valid]).all()
    ref = torch.einsum("gmk,gnk->gmn", dequantize_a(*a), dequantize_b(*b))
    ref = _swiglu64(ref) if swiglu else ref
    _within_fp8(q[valid], s[valid], ref[valid])


def test_the_e4m3_out_feeds_the_next_gemm_without_a_copy() -> None:
    """The fused output pair is the next FP8 GEMM's A as it stands (scales in the TMA layout)."""
    m, n, k, n2 = 256, 512, 512, 256
    gen = _gen(17)
    a = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda", generator=gen))
    b = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda", generator=gen))
    b2 = gemmgen.per_block_cast_to_fp8(torch.randn(n2, n, device="cuda", generator=gen))
    q, s = _poisoned((m, n))
    gemmgen.fp8_gemm_nt(a, b, q, out_scales=s)
    assert gemmgen.quant.is_tma_aligned_scales(s)
    out = torch.empty(m, n2, device="cuda", dtype=torch.bfloat16)
    gemmgen.fp8_gemm_nt((q, s), b2, out)
    torch.cuda.synchronize()
    assert gemmgen.calc_diff(out, dequantize_a(q, s) @ dequantize_b(*b2).t()) < 1e-5
