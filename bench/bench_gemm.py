"""Benchmark gemmgen's FP8 GEMM against cuBLASLt's block-scaled FP8 (torch scaled_mm) on TARGETS.md's shapes.

Method (../shared/TARGETS.md): kernel TFLOPS from torch.profiler CUDA kernel durations, 30 calls after 5
warm-ups, a 256 MB buffer zeroed before every call so L2 is cold; per-call TFLOPS from triton's do_bench median
of one Python call. Writes JSON and a markdown table.

    PYTHONPATH=. python bench/bench_gemm.py --out bench/results/run.json [--shapes 4096x7168x16384 ...]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from shapes import BENCH_SHAPES  # noqa: E402

import gemmgen  # noqa: E402
from gemmgen.quant import calc_diff  # noqa: E402

WARMUP, ITERS = 5, 30
FLUSH = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda") if torch.cuda.is_available() else None


def kernel_seconds(fn, exclude=("elementwise", "fill", "Fill")) -> tuple[float, list[str]]:
    """Mean summed CUDA-kernel time per call of `fn` (flush kernels excluded), and the kernel names seen."""
    for _ in range(WARMUP):
        FLUSH.zero_()
        fn()
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(ITERS):
            FLUSH.zero_()
            fn()
        torch.cuda.synchronize()
    total, names = 0.0, set()
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA and not any(x in ev.name for x in exclude):
            total += ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
            names.add(ev.name[:80])
    return total / ITERS * 1e-6, sorted(names)


def per_call_seconds(fn) -> float:
    from triton.testing import do_bench

    return do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e-3


def host_us_per_call(fn, calls: int = 300) -> float:
    """Wall time per call of back-to-back calls, no sync inside: for a kernel shorter than the launch path this
    is the launcher's CPU cost per call (else the kernel time)."""
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def cublas_blockwise(a, sa, b, sb):
    """torch's block-scaled FP8 (cuBLASLt) with the scale layouts it accepts; None if unavailable."""
    from torch.nn.functional import ScalingType, scaled_mm

    # scaled_mm takes B as b.t() [K, N], so its 128x128 scales are [K/128, N/128] (its error message says so);
    # SA is [M, K/128] M-major (stride 1 along M), the layout cuBLASLt reads.
    sa_mmajor = sa.t().contiguous().t()
    sbt = sb.t()
    candidates = [(sa_mmajor, sbt), (sa_mmajor, sbt.contiguous()), (sa.contiguous(), sbt), (sa.contiguous(),
                                                                                           sbt.contiguous())]
    for s_a, s_b in candidates:
        try:
            fn = lambda s_a=s_a, s_b=s_b: scaled_mm(a, b.t(), s_a, ScalingType.BlockWise1x128, s_b,  # noqa: E731
                                                      ScalingType.BlockWise128x128, output_dtype=torch.bfloat16)
            fn()
            return fn
        except Exception as exc:  # noqa: BLE001 - try the next layout
            err = exc
    print(f"  cuBLASLt block-scaled unavailable: {type(err).__name__}: {str(err)[:200]}")
    return None


def bench_shape(m: int, n: int, k: int) -> dict:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    b, sb = gemmgen.per_block_cast_to_fp8(w)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    t0 = time.perf_counter()
    kern = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0))
    build_s = time.perf_counter() - t0
    ours = lambda: gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)  # noqa: E731
    ours()
    ref = x.double() @ w.double().t()
    row = {"m": m, "n": n, "k": k, "kernel": kern.name, "build_s": round(build_s, 3),
           "calc_diff": calc_diff(out, ref)}
    flops = 2 * m * n * k
    ks, names = kernel_seconds(ours)
    row.update(gemmgen_kernel_us=ks * 1e6, gemmgen_tflops=flops / ks / 1e12, gemmgen_kernels=names,
               gemmgen_call_tflops=flops / per_call_seconds(ours) / 1e12,
               gemmgen_back_to_back_us=host_us_per_call(ours))
    cub = cublas_blockwise(a, sa, b, sb)
    if cub is not None:
        ks, names = kernel_seconds(cub)
        row.update(cublas_kernel_us=ks * 1e6, cublas_tflops=flops / ks / 1e12, cublas_kernels=names,
                   cublas_call_tflops=flops / per_call_seconds(cub) / 1e12, cublas_calc_diff=calc_diff(cub(), ref),
                   cublas_back_to_back_us=host_us_per_call(cub), cublas_vs_gemmgen=calc_diff(cub(), out))
        row["ratio_vs_cublas"] = row["gemmgen_tflops"] / row["cublas_tflops"]
    return row


def markdown(rows: list[dict]) -> str:
    head = ("| M | N | K | gemmgen TFLOPS | (per call) | us/call back-to-back | cuBLASLt 1x128/128x128 | (per call) "
            "| ratio | calc_diff | config |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
    lines = []
    for r in rows:
        cfg = r["kernel"].split("_m", 1)[-1]
        lines.append(f"| {r['m']} | {r['n']} | {r['k']} | {r['gemmgen_tflops']:.0f} | {r['gemmgen_call_tflops']:.0f} | "
                     f"{r['gemmgen_back_to_back_us']:.1f} | {r.get('cublas_tflops', float('nan')):.0f} | "
                     f"{r.get('cublas_call_tflops', float('nan')):.0f} | "
                     f"{r.get('ratio_vs_cublas', float('nan')):.2f} | {r['calc_diff']:.1e} | m{cfg} |")
    ratios = [r["ratio_vs_cublas"] for r in rows if "ratio_vs_cublas" in r]
    geo = torch.tensor(ratios).log().mean().exp().item() if ratios else float("nan")
    return head + "\n".join(lines) + f"\n\nGeometric mean of gemmgen / cuBLASLt block-scaled: {geo:.3f}\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", nargs="*", default=None, help="MxNxK ...")
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes] if args.shapes else BENCH_SHAPES
    rows = []
    for m, n, k in shapes:
        row = bench_shape(m, n, k)
        print(f"{m}x{n}x{k}: gemmgen {row['gemmgen_tflops']:.0f} TFLOPS, cuBLASLt {row.get('cublas_tflops', 0):.0f}",
              flush=True)
        rows.append(row)
    env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "python": platform.python_version(),
           "gemmgen": gemmgen.__version__, "date": time.strftime("%Y-%m-%d %H:%M:%S"), "method": __doc__}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"env": env, "rows": rows}, indent=2))
    table = markdown(rows)
    args.out.with_suffix(".md").write_text(f"# gemmgen vs cuBLASLt, {env['gpu']}, {env['date']}\n\n{table}")
    print(table)


if __name__ == "__main__":
    main()
