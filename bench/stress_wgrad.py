"""Repeat the weight-gradient GEMM on the same inputs with its scales in every layout pairing and count the runs
whose output differs bit for bit from the first (a race shows as an intermittent difference; bench/NOTES.md v0.6,
"Found, not fixed"). For each differing run: how many elements, which rows and tile columns, and the largest
difference, and (--explain) which k-block's A scale was wrong and what it held instead: a stale value (the same ring
slot's previous k-block: read before the copy landed) or a later one (overwritten before it was read). Fresh inputs
per round.

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


def _explain(a, sa, b, sb, out, first, diff, stages: int) -> list[dict]:
    """For each differing row (first 8): the k-block whose A scale, if replaced, explains out - first over the row's
    differing columns (least squares over k-blocks), and which value it would have held: kb - stages (the slot's
    previous fill), kb + stages (its next), 0, or none of those."""
    kb_count = sa.shape[1]
    k = a.shape[1]
    found = []
    for r in sorted(set(diff.nonzero(as_tuple=True)[0].tolist()))[:8]:
        cols = diff[r].nonzero(as_tuple=True)[0]
        d = (out[r, cols].double() - first[r, cols].double())
        x = torch.zeros(kb_count, len(cols), dtype=torch.float64, device=a.device)
        for kb in range(kb_count):
            lo, hi = kb * 128, min(k, kb * 128 + 128)
            part = b[cols, lo:hi].double() @ a[r, lo:hi].double()  # the k-block's unscaled partial dot products
            x[kb] = part * sb[cols, kb].double()
        delta = (x @ d) / (x * x).sum(1).clamp_min(1e-300)
        resid = ((d[None] - delta[:, None] * x).norm(dim=1) / d.norm()).tolist()
        kb = min(range(kb_count), key=lambda i: resid[i])
        held = float(sa[r, kb]) + float(delta[kb])
        names = {f"kb{kb - stages} (slot's previous)": kb - stages, f"kb{kb + stages} (slot's next)": kb + stages}
        match = "none"
        for name, j in names.items():
            if 0 <= j < kb_count and abs(held - float(sa[r, j])) <= 1e-3 * abs(float(sa[r, j])):
                match = name
        if abs(held) <= 1e-3 * abs(float(sa[r, kb])):
            match = "zero"
        found.append({"row": r, "kb": kb, "resid": resid[kb], "held": held, "want": float(sa[r, kb]), "match": match})
    return found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", type=parse_shape, help="MxNxK")
    ap.add_argument("--rounds", type=int, default=20, help="fresh inputs")
    ap.add_argument("--repeats", type=int, default=10, help="runs of each pairing per round")
    ap.add_argument("--out")
    ap.add_argument("--explain", action="store_true", help="fit which k-block's A scale was wrong in a differing run")
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
                    if args.explain:
                        where["explain"] = _explain(a, sa, b, sb, out, first, diff, kernel.config.stages)
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
