"""Back-to-back GEMMs, as a decode step runs them: L layers of one shape, each layer with its own weights (together
>= 256 MB, five times the L2, so every layer streams its B from DRAM as in a model), one activation, the L calls
captured in a CUDA graph and replayed. Per-layer time = replay time / L (CUDA events around the replay, L2 flushed
before it, interleaved rounds, median). gemmgen runs without and with programmatic dependent launch
(`gemmgen.pdl()`: each kernel's set-up overlaps the previous kernel's tail); the peers run the same chain in the
same graph form: cuBLASLt per-tensor FP8 (torch._scaled_mm) and, with --deepgemm DIR, DeepGEMM. The bench's
isolated kernel time of one call (bench/common.kernel_seconds) is printed beside it: what a chain saves is the gap
between kernels and the set-up, which an isolated call cannot show. The peers launch without PDL (torch and DeepGEMM do
not offer it); cuBLASLt per-tensor is a cheaper recipe (no per-block scales); TB/s counts the block-scaled problem's
bytes for every implementation.

    PYTHONPATH=. python bench/pdl_chain.py --out pdl_chain.json [--shape 1x7168x2048 ...] [--deepgemm DIR]
    (pdl_chain.md beside it; `python bench/pdl_chain.py --report pdl_chain.json` remakes it, no GPU)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_gemm  # type: ignore[import-not-found]  # noqa: E402
import deepgemm_peer  # type: ignore[import-not-found]  # noqa: E402
from common import env_info, kernel_seconds  # type: ignore[import-not-found]  # noqa: E402

import gemmgen  # noqa: E402

# The decode N x K pairs of the bench (section 2) at M = 1 and 32, and two 64-row prefill shapes.
SHAPES = ("1x2112x7168", "1x24576x1536", "1x32768x512", "1x7168x16384", "1x4096x7168", "1x7168x2048", "1x576x7168",
          "32x2112x7168", "32x24576x1536", "32x4096x7168", "32x7168x2048", "64x7168x2048", "64x4096x7168")
CHAIN_BYTES = 256 << 20  # the layers' weights together: five times the H200's 50 MB L2
MIN_LAYERS, MAX_LAYERS = 8, 64


def parse_shape(text: str) -> tuple[int, int, int]:
    """bench_gemm's MxNxK, and N a multiple of 8 (gemmgen's TMA rows), refused here rather than mid-run."""
    m, n, k = bench_gemm.parse_shape(text)
    if n % 8:
        raise argparse.ArgumentTypeError(f"--shape {text!r}: expected N a multiple of 8, got {n}")
    return m, n, k


def graph_of(calls: list[Callable[[], object]]) -> torch.cuda.CUDAGraph:
    """The calls captured in order into one graph (run once eagerly first: kernels built, handles created)."""
    for fn in calls:
        fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        for fn in calls:
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    return graph


def replay_seconds(graph: torch.cuda.CUDAGraph, flush: torch.Tensor) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    flush.zero_()  # the L2 holds none of the first layer's weights
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e-3


def chain(m: int, n: int, k: int, rounds: int, flush: torch.Tensor) -> dict:
    layer_bytes = bench_gemm.dense_bytes(m, n, k)  # the block-scaled problem's bytes, for every impl
    layers = max(MIN_LAYERS, min(MAX_LAYERS, -(-CHAIN_BYTES // (n * k))))
    x = torch.randn(m, k, device="cuda")
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    at, sx = gemmgen.per_tensor_cast_to_fp8(x)
    weights, tensorwise = [], []
    for _ in range(layers):
        w = torch.randn(n, k, device="cuda")
        weights.append(gemmgen.per_block_cast_to_fp8(w))
        tensorwise.append(gemmgen.per_tensor_cast_to_fp8(w))
        del w
    outs = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(layers)]

    def gemmgen_calls(pdl: bool) -> list[Callable[[], object]]:
        def one(b: tuple[torch.Tensor, torch.Tensor], out: torch.Tensor) -> Callable[[], object]:
            def fn() -> object:
                with gemmgen.pdl(pdl):
                    return gemmgen.fp8_gemm_nt((a, sa), b, out)
            return fn
        return [one(b, out) for b, out in zip(weights, outs, strict=True)]

    impls: dict[str, list[Callable[[], object]]] = {
        "gemmgen": gemmgen_calls(False),
        "gemmgen_pdl": gemmgen_calls(True),
        "cublaslt_tensorwise": [
            (lambda bt=bt, sw=sw: torch._scaled_mm(at, bt.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16,
                                                  use_fast_accum=True)) for bt, sw in tensorwise],
    }
    if deepgemm_peer.loaded() is not None:
        impls["deepgemm"] = [deepgemm_peer.dense(a, sa, b, sb, out) for (b, sb), out in zip(weights, outs, strict=True)]
    graphs, errors = {}, {}
    for name, calls in impls.items():
        try:
            graphs[name] = graph_of(calls)
        except Exception as exc:  # noqa: BLE001 - a peer that cannot be captured is reported, the run goes on
            errors[name] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    # Correctness of the chain: every layer's output of the PDL graph equals the plain graph's, bit for bit.
    same = None
    if "gemmgen" in graphs and "gemmgen_pdl" in graphs:
        graphs["gemmgen"].replay()
        torch.cuda.synchronize()
        plain = [o.clone() for o in outs]
        for o in outs:
            o.fill_(float("nan"))
        graphs["gemmgen_pdl"].replay()
        torch.cuda.synchronize()
        same = all(torch.equal(p, o) for p, o in zip(plain, outs, strict=True))
    times: dict[str, list[float]] = {name: [] for name in graphs}
    for r in range(rounds):
        names = list(graphs)
        for name in names[r % len(names):] + names[:r % len(names)]:  # rotated: no impl always first
            times[name].append(replay_seconds(graphs[name], flush) / layers)
    isolated = {"gemmgen": kernel_seconds(impls["gemmgen"][0])[0]}
    per_layer = {name: statistics.median(v) for name, v in times.items()}
    return {"m": m, "n": n, "k": k, "layers": layers, "layer_bytes": layer_bytes, "pdl_bitwise_equal": same,
            "per_layer_us": {name: v * 1e6 for name, v in per_layer.items()},
            "per_layer_tbps": {name: layer_bytes / v / 1e12 for name, v in per_layer.items()},
            "isolated_kernel_us": {name: v * 1e6 for name, v in isolated.items()},
            "all_us": {name: [v * 1e6 for v in vs] for name, vs in times.items()}, "errors": errors}


def markdown(rows: list[dict], env: dict) -> str:
    """The results as a table (pdl_chain.md beside the JSON): per-layer us per implementation, PDL's gain, gemmgen
    with PDL in TB/s, the isolated kernel time, whether PDL's outputs equal the plain graph's."""
    impls = [name for name in ("gemmgen", "gemmgen_pdl", "cublaslt_tensorwise", "deepgemm")
             if any(name in r["per_layer_us"] for r in rows)]
    head = {"gemmgen": "gemmgen", "gemmgen_pdl": "gemmgen PDL", "cublaslt_tensorwise": "cuBLASLt tensor",
            "deepgemm": "DeepGEMM"}
    lines = [f"# Back-to-back layers ({env.get('gpu', 'GPU')}, gemmgen {env.get('gemmgen_commit', '?')})", "",
             "L layers of one shape, each with its own weights (>= 256 MB together), one activation, captured in a "
             "CUDA graph and replayed; us per layer = replay / L (L2 flushed before the replay), median of the "
             "rounds. The peers launch without PDL. TB/s: the block-scaled problem's bytes / gemmgen PDL's time.", "",
             "| M | N | K | layers | " + " | ".join(f"{head[i]} us" for i in impls)
             + " | PDL gain us | gemmgen PDL TB/s | isolated gemmgen us | PDL bitwise equal | errors |",
             "|---:|---:|---:|---:|" + "---:|" * len(impls) + "---:|---:|---:|---|---|"]
    for r in rows:
        us = r["per_layer_us"]
        cells = [f"{us[i]:.1f}" if i in us else "-" for i in impls]
        gain = f"{us['gemmgen'] - us['gemmgen_pdl']:.1f}" if {"gemmgen", "gemmgen_pdl"} <= us.keys() else "-"
        tbps = f"{r['per_layer_tbps']['gemmgen_pdl']:.2f}" if "gemmgen_pdl" in r["per_layer_tbps"] else "-"
        iso = r["isolated_kernel_us"].get("gemmgen")
        errors = "; ".join(f"{k}: {v}" for k, v in r["errors"].items()) or ""
        lines.append(f"| {r['m']} | {r['n']} | {r['k']} | {r['layers']} | " + " | ".join(cells)
                     + f" | {gain} | {tbps} | {'-' if iso is None else f'{iso:.1f}'} | {r['pdl_bitwise_equal']} | "
                     + f"{errors} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("pdl_chain.json"))
    ap.add_argument("--shape", type=parse_shape, action="append", help="MxNxK (repeatable; default: SHAPES)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--deepgemm", type=Path, help="DeepGEMM's tree (bench/deepgemm_peer.py)")
    ap.add_argument("--report", type=Path, help="remake the .md beside this results file and stop (no GPU)")
    args = ap.parse_args()
    if args.report is not None:
        data = json.loads(args.report.read_text())
        args.report.with_suffix(".md").write_text(markdown(data["rows"], data["env"]))
        return
    if args.rounds < 1:
        ap.error(f"--rounds: expected >= 1, got {args.rounds}")
    if args.deepgemm is not None:
        deepgemm_peer.load(args.deepgemm)
    shapes = args.shape or [parse_shape(s) for s in SHAPES]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows = []
    for m, n, k in shapes:
        row = chain(m, n, k, args.rounds, flush)
        rows.append(row)
        us = row["per_layer_us"]
        print(f"{m}x{n}x{k} x{row['layers']}: " + ", ".join(f"{name} {v:.1f}" for name, v in us.items())
              + f" us/layer; isolated gemmgen {row['isolated_kernel_us']['gemmgen']:.1f}; pdl bitwise "
              f"{row['pdl_bitwise_equal']}" + (f"; errors {row['errors']}" if row["errors"] else ""), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    env = env_info("CUDA graph of L layers, events around the replay, L2 flushed before it; "
                   "per-layer time = replay / L")
    args.out.write_text(json.dumps({"env": env, "rows": rows}, indent=1))
    args.out.with_suffix(".md").write_text(markdown(rows, env))


if __name__ == "__main__":
    main()
