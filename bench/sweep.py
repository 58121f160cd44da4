"""Sweep schedule configs for a few shapes (kernel TFLOPS, cold L2, same method as bench_gemm.py): the data the
config heuristic is tuned from. Illegal configs are skipped by the legality check.

    PYTHONPATH=. python bench/sweep.py --out sweep.json --shapes 4096x2112x7168 128x7168x2048
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import torch
from common import kernel_seconds  # type: ignore[import-not-found]

import gemmgen
from gemmgen.errors import IllegalConfigError
from gemmgen.ir import parse_overrides


def candidates(m: int) -> list[dict[str, int]]:
    bms = [64] if m <= 64 else [64, 128, 256]
    bns = [16, 24, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 192, 256]
    clusters = [1, 2] if m >= 512 else [1]
    return [{"block_m": bm, "block_n": bn, "cluster": c} for bm, bn, c in itertools.product(bms, bns, clusters)]


def _prebuild(args: tuple) -> None:
    m, n, k, target, cfg = args
    try:
        gemmgen.build(gemmgen.GemmProblem(m, n, k), cfg, target)
    except (IllegalConfigError, ValueError):
        pass


def prebuild(shapes: list[tuple[int, int, int]], target: gemmgen.Target) -> None:
    """Compile every candidate into the disk cache in parallel (NVRTC is CPU work), so timing loads cubins."""
    from concurrent.futures import ProcessPoolExecutor

    jobs = [(m, n, k, target, cfg) for m, n, k in shapes for cfg in candidates(m)]
    with ProcessPoolExecutor() as pool:
        list(pool.map(_prebuild, jobs, chunksize=4))


def sweep_shape(m: int, n: int, k: int) -> list[dict]:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    b, sb = gemmgen.per_block_cast_to_fp8(w)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    target = gemmgen.api.device_target(0)
    default = gemmgen.get_kernel(m, n, k, target).name
    rows = []
    for cfg in candidates(m):
        try:
            kern = gemmgen.get_kernel(m, n, k, target, cfg)
        except (IllegalConfigError, ValueError):
            continue
        secs, _ = kernel_seconds(lambda kern=kern: kern(a, sa, b, sb, out))
        rows.append({"m": m, "n": n, "k": k, **cfg, "stages": kern.config.stages, "name": kern.name,
                     "tflops": 2 * m * n * k / secs / 1e12, "is_default": kern.name == default})
    rows.sort(key=lambda r: -r["tflops"])
    return rows


def ab(shape: str, configs: list[str], rounds: int) -> list[dict]:
    """Interleaved A/B: each round times every config once; report the median per config (run-to-run drift
    between rounds hits all configs alike). `shape` is MxNxK (dense) or layout:groups:expected:N:K (an MoE grouped
    case of bench_gemm.py, its valid rows counted)."""
    parsed = [parse_overrides(c.split(",")) if c else {} for c in configs]
    if ":" in shape:
        from bench_gemm import grouped_case  # type: ignore[import-not-found]
        layout, groups, expected, n, k = shape.split(":")
        if layout not in ("contiguous", "masked"):
            raise SystemExit(f"--ab {shape}: expected layout contiguous or masked, got {layout!r}")
        case = grouped_case(layout, int(groups), int(expected), int(n), int(k))
        flops = 2 * sum(case.sizes) * int(n) * int(k)
        names = [case.kernel_name(p or None) for p in parsed]
        calls = [lambda p=p: case.call(p or None) for p in parsed]
    else:
        m, n, k = (int(v) for v in shape.split("x"))
        a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
        b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        target = gemmgen.api.device_target(0)
        kernels = [gemmgen.get_kernel(m, n, k, target, p or None) for p in parsed]
        flops, names = 2 * m * n * k, [kern.name for kern in kernels]
        calls = [lambda kern=kern: kern(a, sa, b, sb, out) for kern in kernels]
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(rounds):
        for i, call in enumerate(calls):
            times[i].append(kernel_seconds(call)[0])
    rows = []
    for cfg, name, ts in zip(configs, names, times, strict=True):
        med = sorted(ts)[len(ts) // 2]
        rows.append({"shape": shape, "config": cfg or "default", "name": name, "median_tflops":
                     flops / med / 1e12, "all_tflops": [flops / t / 1e12 for t in ts]})
        print(f"  {shape} {cfg or 'default':40s} {rows[-1]['median_tflops']:6.0f} TFLOPS "
              f"(min..max {min(rows[-1]['all_tflops']):.0f}..{max(rows[-1]['all_tflops']):.0f})", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", nargs="*", default=[])
    ap.add_argument("--ab", nargs="+", default=None, metavar="SHAPE CFG",
                    help="SHAPE then configs k=v,k=v ('' = default)")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    if args.ab:
        args.out.write_text(json.dumps(ab(args.ab[0], args.ab[1:], args.rounds), indent=1))
        return
    allrows = []
    prebuild([tuple(int(v) for v in s.split("x")) for s in args.shapes], gemmgen.api.device_target(0))
    for s in args.shapes:
        m, n, k = (int(v) for v in s.split("x"))
        rows = sweep_shape(m, n, k)
        allrows += rows
        dflt = next((r for r in rows if r["is_default"]), None)
        print(f"{s}: default {dflt['tflops'] if dflt else float('nan'):.0f} TFLOPS; best:", flush=True)
        for r in rows[:6]:
            print(f"   {r['tflops']:6.0f}  m{r['block_m']} n{r['block_n']} c{r['cluster']} s{r['stages']}")
    args.out.write_text(json.dumps(allrows, indent=1))


if __name__ == "__main__":
    main()
