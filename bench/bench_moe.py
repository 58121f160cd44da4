"""The MoE expert layer, side by side in one run (docs/BENCHMARKING.md's kernel time: every kernel a call launches).

Section "fused": the gate+up grouped GEMM of DeepSeek-V3's experts (N = 2 x 2048, K = 7168) in the contiguous layout
(8 experts x 4096 tokens) and the masked one (8 experts, 256 rows each of M_max 1024):
  plain      the grouped GEMM with bf16 output of the same shape (what the fused epilogue adds to)
  fused      SwiGLU and the e4m3 output with its 1x128 scales in the epilogue (one kernel)
  fused_bf16 SwiGLU in the epilogue, bf16 output
  chain_a    plain + torch SiLU(gate) * up + the per-token cast (examples/moe_layer.lean_cast)
  chain_b    DeepGEMM's grouped GEMM + the same torch ops (with --deepgemm)
Section "layer": dispatch -> gate+up -> down -> combine (examples/moe_layer.py), prefill 4096 tokens (contiguous)
and decode 128 tokens (masked, one CUDA graph replay), 256 experts, top 8: fused, chain_a, chain_b.

    PYTHONPATH=. python bench/bench_moe.py --out results/bench_moe.json [--deepgemm DIR] [--quick]
    python bench/bench_moe.py --chart results/bench_moe.json     (CPU: the table and chart again from a results file)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import deepgemm_peer  # noqa: E402
import moe_layer as ml  # noqa: E402
from common import configure, env_info, error_row, kernel_seconds, row, write_json  # noqa: E402

import gemmgen  # noqa: E402
from gemmgen.moe import Dispatched, interleave_gate_up  # noqa: E402
from gemmgen.quant import dequantize_a, dequantize_b  # noqa: E402

INTER, H = ml.INTER, ml.HIDDEN


def _weights(g: int, seed: int) -> tuple[tuple, tuple]:
    """Gate+up weights of g experts, FP8 with 128x128 scales: interleaved (fused) and stacked (the chains)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    gate, up = (torch.randn(g, INTER, H, device="cuda", generator=gen) for _ in range(2))
    inter = gemmgen.per_block_cast_to_fp8(interleave_gate_up(gate, up))
    stacked = gemmgen.per_block_cast_to_fp8(torch.cat([gate, up], dim=1))
    return inter, stacked


def _dg_grouped(d, a, b, out, expected_m: int) -> None:
    """chain (b)'s GEMMs: DeepGEMM's grouped calls (SA already in its TMA layout: no copy)."""
    fn = (deepgemm_peer.contiguous(*a, *b, out, d.m_indices) if d.layout == "contiguous"
          else deepgemm_peer.masked(*a, *b, out, d.masked_m, expected_m))
    fn()


def fused_section(rows: list[dict]) -> None:
    g = 8
    inter, stacked = _weights(g, 0)
    gen = torch.Generator(device="cuda").manual_seed(1)
    for layout in ("contiguous", "masked"):
        _fused_case(rows, layout, g, inter, stacked, gen)


def _fused_case(rows: list[dict], layout: str, g: int, inter: tuple, stacked: tuple, gen: torch.Generator) -> None:
    if layout == "contiguous":
        layout_obj = gemmgen.contiguous_layout([4096] * g, device="cuda")
        a = gemmgen.per_token_cast_to_fp8(torch.randn(layout_obj.m_total, H, device="cuda", generator=gen))
        rows_shape, sel = (layout_obj.m_total,), layout_obj.m_indices
        d = Dispatched(a, layout, torch.empty(0, 1, dtype=torch.int64), m_indices=sel)
        m_rows, expected = layout_obj.m_total, 4096
    else:
        a = gemmgen.per_token_cast_to_fp8(torch.randn(g, 1024, H, device="cuda", generator=gen))
        sel = torch.full((g,), 256, dtype=torch.int32, device="cuda")
        rows_shape = (g, 1024)
        d = Dispatched(a, layout, torch.empty(0, 1, dtype=torch.int64), masked_m=sel)
        m_rows, expected = g * 256, 256

    def call(b, out, **kw):
        if layout == "contiguous":
            return lambda: gemmgen.m_grouped_fp8_gemm_nt_contiguous(a, b, out, sel, **kw)
        return lambda: gemmgen.m_grouped_fp8_gemm_nt_masked(a, b, out, sel, expected, **kw)

    plain_out = torch.empty(*rows_shape, 2 * INTER, device="cuda", dtype=torch.bfloat16)
    q, s = gemmgen.empty_per_token_fp8(*rows_shape, INTER, device="cuda")
    hb = torch.empty(*rows_shape, INTER, device="cuda", dtype=torch.bfloat16)

    def chain(grouped):
        def fn():
            grouped(d, a, stacked, plain_out, expected)
            return ml.lean_cast(F.silu(plain_out[..., :INTER]) * plain_out[..., INTER:])
        return fn

    impls = {"plain": call(stacked, plain_out), "fused": call(inter, q, out_scales=s, swiglu=True),
             "fused_bf16": call(inter, hb, swiglu=True), "chain_a": chain(ml.gemmgen_grouped)}
    if deepgemm_peer.loaded():
        impls["chain_b"] = chain(_dg_grouped)
    # the SwiGLU output of 512 sampled valid rows, float64 from the same quantized operands: every form is
    # scored on them (a float64 reference of all rows would take a minute)
    valid = (sel >= 0 if layout == "contiguous" else torch.arange(1024, device="cuda")[None] < sel[:, None])
    sample = valid.reshape(-1).nonzero().squeeze(1)
    sample = sample[torch.randperm(sample.numel(), device="cuda", generator=gen)[:512]]
    expert = sel[sample].long() if layout == "contiguous" else sample // 1024
    a_rows = dequantize_a(a[0].reshape(-1, H)[sample], a[1].reshape(-1, a[1].shape[-1])[sample])
    h = torch.zeros(sample.numel(), 2 * INTER, dtype=torch.float64, device="cuda")
    for e in range(g):
        r = expert == e
        h[r] = a_rows[r] @ dequantize_b(stacked[0][e], stacked[1][e]).t()
    ref = F.silu(h[:, :INTER]) * h[:, INTER:]

    def pick(t: torch.Tensor) -> torch.Tensor:
        return t.reshape(-1, t.shape[-1])[sample]

    flops, nbytes = 2 * m_rows * 2 * INTER * H, m_rows * H + g * 2 * INTER * H + m_rows * INTER
    for impl, fn in impls.items():
        try:
            secs, kernels = kernel_seconds(fn)
            res = fn()
            if impl == "plain":
                got = F.silu(pick(plain_out)[:, :INTER].double()) * pick(plain_out)[:, INTER:].double()
            elif impl == "fused_bf16":
                got = pick(hb).double()
            else:
                qq, ss = (q, s) if impl == "fused" else res
                got = dequantize_a(pick(qq), pick(ss))
            diff = gemmgen.calc_diff(got, ref)
            rows.append(row(f"fused_{layout}", impl, m_rows, 2 * INTER, H, secs, flops, nbytes, calc_diff=diff,
                            kernels=kernels, groups=g))
        except Exception as exc:  # noqa: BLE001 - a failing peer is a row, not the end of the run
            rows.append(error_row(f"fused_{layout}", impl, m_rows, 2 * INTER, H, exc, groups=g))
        print(rows[-1], flush=True)


def layer_section(rows: list[dict], experts: int) -> None:
    w = ml.make_experts(experts)
    forms = {"fused": {"fused": True}, "chain_a": {"fused": False}}
    if deepgemm_peer.loaded():
        forms["chain_b"] = {"fused": False, "grouped": _dg_grouped}
    x, ids, wt = ml.routing(4096, experts, 1)
    ref = ml.reference(x, ids, wt, w)
    for impl, kw in forms.items():
        try:
            fn = lambda kw=kw: ml.layer(x, ids, wt, w, **kw)  # noqa: E731
            secs, kernels = kernel_seconds(fn)
            rows.append(row("layer_prefill", impl, 4096, H, H, secs, 0, 0, calc_diff=gemmgen.calc_diff(fn(), ref),
                            kernels=kernels, experts=experts))
        except Exception as exc:  # noqa: BLE001
            rows.append(error_row("layer_prefill", impl, 4096, H, H, exc, experts=experts))
        print(rows[-1], flush=True)
    xd, idsd, wtd = ml.routing(128, experts, 2)
    refd = ml.reference(xd, idsd, wtd, w)
    for impl, kw in forms.items():
        try:
            graph, static = ml.decode_graph(xd, idsd, wtd, w, kw["fused"], 128, kw.get("grouped", ml.gemmgen_grouped))
            secs, kernels = kernel_seconds(graph.replay)
            graph.replay()
            torch.cuda.synchronize()
            rows.append(row("layer_decode_graph", impl, 128, H, H, secs, 0, 0,
                            calc_diff=gemmgen.calc_diff(static["out"], refd), kernels=kernels, experts=experts,
                            event_us=ml.event_ms(graph.replay) * 1e3))
        except Exception as exc:  # noqa: BLE001
            rows.append(error_row("layer_decode_graph", impl, 128, H, H, exc, experts=experts))
        print(rows[-1], flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--chart", type=Path, default=None, metavar="JSON",
                    help="remake the .md and .png of a results file")
    ap.add_argument("--deepgemm", type=Path, default=None, metavar="DIR")
    ap.add_argument("--experts", type=int, default=256)
    ap.add_argument("--sections", default="fused,layer")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.chart is not None:
        done = json.loads(args.chart.read_text())
        args.chart.with_suffix(".md").write_text(markdown(done["env"], done["rows"]))
        chart(done["env"], done["rows"], args.chart.with_suffix(".png"))
        return
    if args.out is None:
        ap.error("--out is required (or --chart JSON)")
    configure(args.quick)
    if args.deepgemm is not None:
        deepgemm_peer.load(args.deepgemm)
    rows: list[dict] = []
    if "fused" in args.sections:
        fused_section(rows)
    if "layer" in args.sections:
        layer_section(rows, args.experts)
    env = env_info("bench_moe: kernel time (profiler, every kernel of a call), L2 flushed")
    write_json(args.out, env, rows)
    args.out.with_suffix(".md").write_text(markdown(env, rows))
    chart(env, rows, args.out.with_suffix(".png"))


def chart(env: dict, rows: list[dict], path: Path) -> bool:
    """One bar group per section, each bar an implementation's kernel time over the section's reference (the plain
    GEMM, or the fused layer): below 1 is faster. False (with a message) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no chart: matplotlib is not installed (pip install -e '.[bench]')")
        return False
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    impls = list(dict.fromkeys(r["impl"] for r in rows))
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / len(impls)
    for j, impl in enumerate(impls):
        values = []
        for kind in kinds:
            mine = {r["impl"]: r["kernel_us"] for r in rows if r["kind"] == kind}
            ref = mine.get("plain" if kind.startswith("fused_") else "fused")
            values.append(mine[impl] / ref if mine.get(impl) and ref else 0.0)
        ax.bar([i + j * width for i in range(len(kinds))], values, width, label=impl)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(kinds))], kinds)
    ax.set_ylabel("kernel time / reference (plain GEMM; fused layer)")
    ax.set_title(f"MoE expert layer, {env['gpu']}, gemmgen {env['gemmgen_commit']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def markdown(env: dict, rows: list[dict]) -> str:
    """The results as tables: each row's kernel time and its ratio to the section's reference (the plain GEMM, or the
    fused layer): above 1 is slower than it."""
    lines = [f"# {env['gpu']}, {env['date']}, gemmgen {env['gemmgen_commit']}", "",
             f"torch {env['torch']}, NVRTC {env['nvrtc']}. {env['method']}.", ""]
    for kind in dict.fromkeys(r["kind"] for r in rows):
        mine = [r for r in rows if r["kind"] == kind]
        ref_impl = "plain" if kind.startswith("fused_") else "fused"
        ref = next((r["kernel_us"] for r in mine if r["impl"] == ref_impl), None)
        lines += [f"## {kind}", "", f"| impl | kernel us | / {ref_impl} | calc_diff | kernels |",
                  "|---|---:|---:|---:|---|"]
        for r in mine:
            us = r["kernel_us"]
            ratio = f"{us / ref:.3f}" if us and ref else "-"
            kernels = sorted(r.get("kernels", []), key=lambda n: not n.startswith(("sm90", "moe_", "void deep_gemm")))
            names = ", ".join(n[:60] for n in kernels[:3]) + (" ..." if len(kernels) > 3 else "")
            lines.append(f"| {r['impl']} | {us:.1f} | {ratio} | {r['calc_diff']:.2e} | {names} |" if us else
                         f"| {r['impl']} | - | - | - | {r.get('error', '')[:120]} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
