"""Per-launch kernel times of one bench grouped case, this tree against an earlier one, interleaved: for a kernel
whose bench time moves between passes while its peers' do not (masked 1 x 1024 x 4096 x 7168 took 46.0, 56.0 and
55.5 us in three passes; bench/NOTES.md v0.19), whether single launches are bimodal and whether the earlier tree's
are too. L2 is flushed before each launch, as in the bench.

    PYTHONPATH=. python bench/masked_modes.py --before .devrun/m8 --out modes.json [--case masked,1,1024,4096,7168]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_gemm  # noqa: E402
from common import env_info, profiled_kernels  # noqa: E402

import gemmgen  # noqa: E402


def launches_us(fn, calls: int) -> list[float]:
    """Each launch's kernel time (us), L2 flushed before each."""
    return [us for _, us in profiled_kernels(fn, calls)]


def before_call(before, case: bench_gemm.GroupedCase):
    """The earlier tree's kernel on the case's inputs, into an output of its own."""
    ops, out = ((case.a, case.sa), (case.b, case.sb)), torch.empty_like(case.out)
    if case.layout == "masked":
        return lambda: before.m_grouped_fp8_gemm_nt_masked(*ops, out, case.grouped_layout, case.expected)
    return lambda: before.m_grouped_fp8_gemm_nt_contiguous(*ops, out, case.grouped_layout)


def dense_calls(before, m: int, n: int, k: int) -> tuple[dict, str, int]:
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda", dtype=torch.bfloat16))
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda", dtype=torch.bfloat16))
    outs = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    fns = {"before": lambda: before.fp8_gemm_nt((a, sa), (b, sb), outs[0]),
           "after": lambda: gemmgen.fp8_gemm_nt((a, sa), (b, sb), outs[1])}
    return fns, gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0)).name, m


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=Path, required=True, help="folder holding the gemmgen_before package")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--case", action="append", default=None,
                    help="layout,groups,expected,N,K or dense,M,N,K (repeatable)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--calls", type=int, default=30)
    args = ap.parse_args()
    for text in args.case or []:  # checked before anything is built
        if not re.fullmatch(r"dense(,\d+){3}|(masked|contiguous)(,\d+){4}", text):
            ap.error(f"--case {text!r}: expected dense,M,N,K or masked|contiguous,groups,expected,N,K")
    sys.path.insert(0, str(args.before.resolve()))
    if not (args.before / "gemmgen_before").is_dir():
        ap.error(f"--before {args.before}: expected a folder holding gemmgen_before")
    import gemmgen_before  # type: ignore[import-not-found]

    results = []
    for text in args.case or ["masked,1,1024,4096,7168", "masked,1,1024,7168,2048"]:
        layout, *dims = text.split(",")
        if layout == "dense":  # dense,M,N,K: the bench's dense inputs
            fns, name, valid = dense_calls(gemmgen_before, *(int(v) for v in dims))
        else:
            case = bench_gemm.grouped_case(layout, *(int(v) for v in dims))
            fns, name, valid = {"before": before_call(gemmgen_before, case), "after": case.call}, \
                case.kernel_name(), sum(case.sizes)
        for fn in fns.values():
            fn()
        times: dict[str, list[float]] = {"before": [], "after": []}
        for r in range(args.rounds):
            for version in (("before", "after") if r % 2 == 0 else ("after", "before")):
                times[version] += launches_us(fns[version], args.calls)
        row = {"case": text, "valid_m": valid, "kernel": name, "us": times}
        results.append(row)
        for version, ts in times.items():
            q = statistics.quantiles(ts, n=10)
            print(f"{text} {version}: {len(ts)} launches, min {min(ts):.1f} p10 {q[0]:.1f} median "
                  f"{statistics.median(ts):.1f} p90 {q[-1]:.1f} max {max(ts):.1f} us", flush=True)
    args.out.write_text(json.dumps({"env": env_info(__doc__ or ""), "rows": results}, indent=1))


if __name__ == "__main__":
    main()
