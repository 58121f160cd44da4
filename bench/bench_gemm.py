"""Benchmark gemmgen against its peers in one run, into the results file (docs/BENCHMARKING.md):
dense prefill shapes against cuBLASLt's block-scaled FP8, and the MoE grouped cases against a per-expert cuBLASLt
loop (group sizes known on the host). Every kernel a call launches is counted.

    PYTHONPATH=. python bench/bench_gemm.py --out bench/results/DATE-COMMIT/bench.json [--sections dense grouped]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from common import call_seconds, env_info, geomean, kernel_seconds, row, write  # noqa: E402
from shapes import BENCH_SHAPES  # noqa: E402

import gemmgen  # noqa: E402
from gemmgen.quant import calc_diff  # noqa: E402

# The grouped cases of docs/BENCHMARKING.md (DeepGEMM's test set): (layout, groups, expected rows per group, N, K);
# masked M_max = 4096.
GROUPED_CASES = [(layout, g, m, n, k) for layout, g, m in (("contiguous", 4, 8192), ("contiguous", 8, 4096),
                                                           ("contiguous", 32, 256), ("masked", 1, 1024),
                                                           ("masked", 2, 512), ("masked", 4, 256))
                 for n, k in ((4096, 7168), (7168, 2048))]
MASKED_M_MAX = 4096
SEED = 2026


def cublas_blockwise(a, sa, b, sb):
    """torch's block-scaled FP8 (cuBLASLt) with a layout it accepts, as a callable; None if unavailable."""
    from torch.nn.functional import ScalingType, scaled_mm

    # scaled_mm takes B as b.t() [K, N], so its 128x128 scales are [K/128, N/128]; SA is [M, K/128] M-major.
    # An expert's row count is arbitrary: the M-major SA with its stride rounded up to 4 floats is tried first.
    sa_mmajor, sbt = sa.t().contiguous().t(), sb.t()
    candidates = ((gemmgen.tma_aligned_scales(sa), sbt), (sa_mmajor, sbt), (sa_mmajor, sbt.contiguous()),
                  (sa.contiguous(), sbt.contiguous()))
    for s_a, s_b in candidates:
        def fn(s_a=s_a, s_b=s_b):
            return scaled_mm(a, b.t(), s_a, ScalingType.BlockWise1x128, s_b, ScalingType.BlockWise128x128,
                             output_dtype=torch.bfloat16)
        try:
            fn()
            return fn
        except Exception as exc:  # noqa: BLE001 - try the next layout
            err = exc
    print(f"  cuBLASLt block-scaled unavailable: {type(err).__name__}: {str(err)[:160]}")
    return None


def dense_rows(m: int, n: int, k: int) -> list[dict]:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    b, sb = gemmgen.per_block_cast_to_fp8(w)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    ref = x.double() @ w.double().t()
    flops, nbytes = 2 * m * n * k, m * k + n * k + 2 * m * n + 4 * (sa.numel() + sb.numel())
    name = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0)).name
    impls = {"gemmgen": (lambda: gemmgen.fp8_gemm_nt((a, sa), (b, sb), out), name)}
    cub = cublas_blockwise(a, sa, b, sb)
    if cub is not None:
        impls["cublaslt_blockwise"] = (cub, "torch.nn.functional.scaled_mm BlockWise1x128/128x128")
    rows = []
    for impl, (fn, config) in impls.items():
        result = fn()
        secs, kernels = kernel_seconds(fn)
        rows.append(row("dense", impl, m, n, k, secs, flops, nbytes, call_us=call_seconds(fn) * 1e6,
                        calc_diff=calc_diff(result if impl != "gemmgen" else out, ref), config=config,
                        kernels=kernels))
    return rows


def _sizes(groups: int, expected: int, gen: torch.Generator, cap: int | None = None) -> list[int]:
    sizes = [int(expected * (0.7 + 0.6 * torch.rand(1, generator=gen).item())) for _ in range(groups)]
    return [min(s, cap) for s in sizes] if cap else sizes


@dataclass
class GroupedCase:
    """One grouped case's inputs, prepared once: `call(config)` runs gemmgen on them; `segments` are the
    (group, rows) of valid rows, `rows_of(t, g, s)` cuts them out of A-shaped tensors."""

    layout: str
    groups: int
    expected: int
    sizes: list[int]
    x: torch.Tensor
    w: torch.Tensor
    a: torch.Tensor
    sa: torch.Tensor
    b: torch.Tensor
    sb: torch.Tensor
    out: torch.Tensor
    m_rows: int  # rows of A (M_total, or G * M_max)
    grouped_layout: torch.Tensor  # m_indices or masked_m
    segments: list[tuple[int, slice]]
    padding: int = 1  # rows per expert rounded up to this for cuBLASLt (the bench's loop; 1 = none)

    def rows_of(self, t: torch.Tensor, g: int, s: slice) -> torch.Tensor:
        return t[s] if self.layout == "contiguous" else t[g][s]

    def call(self, config: dict | None = None) -> torch.Tensor:
        operands = ((self.a, self.sa), (self.b, self.sb), self.out, self.grouped_layout)
        if self.layout == "contiguous":
            return gemmgen.m_grouped_fp8_gemm_nt_contiguous(*operands, config=config)
        return gemmgen.m_grouped_fp8_gemm_nt_masked(*operands, self.expected, config=config)

    def kernel_name(self, config: dict | None = None) -> str:
        kinds = gemmgen.GemmKind
        kind = kinds.M_GROUPED_CONTIGUOUS if self.layout == "contiguous" else kinds.M_GROUPED_MASKED
        m = self.m_rows if self.layout == "contiguous" else self.expected
        return gemmgen.get_kernel(m, self.b.shape[1], self.b.shape[2], gemmgen.api.device_target(0), config,
                                  kind=kind, groups=self.groups).name


def grouped_case(layout: str, groups: int, expected: int, n: int, k: int) -> GroupedCase:
    gen = torch.Generator().manual_seed(SEED + groups * 7 + n)
    sizes = _sizes(groups, expected, gen, MASKED_M_MAX if layout == "masked" else None)
    w = torch.randn(groups, n, k, device="cuda", dtype=torch.bfloat16)
    b, sb = gemmgen.per_block_cast_to_fp8(w)
    if layout == "contiguous":
        lay = gemmgen.contiguous_layout(sizes, device="cuda")
        x = lay.scatter(torch.randn(sum(sizes), k, device="cuda", dtype=torch.bfloat16))
        out = torch.empty(lay.m_total, n, device="cuda", dtype=torch.bfloat16)
        segments = [(g, slice(o, o + c)) for g, (c, o) in enumerate(zip(sizes, lay.offsets, strict=True)) if c]
        m_rows, grouped_layout = lay.m_total, lay.m_indices
    else:
        x = torch.randn(groups, MASKED_M_MAX, k, device="cuda", dtype=torch.bfloat16)
        out = torch.empty(groups, MASKED_M_MAX, n, device="cuda", dtype=torch.bfloat16)
        segments = [(g, slice(0, c)) for g, c in enumerate(sizes) if c]
        m_rows, grouped_layout = groups * MASKED_M_MAX, torch.tensor(sizes, dtype=torch.int32, device="cuda")
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    return GroupedCase(layout, groups, expected, sizes, x, w, a, sa, b, sb, out, m_rows, grouped_layout, segments)


def _expert_call(case: GroupedCase, g: int, s: slice):
    """One expert's cuBLASLt block-scaled call, inputs prepared once: what a loop with host-known sizes launches.
    cuBLASLt may refuse a row count (e.g. its M-major scale layout): then the expert's rows are rounded up to 4, 16
    or 128 (zero rows of the aligned layout, or unused rows of M_max); the FLOPs still count valid rows only."""
    for multiple in (1, 4, 16, 128):
        rows = slice(s.start, s.start + -(-(s.stop - s.start) // multiple) * multiple)
        with contextlib.redirect_stdout(io.StringIO()):
            call = cublas_blockwise(case.rows_of(case.a, g, rows), case.rows_of(case.sa, g, rows), case.b[g],
                                    case.sb[g])
        if call is not None:
            case.padding = max(case.padding, multiple)
            return call
    print(f"  cuBLASLt block-scaled refused expert {g} ({s.stop - s.start} rows) at every padding")
    return None


def grouped_rows(layout: str, groups: int, expected: int, n: int, k: int) -> list[dict]:
    case = grouped_case(layout, groups, expected, n, k)
    valid = sum(case.sizes)
    flops = 2 * valid * n * k
    nbytes = valid * k + groups * n * k + 2 * valid * n + 4 * (valid * -(-k // 128) + case.sb.numel())
    case.call()
    calls = [_expert_call(case, g, s) for g, s in case.segments]
    loop = (lambda: [c() for c in calls]) if all(calls) else None

    def diff(results) -> float:
        got = torch.cat([r[:s.stop - s.start].double() for r, (_, s) in zip(results, case.segments, strict=True)])
        ref = torch.cat([case.rows_of(case.x, g, s).double() @ case.w[g].double().t() for g, s in case.segments])
        return calc_diff(got, ref)

    common = {"layout": layout, "groups": groups, "expected_m": expected, "valid_m": valid,
              "group_sizes": case.sizes}
    secs, kernels = kernel_seconds(case.call)
    out_rows = [row("grouped", "gemmgen", case.m_rows, n, k, secs, flops, nbytes,
                    call_us=call_seconds(case.call) * 1e6, config=case.kernel_name(), kernels=kernels,
                    calc_diff=diff([case.rows_of(case.out, g, s) for g, s in case.segments]), **common)]
    if loop is not None:
        secs, kernels = kernel_seconds(loop)
        out_rows.append(row("grouped", "cublaslt_loop", case.m_rows, n, k, secs, flops, nbytes,
                            call_us=call_seconds(loop) * 1e6, calc_diff=diff(loop()),
                            config=f"{len(calls)} x scaled_mm, rows rounded up to {case.padding}", kernels=kernels,
                            **common))
    return out_rows


def table(rows: list[dict]) -> str:
    lines = []
    dense = [r for r in rows if r["kind"] == "dense"]
    if dense:
        lines += ["## Dense (kernel TFLOPS, cold L2)", "",
                  "| M | N | K | gemmgen | cuBLASLt block | ratio | gemmgen call us | calc_diff | config |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        ratios = []
        for r in (r for r in dense if r["impl"] == "gemmgen"):
            peer = next((p for p in dense if p["impl"] != "gemmgen" and (p["m"], p["n"], p["k"]) ==
                         (r["m"], r["n"], r["k"])), None)
            ratio = r["tflops"] / peer["tflops"] if peer else float("nan")
            ratios += [ratio] if peer else []
            lines.append(f"| {r['m']} | {r['n']} | {r['k']} | {r['tflops']:.0f} | "
                         f"{peer['tflops'] if peer else float('nan'):.0f} | {ratio:.2f} | {r['call_us']:.1f} | "
                         f"{r['calc_diff']:.1e} | {r['config']} |")
        lines += ["", f"Geometric mean gemmgen / cuBLASLt block-scaled: {geomean(ratios):.3f}", ""]
    grouped = [r for r in rows if r["kind"] == "grouped"]
    if grouped:
        lines += ["## MoE grouped (kernel TFLOPS on valid rows, cold L2)", "",
                  "| layout | groups x expected | valid rows | N | K | gemmgen | cuBLASLt loop | ratio | gemmgen us "
                  "| calc_diff | config |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in (r for r in grouped if r["impl"] == "gemmgen"):
            peer = next((p for p in grouped if p["impl"] != "gemmgen" and (p["layout"], p["groups"], p["n"], p["k"])
                         == (r["layout"], r["groups"], r["n"], r["k"])), None)
            ratio = r["tflops"] / peer["tflops"] if peer else float("nan")
            lines.append(f"| {r['layout']} | {r['groups']} x {r['expected_m']} | {r['valid_m']} | {r['n']} | "
                         f"{r['k']} | {r['tflops']:.0f} | {peer['tflops'] if peer else float('nan'):.0f} | "
                         f"{ratio:.2f} | {r['kernel_us']:.1f} | {r['calc_diff']:.1e} | {r['config']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sections", nargs="+", default=["dense", "grouped"], choices=["dense", "grouped"])
    ap.add_argument("--shapes", nargs="*", default=None, help="dense MxNxK ... (default: tests/shapes.py BENCH_SHAPES)")
    args = ap.parse_args()
    rows: list[dict] = []
    if "grouped" in args.sections:
        for case in GROUPED_CASES:
            rows += grouped_rows(*case)
            print(f"{case}: " + ", ".join(f"{r['impl']} {r['tflops']:.0f}" for r in rows[-2:]), flush=True)
    if "dense" in args.sections:
        shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes] if args.shapes else BENCH_SHAPES
        for m, n, k in shapes:
            rows += dense_rows(m, n, k)
            print(f"{m}x{n}x{k}: " + ", ".join(f"{r['impl']} {r['tflops']:.0f}" for r in rows[-2:]), flush=True)
    text = table(rows)
    write(args.out, env_info(__doc__ or ""), rows, text)
    print(text)


if __name__ == "__main__":
    main()
