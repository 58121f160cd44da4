"""Interleaved A/B: a grouped case's kernel against the dense kernel of the same config on the same rows of A
(one expert's B), median of several rounds, to measure what the grouped scheduler and epilogue cost.

    PYTHONPATH=. python bench/ab_grouped_dense.py --out ab.json contiguous:4:8192:4096:7168:128:128:1
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gemm import grouped_case  # noqa: E402
from common import kernel_seconds  # noqa: E402

import gemmgen  # noqa: E402


def ab(spec: str, rounds: int) -> dict:
    layout, groups, expected, n, k, bm, bn, cluster = spec.split(":")
    cfg = {"block_m": int(bm), "block_n": int(bn), "cluster": int(cluster)}
    case = grouped_case(layout, int(groups), int(expected), int(n), int(k))
    a = case.a if layout == "contiguous" else case.a.view(-1, int(k))
    sa = case.sa if layout == "contiguous" else gemmgen.tma_aligned_scales(case.sa.reshape(-1, case.sa.shape[-1]))
    out = torch.empty(a.shape[0], int(n), device="cuda", dtype=torch.bfloat16)
    calls = {"grouped": lambda: case.call(cfg),
             "dense": lambda: gemmgen.fp8_gemm_nt((a, sa), (case.b[0], case.sb[0]), out, config=cfg)}
    times: dict[str, list[float]] = {v: [] for v in calls}
    for r in range(rounds):
        for v in (("grouped", "dense") if r % 2 == 0 else ("dense", "grouped")):
            times[v].append(kernel_seconds(calls[v])[0])
    med = {v: statistics.median(ts) for v, ts in times.items()}
    res = {"spec": spec, "rows": a.shape[0], "valid_rows": sum(case.sizes), "us": {v: t * 1e6 for v, t in med.items()},
           "all_us": {v: [t * 1e6 for t in ts] for v, ts in times.items()},
           "grouped_over_dense_time": med["grouped"] / med["dense"]}
    print(f"{spec}: grouped {res['us']['grouped']:.1f} us, dense {res['us']['dense']:.1f} us "
          f"(x{res['grouped_over_dense_time']:.3f} time)", flush=True)
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("specs", nargs="+", help="layout:groups:expected:N:K:block_m:block_n:cluster ...")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    args.out.write_text(json.dumps([ab(s, args.rounds) for s in args.specs], indent=1))


if __name__ == "__main__":
    main()
