"""gemmgen.moe: dispatch into the grouped GEMMs' layouts and combine back, against float64 references (CPU), and the
whole layer on the GPU (dispatch -> grouped GEMM -> combine; the masked form under a CUDA graph)."""

from __future__ import annotations

import pytest
import torch

import gemmgen
from gemmgen.moe import combine, dispatch
from gemmgen.quant import dequantize_a

T, K, N, G, TOPK = 37, 256, 64, 5, 3


def _routing(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(T, K, generator=gen)
    ids = torch.stack([torch.randperm(G - 1, generator=gen)[:TOPK] for _ in range(T)])  # expert G-1 gets nothing
    weights = torch.rand(T, TOPK, generator=gen)
    return x, ids, weights


def test_contiguous_dispatch_puts_every_copy_in_its_experts_aligned_segment() -> None:
    x, ids, _w = _routing()
    d = dispatch(x, ids, G)
    q, s = d.a
    assert q.dtype == torch.float8_e4m3fn and q.shape[0] % 128 == 0 and d.m_indices is not None
    xq, xs = gemmgen.per_token_cast_to_fp8(x)
    for t in range(T):
        for j in range(TOPK):
            row = int(d.row_map[t, j])
            assert int(d.m_indices[row]) == int(ids[t, j])
            assert torch.equal(q[row].view(torch.uint8), xq[t].view(torch.uint8)) and torch.equal(s[row], xs[t])
    used = torch.zeros(q.shape[0], dtype=torch.bool)
    used[d.row_map.flatten()] = True
    assert (d.m_indices[~used] == -1).all() and (q[~used].float() == 0).all()  # padding: zero rows, index -1
    starts = [int((d.m_indices == g).nonzero()[0]) for g in range(G - 1)]
    assert all(start % 128 == 0 for start in starts) and not (d.m_indices == G - 1).any()


@pytest.mark.parametrize("layout", ["contiguous", "masked"])
def test_combine_sums_the_weighted_expert_outputs(layout: str) -> None:
    """A per-expert linear map stands in for the GEMM (float64 on the dequantised A): combine's output is the
    weighted sum of each token's experts, to bf16 rounding."""
    x, ids, weights = _routing(1)
    w = torch.randn(G, N, K, dtype=torch.float64)
    d = dispatch(x, ids, G, layout=layout, max_m=T if layout == "masked" else None)
    a = dequantize_a(*d.a)
    if layout == "contiguous":
        y = torch.zeros(a.shape[0], N, dtype=torch.float64)
        for r in range(a.shape[0]):
            if int(d.m_indices[r]) >= 0:
                y[r] = a[r] @ w[int(d.m_indices[r])].t()
    else:
        y = torch.einsum("gmk,gnk->gmn", a, w)
    out = combine(y.to(torch.bfloat16), d.row_map, weights)
    xa = dequantize_a(*gemmgen.per_token_cast_to_fp8(x))
    ref = torch.stack([sum(weights[t, j].double() * (xa[t] @ w[int(ids[t, j])].t()) for j in range(TOPK))
                       for t in range(T)])
    assert out.dtype == torch.bfloat16 and out.shape == (T, N)
    assert ((out.double() - ref).abs() <= 2**-7 * ref.abs().max()).all()


def test_masked_dispatch_keeps_max_m_per_expert_in_token_order() -> None:
    x, ids, weights = _routing(2)
    counts = torch.bincount(ids.flatten(), minlength=G)
    cap = int(counts.max()) - 2  # the busiest experts overflow
    d = dispatch(x, ids, G, layout="masked", max_m=cap)
    q, _s = d.a
    assert q.shape == (G, cap, K) and d.masked_m is not None
    assert d.masked_m.tolist() == counts.clamp(max=cap).tolist()
    assert int(d.dropped) == int((counts - cap).clamp(min=0).sum()) == int((d.row_map < 0).sum())
    for g in range(G):  # an expert keeps its first `cap` copies in token order
        mine = [(t, j) for t in range(T) for j in range(TOPK) if int(ids[t, j]) == g]
        for n, (t, j) in enumerate(mine):
            assert int(d.row_map[t, j]) == (g * cap + n if n < cap else -1)
    out = combine(torch.zeros(G, cap, N), d.row_map, weights)
    assert out.shape == (T, N) and (out == 0).all()


@pytest.mark.parametrize("call,words", [
    (lambda x, ids: dispatch(x, ids, G, layout="dense"), "layout: expected one of"),
    (lambda x, ids: dispatch(x, ids + G, G), "topk_ids: expected expert ids in"),
    (lambda x, ids: dispatch(x, ids, G, layout="masked"), "max_m:"),
    (lambda x, ids: dispatch(x, ids, G, max_m=8), "max_m: only the masked"),
    (lambda x, ids: dispatch(x, ids.float(), G), "topk_ids: expected an int32/int64"),
    (lambda x, ids: dispatch(x[:3], ids, G), "topk_ids: expected"),
    (lambda x, ids: dispatch(x, ids, 0), "num_experts"),
    (lambda x, ids: combine(torch.zeros(4, N), ids.int(), torch.ones(T, TOPK)), "row_map"),
])
def test_bad_arguments_are_named(call, words: str) -> None:
    x, ids, _w = _routing()
    with pytest.raises(ValueError, match=words):
        call(x, ids)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["contiguous", "masked"])
def test_the_layer_on_the_gpu_matches_float64(layout: str) -> None:
    """dispatch -> the grouped GEMM -> combine, against the float64 layer on the same quantised operands; the masked
    form also under CUDA graph capture (no host read inside)."""
    gen = torch.Generator(device="cuda").manual_seed(3)
    t, k, n, g, topk = 200, 512, 256, 8, 2
    x = torch.randn(t, k, device="cuda", generator=gen).to(torch.bfloat16)
    ids = torch.randint(0, g, (t, topk), device="cuda", generator=gen)
    weights = torch.rand(t, topk, device="cuda", generator=gen)
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(g, n, k, device="cuda", generator=gen))
    wq = gemmgen.quant.dequantize_b(b, sb)
    xa = dequantize_a(*gemmgen.per_token_cast_to_fp8(x))
    ref = sum(weights[:, j, None].double() * torch.einsum("tk,tnk->tn", xa, wq[ids[:, j]]) for j in range(topk))

    def layer() -> torch.Tensor:
        d = dispatch(x, ids, g, layout=layout, max_m=t if layout == "masked" else None)
        if layout == "contiguous":
            out = torch.full((d.a[0].shape[0], n), float("nan"), device="cuda", dtype=torch.bfloat16)
            gemmgen.m_grouped_fp8_gemm_nt_contiguous(d.a, (b, sb), out, d.m_indices)
        else:
            out = torch.full((g, t, n), float("nan"), device="cuda", dtype=torch.bfloat16)
            gemmgen.m_grouped_fp8_gemm_nt_masked(d.a, (b, sb), out, d.masked_m, expected_m=t * topk // g)
        return combine(out, d.row_map, weights)

    assert gemmgen.calc_diff(layer(), ref) < 1e-3
    if layout == "masked":
        layer()  # warm: kernels built and loaded outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = layer()
        graph.replay()
        torch.cuda.synchronize()
        assert gemmgen.calc_diff(captured, ref) < 1e-3


def test_masked_dispatch_drops_an_id_outside_the_experts() -> None:
    """No host read in the masked form, so an id outside [0, G) cannot raise there: that copy is dropped and
    counted, the rest land as with valid ids."""
    x, ids, _w = _routing(4)
    bad = ids.clone()
    bad[0, 0], bad[5, 1] = G, -1
    d = dispatch(x, bad, G, layout="masked", max_m=T)
    assert int(d.dropped) == 2 and int(d.row_map[0, 0]) == -1 and int(d.row_map[5, 1]) == -1
    good = dispatch(x, ids, G, layout="masked", max_m=T)
    assert int((d.row_map >= 0).sum()) == T * TOPK - 2 and int(good.dropped) == 0


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_the_row_kernels_match_the_torch_cast_and_a_float64_sum(dtype: torch.dtype) -> None:
    """runtime/rows.py: cast-and-place is per_token_cast_to_fp8 of the source rows bit for bit (zeros for -1, a NaN
    group's NaN scale and zeros); the weighted gather is the float64 sum rounded once to bf16 (dropped rows skipped)."""
    from gemmgen.runtime.rows import cast_rows, combine_rows

    gen = torch.Generator(device="cuda").manual_seed(7)
    t, hidden = 50, 7168 + 8  # a partial last 128-column group
    x = (torch.randn(t, hidden, device="cuda", generator=gen) * 3).to(dtype)
    x[4, 300] = float("nan")
    src = torch.randint(-1, t, (300,), device="cuda", generator=gen)
    q, s = gemmgen.empty_per_token_fp8(3, 100, hidden, device="cuda")
    cast_rows(x, src, q.view(300, hidden), s)
    want_q, want_s = gemmgen.per_token_cast_to_fp8(x[src.clamp(min=0)])
    want_q.view(torch.uint8)[src < 0] = 0  # (fp8 tensors have no masked fill)
    want_s[src < 0] = 0.0
    assert torch.equal(q.view(300, hidden).view(torch.uint8), want_q.view(torch.uint8))
    got_s = s.reshape(300, -1)
    assert torch.equal(torch.isnan(got_s), torch.isnan(want_s))
    assert torch.equal(got_s.nan_to_num(), want_s.nan_to_num())
    y = torch.randn(400, 1024, device="cuda", generator=gen).to(torch.bfloat16)
    rows = torch.randint(-1, 400, (t, 8), device="cuda", generator=gen)
    w = torch.rand(t, 8, device="cuda", generator=gen)
    out = torch.empty(t, 1024, device="cuda", dtype=torch.bfloat16)
    combine_rows(y, rows, w, out)
    ref = (y.double()[rows.clamp(min=0)] * torch.where(rows >= 0, w, 0).double()[..., None]).sum(1)
    assert torch.allclose(out.double(), ref, rtol=2 ** -8, atol=1e-6)


@pytest.mark.gpu
def test_the_decode_layer_graph_replays_three_routings() -> None:
    """examples/moe_layer.py's decode layer (fused gate+up, down, the row kernels) captured once in a CUDA graph and
    replayed with three routings written into its static inputs: each replay matches the bf16 layer of those inputs."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    import moe_layer as ml

    experts = ml.make_experts(16, seed=5)
    graph, static = ml.decode_graph(*ml.routing(32, 16, 0), experts, True, 32)
    for seed in (1, 2, 3):
        x, ids, w = ml.routing(32, 16, seed)
        static["x"].copy_(x)
        static["ids"].copy_(ids)
        static["w"].copy_(w)
        graph.replay()
        torch.cuda.synchronize()
        assert gemmgen.calc_diff(static["out"], ml.reference(x, ids, w, experts)) < 2e-3, seed
