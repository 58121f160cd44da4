"""Repeat the weight-gradient GEMM on the same inputs with its scales in every layout pairing and count the runs
whose output differs bit for bit from the first (a race shows as an intermittent difference; bench/NOTES.md v0.6,
"Found, not fixed"). For each differing run: how many elements, which rows and tile columns, and the largest
difference. Fresh inputs per round.

    PYTHONPATH=. python bench/stress_wgrad.py 100x2048x4096 --rounds 20 --repeats 10 [--out stress.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gemm import parse_shape  # noqa: E402

import gemmgen
from gemmgen.ir import DType, ScaleRecipe
from gemmgen.quant import is_tma_aligned_scales

PAIRINGS = ("tma", "sb_gathered", "sa_gathered", "both_gathered")


def _run(a, sa, b, sb, m: int, n: int) -> torch.Tensor:
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float32)
    gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb), out, accumulate=False)
    return out


def _where(diff: torch.Tensor, block_n: int) -> dict:
    rows, cols = diff.nonzero(as_tuple=True)
    return {"elements": int(diff.sum()), "rows": sorted(set(rows.tolist()))[:16],
            "n_tiles": sorted({c // block_n for c in cols.tolist()})[:16]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", type=parse_shape, help="MxNxK")
    ap.add_argument("--rounds", type=int, default=20, help="fresh inputs")
    ap.add_argument("--repeats", type=int, default=10, help="runs of each pairing per round")
    ap.add_argument("--out")
    args = ap.parse_args()
    m, n, k = args.shape
    kernel = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), out_dtype=DType.FP32,
                                scales=ScaleRecipe.A1x128_B1x128)
    block_n = kernel.config.block_n
    report: dict = {"shape": "x".join(map(str, args.shape)), "kernel": kernel.name, "runs": 0, "differing": []}
    for r in range(args.rounds):
        a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
        b, sb = gemmgen.per_token_cast_to_fp8(torch.randn(n, k, device="cuda"))
        assert is_tma_aligned_scales(sa) and is_tma_aligned_scales(sb)
        layouts = {"tma": (sa, sb), "sb_gathered": (sa, sb.contiguous()), "sa_gathered": (sa.contiguous(), sb),
                   "both_gathered": (sa.contiguous(), sb.contiguous())}
        first = _run(a, sa, b, sb, m, n)
        for pairing in PAIRINGS:
            s_a, s_b = layouts[pairing]
            for i in range(args.repeats):
                out = _run(a, s_a, b, s_b, m, n)
                report["runs"] += 1
                diff = out.view(torch.int32) != first.view(torch.int32)
                if diff.any():
                    where = _where(diff, block_n)
                    report["differing"].append({"round": r, "pairing": pairing, "repeat": i, **where,
                                                "max_abs": float((out - first).abs().nan_to_num(float("inf")).max())})
                    print(f"round {r} {pairing} #{i}: {where}", flush=True)
    torch.cuda.synchronize()
    print(f"{report['shape']} {kernel.name}: {len(report['differing'])} of {report['runs']} runs differ from "
          "the round's first", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
