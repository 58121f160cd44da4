"""Repeat the weight-gradient GEMM on the same inputs with its scales in every layout pairing and count the runs
whose output differs bit for bit from the first (a race shows as an intermittent difference; bench/NOTES.md v0.6,
"Found, not fixed"). For each differing run: how many elements, which rows and tile columns, and the largest
difference, and (--explain) which k-block's B scale explains a differing column and which B scale of the tile held
that value instead. Fresh inputs
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


def scale_layouts(sa: torch.Tensor, sb: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """(SA, SB) per pairing: the TMA layouts per_token_cast_to_fp8 gives, or row-major copies (gathered)."""
    return {"tma": (sa, sb), "sb_gathered": (sa, sb.contiguous()), "sa_gathered": (sa.contiguous(), sb),
            "both_gathered": (sa.contiguous(), sb.contiguous())}


def _run(a, sa, b, sb, m: int, n: int) -> torch.Tensor:
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float32)
    gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb), out, accumulate=False)
    return out


def _where(diff: torch.Tensor, block_n: int) -> dict:
    rows, cols = diff.nonzero(as_tuple=True)
    return {"elements": int(diff.sum()), "rows": sorted(set(rows.tolist()))[:16],
            "n_tiles": sorted({c // block_n for c in cols.tolist()})[:16]}


def _explain(a, sa, b, sb, out, first, diff, block_n: int) -> list[dict]:
    """For each differing column (first 8): the k-block whose B scale, if replaced, explains out - first over the
    column's differing rows (least squares over k-blocks), the value it would have held, and which B scales of the
    tile (column offset, k-block offset) hold that value. The differences follow lanes of a warp (wgmma's fragment:
    lane % 4 picks the columns), so the column scales the promotion reads are the suspects."""
    kb_count = sa.shape[1]
    k = a.shape[1]
    found = []
    for c in sorted(set(diff.nonzero(as_tuple=True)[1].tolist()))[:8]:
        rows = diff[:, c].nonzero(as_tuple=True)[0]
        d = out[rows, c].double() - first[rows, c].double()
        x = torch.zeros(kb_count, len(rows), dtype=torch.float64, device=a.device)
        for kb in range(kb_count):
            lo, hi = kb * 128, min(k, kb * 128 + 128)
            part = a[rows, lo:hi].double() @ b[c, lo:hi].double()  # the k-block's unscaled partial dot products
            x[kb] = part * sa[rows, kb].double()
        delta = (x @ d) / (x * x).sum(1).clamp_min(1e-300)
        resid = ((d[None] - delta[:, None] * x).norm(dim=1) / d.norm()).tolist()
        kb = min(range(kb_count), key=lambda i: resid[i])
        held = float(sb[c, kb]) + float(delta[kb])
        n0 = c // block_n * block_n
        tile = sb[n0:n0 + block_n].double()
        hits = ((tile - held).abs() <= 1e-4 * abs(held)).nonzero().tolist()
        found.append({"col": c, "rows": rows.tolist()[:16], "kb": kb, "resid": resid[kb], "held": held,
                      "want": float(sb[c, kb]), "held_is": [(n0 + j - c, kk - kb) for j, kk in hits][:4],
                      "zero": abs(held) <= 1e-4 * abs(float(sb[c, kb]))})
    return found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", type=parse_shape, help="MxNxK")
    ap.add_argument("--rounds", type=int, default=20, help="fresh inputs")
    ap.add_argument("--repeats", type=int, default=10, help="runs of each pairing per round")
    ap.add_argument("--out")
    ap.add_argument("--explain", action="store_true", help="fit which B scale was wrong in a differing run")
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
        layouts = scale_layouts(sa, sb)
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
                        where["explain"] = _explain(a, sa, b, sb, out, first, diff, block_n)
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
