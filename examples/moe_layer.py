"""The DeepSeek-V3 routed-expert FFN on gemmgen: dispatch -> gate+up GEMM with SwiGLU and FP8 output fused in its
epilogue -> down GEMM -> combine, for prefill (contiguous layout) and decode (masked layout, one CUDA graph).

    PYTHONPATH=. python examples/moe_layer.py [--tokens 4096] [--decode-tokens 128] [--experts 256]

Checks both forms against a bf16 torch reference of the same FP8 weights (calc_diff) and against the same layer
unfused (the plain GEMM with bf16 output, torch SiLU * up, a torch per-token cast), and prints one JSON line per form
with the times of both (CUDA events over 20 calls; bench/bench_moe.py times them with the bench's method and adds
DeepGEMM's grouped GEMMs as a peer).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

import torch
import torch.nn.functional as F

import gemmgen
from gemmgen.moe import combine, dispatch, interleave_gate_up
from gemmgen.quant import dequantize_b

HIDDEN, INTER, TOPK = 7168, 2048, 8  # DeepSeek-V3: hidden size, expert intermediate size, experts per token


@dataclass
class Experts:
    """FP8 expert weights with 128x128 scales: gate+up interleaved in 128-row blocks (the fused epilogue's B) and
    stacked (the unfused chain's [gate; up]), and down."""

    w13: tuple[torch.Tensor, torch.Tensor]  # [E, 2 I, H] interleaved
    w13_stacked: tuple[torch.Tensor, torch.Tensor]  # [E, 2 I, H]: gate rows, then up rows
    w2: tuple[torch.Tensor, torch.Tensor]  # [E, H, I]

    @property
    def count(self) -> int:
        return self.w2[0].shape[0]


def make_experts(num: int, seed: int = 0) -> Experts:
    """Random FP8 experts, quantized one expert at a time (a float copy of all 256 would not fit)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    parts: dict[str, list[torch.Tensor]] = {k: [] for k in ("q13", "s13", "q13s", "s13s", "q2", "s2")}
    for _ in range(num):
        gate, up = (torch.randn(INTER, HIDDEN, device="cuda", generator=gen) * 0.05 for _ in range(2))
        for name, w in (("13", interleave_gate_up(gate, up)), ("13s", torch.cat([gate, up])),
                        ("2", torch.randn(HIDDEN, INTER, device="cuda", generator=gen) * 0.05)):
            q, s = gemmgen.per_block_cast_to_fp8(w)
            parts["q" + name].append(q)
            parts["s" + name].append(s)
    stack = {k: torch.stack(v) for k, v in parts.items()}
    return Experts((stack["q13"], stack["s13"]), (stack["q13s"], stack["s13s"]), (stack["q2"], stack["s2"]))


def lean_cast(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The unfused chain's per-token cast: torch ops as DeepGEMM's test utility writes them (amax per 128 columns,
    x * 448 / amax), scales put in the TMA layout the next GEMM loads."""
    blocks = x.unflatten(-1, (-1, 128)).float()
    amax = blocks.abs().amax(-1).clamp(min=1e-4)
    q = (blocks * (448.0 / amax.unsqueeze(-1))).to(torch.float8_e4m3fn).flatten(-2)
    return q, gemmgen.tma_aligned_scales(amax / 448.0)


def gemmgen_grouped(d, a: tuple, b: tuple, out: torch.Tensor, expected_m: int) -> None:
    """The plain grouped GEMM of the dispatched layout (the unfused chain's; bench/bench_moe.py swaps in DeepGEMM's)."""
    if d.layout == "contiguous":
        gemmgen.m_grouped_fp8_gemm_nt_contiguous(a, b, out, d.m_indices)
    else:
        gemmgen.m_grouped_fp8_gemm_nt_masked(a, b, out, d.masked_m, expected_m)


def _gate_up(d, experts: Experts, fused: bool, expected_m: int, grouped) -> tuple[torch.Tensor, torch.Tensor]:
    """The gate+up GEMM and SwiGLU: fused in the epilogue (FP8 out with its scales), or the plain GEMM (bf16 out)
    then torch SiLU(gate) * up and the per-token cast."""
    rows = d.a[0].shape[:-1]
    if fused:
        h, hs = gemmgen.empty_per_token_fp8(*rows, INTER, device="cuda")
        if d.layout == "contiguous":
            gemmgen.m_grouped_fp8_gemm_nt_contiguous(d.a, experts.w13, h, d.m_indices, out_scales=hs, swiglu=True)
        else:
            gemmgen.m_grouped_fp8_gemm_nt_masked(d.a, experts.w13, h, d.masked_m, expected_m, out_scales=hs,
                                                 swiglu=True)
        return h, hs
    h = torch.empty(*rows, 2 * INTER, device="cuda", dtype=torch.bfloat16)
    grouped(d, d.a, experts.w13_stacked, h, expected_m)
    return lean_cast(F.silu(h[..., :INTER]) * h[..., INTER:])


def layer(x: torch.Tensor, ids: torch.Tensor, weights: torch.Tensor, experts: Experts, *, fused: bool = True,
          layout: str = "contiguous", max_m: int | None = None, grouped=gemmgen_grouped) -> torch.Tensor:
    """The routed experts' output [T, HIDDEN] bf16 for tokens x [T, HIDDEN] routed to ids [T, TOPK] with weights.
    `grouped` runs the unfused chain's GEMMs (fused=False); the fused form is gemmgen's own."""
    d = dispatch(x, ids, experts.count, layout=layout, max_m=max_m)
    expected_m = max(1, x.shape[0] * TOPK // experts.count)
    h = _gate_up(d, experts, fused, expected_m, grouped)
    y = torch.empty(*h[0].shape[:-1], HIDDEN, device="cuda", dtype=torch.bfloat16)
    (gemmgen_grouped if fused else grouped)(d, h, experts.w2, y, expected_m)
    return combine(y, d.row_map, weights)


def reference(x: torch.Tensor, ids: torch.Tensor, weights: torch.Tensor, experts: Experts) -> torch.Tensor:
    """bf16 torch of the same (dequantized) weights, expert by expert, summed in fp32."""
    out = torch.zeros(x.shape[0], HIDDEN, device="cuda", dtype=torch.float32)
    for e in range(experts.count):
        tok, slot = (ids == e).nonzero(as_tuple=True)
        if tok.numel() == 0:
            continue
        w13 = dequantize_b(experts.w13_stacked[0][e], experts.w13_stacked[1][e]).to(torch.bfloat16)
        w2 = dequantize_b(experts.w2[0][e], experts.w2[1][e]).to(torch.bfloat16)
        h = x[tok] @ w13.t()
        y = (F.silu(h[:, :INTER]) * h[:, INTER:]) @ w2.t()
        out.index_add_(0, tok, y.float() * weights[tok, slot, None].float())
    return out.to(torch.bfloat16)


def routing(tokens: int, num: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Tokens and a top-8 routing with distinct experts per token (random scores' top-k), softmax weights."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(tokens, HIDDEN, device="cuda", generator=gen).to(torch.bfloat16)
    scores = torch.randn(tokens, num, device="cuda", generator=gen)
    top = scores.topk(TOPK, dim=-1)
    return x, top.indices, torch.softmax(top.values, dim=-1)


def event_ms(fn, calls: int = 20) -> float:
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


def decode_graph(x: torch.Tensor, ids: torch.Tensor, weights: torch.Tensor, experts: Experts, fused: bool,
                 max_m: int, grouped=gemmgen_grouped) -> tuple[torch.cuda.CUDAGraph, dict[str, torch.Tensor]]:
    """The decode layer captured once; replays read whatever x, ids and weights hold then (static buffers)."""
    static = {"x": x.clone(), "ids": ids.clone(), "w": weights.clone()}
    run = lambda: layer(static["x"], static["ids"], static["w"], experts, fused=fused,  # noqa: E731
                        layout="masked", max_m=max_m, grouped=grouped)
    run()  # kernels built and loaded outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static["out"] = run()
    return graph, static


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--decode-tokens", type=int, default=128)
    ap.add_argument("--experts", type=int, default=256)
    args = ap.parse_args()
    experts = make_experts(args.experts)
    x, ids, w = routing(args.tokens, args.experts, 1)
    ref = reference(x, ids, w, experts)
    rows = {}
    for fused in (True, False):
        out = layer(x, ids, w, experts, fused=fused)
        rows["fused" if fused else "unfused"] = (gemmgen.calc_diff(out, ref),
                                                 event_ms(lambda f=fused: layer(x, ids, w, experts, fused=f)))
    print(json.dumps({"form": "prefill", "tokens": args.tokens, **{k: {"calc_diff": d, "ms": t}
                                                                    for k, (d, t) in rows.items()}}))
    max_m = args.decode_tokens  # capacity per expert: a token's experts are distinct, so no copy is ever dropped
    rows = {}
    for fused in (True, False):
        graph, static = decode_graph(*routing(args.decode_tokens, args.experts, 2), experts, fused, max_m)
        diffs = []
        for seed in (3, 4, 5):  # three routings replayed through the one graph
            xs, ids_s, ws = routing(args.decode_tokens, args.experts, seed)
            static["x"].copy_(xs)
            static["ids"].copy_(ids_s)
            static["w"].copy_(ws)
            graph.replay()
            torch.cuda.synchronize()
            diffs.append(gemmgen.calc_diff(static["out"], reference(xs, ids_s, ws, experts)))
        rows["fused" if fused else "unfused"] = (max(diffs), event_ms(graph.replay))
    print(json.dumps({"form": "decode (CUDA graph)", "tokens": args.decode_tokens,
                      **{k: {"calc_diff": d, "ms": t} for k, (d, t) in rows.items()}}))


if __name__ == "__main__":
    main()
