"""GPU tier: strided operands and outputs in every public call, through the tensor maps' row strides (no copy).

Each case runs once on contiguous tensors, checked against float64, then on the same values as views of wider
buffers: A and B with a padded K (the `[:, :K]` view a quantizer padding K to 128 hands back), out a slice of a wider
output at a column offset (the left or right half of a concatenated projection), a masked layout's A and out with
padded rows, a grouped B that is half of a fused [G, 2N, K] weight. The strided call must give the contiguous call's
bits and write nothing of its buffer outside the view (the buffer is NaN-poisoned first)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from shapes import FP8_FP32_OUT_REL

import gemmgen
from gemmgen.quant import dequantize_a, dequantize_b

pytestmark = pytest.mark.gpu
NAN = float("nan")


@pytest.fixture(autouse=True)
def _cache(settings, monkeypatch) -> None:
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(settings.cache_dir))


def _inside(x: torch.Tensor, cols: int = 0, rows: int = 0, offset: int = 0, fill: float = 0.0):
    """x's values in a view of a wider buffer: `cols` more columns (the view starting `offset` columns in) and, for
    a 3-D x, `rows` more rows per group. Returns (view, buffer, the buffer's elements the view covers)."""
    shape = list(x.shape)
    shape[-1] += cols
    if x.dim() == 3:
        shape[1] += rows
    buf = torch.full(shape, fill, device=x.device, dtype=torch.float32).to(x.dtype)
    covered = torch.zeros(shape, device=x.device, dtype=torch.bool)
    view = buf[..., : x.shape[-2], offset:offset + x.shape[-1]]
    covered[..., : x.shape[-2], offset:offset + x.shape[-1]] = True
    view.copy_(x)
    return view, buf, covered


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32}[t.element_size()])


def _close(out: torch.Tensor, ref: torch.Tensor, what: str, fp32: bool = False) -> None:
    valid = ~ref.isnan()
    assert not out[valid].isnan().any(), f"{what}: outputs unwritten (NaN poison left)"
    err = (out.double() - ref).abs()[valid]
    scale = ref[valid].abs().max() if valid.any() else 0.0
    bound = (FP8_FP32_OUT_REL * scale + 2**-22 * ref[valid].abs()) if fp32 else (
        2**-8 * ref[valid].abs() + 2**-11 * scale)
    assert (err <= bound).all(), f"{what}: {int((err > bound).sum())} elements out of bound"


def _check(call: Callable[..., object], ops: dict[str, torch.Tensor], out: torch.Tensor, ref: torch.Tensor,
           strided: dict[str, dict[str, int] | torch.Tensor], what: str, fp32: bool = False) -> None:
    """Run `call(**ops, out=...)` on contiguous tensors (checked against `ref`), then with the operands named in
    `strided` as views of wider buffers (`_inside` arguments, or a strided tensor of the same values) and out too
    (key "out"): the same bits, and nothing of out's buffer written outside the view."""
    want = out.clone()
    call(**ops, out=want)
    torch.cuda.synchronize()
    _close(want, ref, what, fp32)
    views = {}
    for name, x in ops.items():
        spec = strided.get(name)
        views[name] = x if spec is None else spec if isinstance(spec, torch.Tensor) else _inside(x, **spec)[0]
        assert spec is None or not views[name].is_contiguous(), f"{what}: {name} was meant to be strided"
    spec = strided.get("out", {})
    assert isinstance(spec, dict)
    got, buf, covered = _inside(out, **spec, fill=NAN)
    got.copy_(out)  # the same start (NaN poison, or accumulate's C) in the view
    poisoned = buf.clone()
    call(**views, out=got)
    torch.cuda.synchronize()
    assert torch.equal(_bits(got), _bits(want)), f"{what}: {int((_bits(got) != _bits(want)).sum())} outputs differ"
    assert torch.equal(_bits(buf)[~covered], _bits(poisoned)[~covered]), f"{what}: written outside the view of out"


def _fp8_a(m: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    return gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))


def _fp8_b(n: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    return gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))


PADS = {"a": {"cols": 64}, "b": {"cols": 128}, "out": {"cols": 64, "offset": 64}}  # K 576 -> row stride 640, ...


@pytest.mark.parametrize("m,n,k,config", [(129, 576, 576, None), (8, 2112, 7168, None), (300, 1024, 2048, None),
                                          (200, 1024, 2048, {"block_m": 128, "block_n": 64, "k_splits": 2,
                                                             "split_global": 1}),
                                          (8, 2112, 7168, {"swap_ab": 1, "k_splits": 4, "split_global": 1})],
                         ids=["padded-k-576", "decode-split-k", "prefill", "split-global-pinned", "swapped-pinned"])
def test_dense_fp8(m: int, n: int, k: int, config) -> None:
    (a, sa), (b, sb) = _fp8_a(m, k), _fp8_b(n, k)
    ref = dequantize_a(a, sa) @ dequantize_b(b, sb).t()

    def call(a, b, out):
        gemmgen.fp8_gemm_nt((a, sa), (b, sb), out, config=config)

    out = torch.full((m, n), NAN, device="cuda", dtype=torch.bfloat16)
    _check(call, {"a": a, "b": b}, out, ref, PADS, "fp8_gemm_nt")
    _check(call, {"a": a, "b": b}, out, ref, {"out": {"cols": n, "offset": 0}}, "fp8_gemm_nt, left half of out")


def test_dense_fp8_fp32_accumulate_and_bf16() -> None:
    m, n, k = 200, 512, 1040
    (a, sa), (b, sb) = _fp8_a(m, k), _fp8_b(n, k)
    c = torch.randn(m, n, device="cuda")
    ref = c.double() + dequantize_a(a, sa) @ dequantize_b(b, sb).t()

    def acc(a, b, out):
        gemmgen.fp8_gemm_nt((a, sa), (b, sb), out, accumulate=True)

    _check(acc, {"a": a, "b": b}, c, ref, {"a": {"cols": 16}, "b": {"cols": 48}, "out": {"cols": 4, "offset": 4}},
           "fp8_gemm_nt accumulate", fp32=True)
    x, w = torch.randn(m, k, device="cuda", dtype=torch.bfloat16), torch.randn(n, k, device="cuda",
                                                                            dtype=torch.bfloat16)

    def bf16(a, b, out):
        gemmgen.bf16_gemm_nt(a, b, out)

    out = torch.full((m, n), NAN, device="cuda", dtype=torch.bfloat16)
    _check(bf16, {"a": x, "b": w}, out, x.double() @ w.double().t(), {"a": {"cols": 8}, "b": {"cols": 24},
                                                                      "out": {"cols": 8, "offset": 8}}, "bf16_gemm_nt")


def test_wgrad_and_k_grouped() -> None:
    m, n, k = 192, 256, 1024
    (a, sa), (b, sb) = _fp8_a(m, k), gemmgen.per_token_cast_to_fp8(torch.randn(n, k, device="cuda"))
    c = torch.randn(m, n, device="cuda")
    ref = c.double() + dequantize_a(a, sa) @ dequantize_a(b, sb).t()

    def wgrad(a, b, out):
        gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb), out)

    _check(wgrad, {"a": a, "b": b}, c, ref, PADS, "fp8_gemm_nt_wgrad", fp32=True)
    ks = [256, 0, 384]
    (a, sa), (b, sb) = _fp8_a(m, sum(ks)), gemmgen.per_token_cast_to_fp8(torch.randn(n, sum(ks), device="cuda"))
    start = torch.randn(len(ks), m, n, device="cuda")
    ref = start.double().clone()
    k0 = 0
    for g, kg in enumerate(ks):
        cols = slice(k0, k0 + kg)
        ref[g] += dequantize_a(a[:, cols], sa[:, k0 // 128:(k0 + kg) // 128]) @ dequantize_a(
            b[:, cols], sb[:, k0 // 128:(k0 + kg) // 128]).t()
        k0 += kg

    def k_grouped(a, b, out):
        gemmgen.k_grouped_fp8_gemm_nt_wgrad((a, sa), (b, sb), out, ks)

    _check(k_grouped, {"a": a, "b": b}, start, ref, {"a": {"cols": 128}, "b": {"cols": 16},
                                                     "out": {"cols": 8, "rows": 64, "offset": 8}},
           "k_grouped_fp8_gemm_nt_wgrad", fp32=True)


def test_contiguous_fp8_and_bf16() -> None:
    n, k, counts = 256, 576, [100, 0, 129]
    layout = gemmgen.contiguous_layout(counts, device="cuda")
    x = layout.scatter(torch.randn(sum(counts), k, device="cuda"))
    w = torch.randn(len(counts), n, k, device="cuda")
    (a, sa), (b, sb) = gemmgen.per_token_cast_to_fp8(x), gemmgen.per_block_cast_to_fp8(w)
    idx = layout.m_indices.long()
    ref = torch.full((layout.m_total, n), NAN, device="cuda", dtype=torch.float64)
    xd, xb = dequantize_a(a, sa), x.to(torch.bfloat16)
    wb = w.to(torch.bfloat16)
    ref_bf16 = ref.clone()
    for g in range(len(counts)):
        rows = idx == g
        ref[rows] = xd[rows] @ dequantize_b(b[g], sb[g]).t()
        ref_bf16[rows] = xb[rows].double() @ wb[g].double().t()

    def fp8(a, b, out):
        gemmgen.m_grouped_fp8_gemm_nt_contiguous((a, sa), (b, sb), out, layout.m_indices)

    out = torch.full((layout.m_total, n), NAN, device="cuda", dtype=torch.bfloat16)
    _check(fp8, {"a": a, "b": b}, out, ref, PADS, "m_grouped_fp8_gemm_nt_contiguous")

    def bf16(a, b, out):
        gemmgen.m_grouped_bf16_gemm_nt_contiguous(a, b, out, layout.m_indices)

    _check(bf16, {"a": xb, "b": wb}, out, ref_bf16, PADS, "m_grouped_bf16_gemm_nt_contiguous")


def test_masked_fp8_and_bf16_padded_rows_and_half_of_a_fused_weight() -> None:
    groups, m_max, n, k = 3, 96, 256, 576
    masked = torch.tensor([96, 0, 33], dtype=torch.int32, device="cuda")
    x = torch.randn(groups, m_max, k, device="cuda")
    fused = torch.randn(groups, 2 * n, k, device="cuda")  # gate and up stacked: the call reads the gate half
    (a, sa), (bf, sbf) = gemmgen.per_token_cast_to_fp8(x), gemmgen.per_block_cast_to_fp8(fused)
    b, sb = bf[:, :n], sbf[:, : n // 128].contiguous()
    xb, wb = x.to(torch.bfloat16), fused.to(torch.bfloat16)[:, :n]
    ref = torch.full((groups, m_max, n), NAN, device="cuda", dtype=torch.float64)
    ref_bf16 = ref.clone()
    for g, rows in enumerate(masked.tolist()):
        ref[g, :rows] = dequantize_a(a[g, :rows], sa[g, :rows]) @ dequantize_b(b[g], sb[g]).t()
        ref_bf16[g, :rows] = xb[g, :rows].double() @ wb[g].double().t()
    pads = {"a": {"cols": 64, "rows": 64}, "out": {"cols": 64, "rows": 32, "offset": 64}}

    def fp8(a, b, out):
        gemmgen.m_grouped_fp8_gemm_nt_masked((a, sa), (b, sb), out, masked, expected_m=48)

    out = torch.full((groups, m_max, n), NAN, device="cuda", dtype=torch.bfloat16)
    assert b.stride(0) == 2 * n * k  # the half of the fused weight: groups 2N rows apart
    _check(fp8, {"a": a, "b": b.contiguous()}, out, ref, {**pads, "b": b}, "m_grouped_fp8_gemm_nt_masked, gate half")
    _check(fp8, {"a": a, "b": b.contiguous()}, out, ref, {**pads, "b": {"cols": 16}},
           "m_grouped_fp8_gemm_nt_masked, padded B")

    def bf16(a, b, out):
        gemmgen.m_grouped_bf16_gemm_nt_masked(a, b, out, masked, expected_m=48)

    _check(bf16, {"a": xb, "b": wb.contiguous()}, out, ref_bf16, {**pads, "b": wb}, "m_grouped_bf16_gemm_nt_masked")
