"""Kernel time of fp8_gemm_nt_wgrad (accumulate=False) for a few shapes, with SA and SB in their TMA layouts and
gathered, one line per (shape, layouts): for A/B runs of two trees (PYTHONPATH picks the gemmgen under test).

    PYTHONPATH=. python bench/time_wgrad.py 100x2048x4096 4096x7168x4096 [--out times.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gemm import parse_shape  # noqa: E402
from common import kernel_seconds  # noqa: E402
from stress_wgrad import scale_layouts  # noqa: E402

import gemmgen


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("shapes", type=parse_shape, nargs="+", help="MxNxK")
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = []
    for m, n, k in args.shapes:
        a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
        b, sb = gemmgen.per_token_cast_to_fp8(torch.randn(n, k, device="cuda"))
        out = torch.empty(m, n, device="cuda", dtype=torch.float32)
        pairings = scale_layouts(sa, sb)
        for layouts in ("tma", "sa_gathered", "both_gathered"):
            s_a, s_b = pairings[layouts]
            def call(a=a, s_a=s_a, b=b, s_b=s_b, out=out):
                return gemmgen.fp8_gemm_nt_wgrad((a, s_a), (b, s_b), out, accumulate=False)
            secs, names = kernel_seconds(call)
            rows.append({"shape": f"{m}x{n}x{k}", "layouts": layouts, "us": secs * 1e6,
                         "tflops": 2 * m * n * k / secs / 1e12, "kernels": names})
            print(f"{m}x{n}x{k} {layouts}: {secs * 1e6:.2f} us {rows[-1]['tflops']:.0f} TFLOPS {names}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows}, indent=1))


if __name__ == "__main__":
    main()
