"""Masked MoE grouped GEMM at decode sizes (a few tokens per expert), against the bytes it must move: where it stands
in TB/s, next to a dense swapped GEMM over the same weight bytes in one launch (M = the largest group, N = G x N;
not the same problem, the streaming rate one kernel reaches on those bytes). One process, rotated rounds.

    PYTHONPATH=. python bench/masked_decode_probe.py --out masked_decode.json --case 8x8x7168x2048 \
        --config block_n=128,stages=8

--case GxEXPECTEDxNxK: G groups, masked_m[g] drawn in 0.7..1.3 x EXPECTED (TARGETS' draw; seeded), M_max = 256.
Each --config (key=value,...) pins the masked kernel's schedule and is timed beside the default.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import env_info, rotated_kernel_us  # type: ignore[import-not-found]  # noqa: E402

import gemmgen  # noqa: E402
from gemmgen.ir import parse_overrides  # noqa: E402

M_MAX = 256


def run_case(case: str, texts: list[str], rounds: int) -> dict:
    g, expected, n, k = (int(v) for v in case.split("x"))
    gen = torch.Generator().manual_seed(g * 1000 + expected)
    lo, hi = max(1, int(0.7 * expected)), max(1, int(1.3 * expected))
    masked = torch.randint(lo, hi + 1, (g,), generator=gen, dtype=torch.int32)
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(g, M_MAX, k, device="cuda"))
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(g * n, k, device="cuda"))
    b3, sb3 = b.view(g, n, k), sb.view(g, -1, sb.shape[-1])
    masked_m = masked.cuda()
    configs = {"default": None, **{t: parse_overrides(t.split(",")) for t in texts}}
    outs = {t: torch.zeros(g, M_MAX, n, device="cuda", dtype=torch.bfloat16) for t in configs}
    calls = {t: (lambda c=c, o=outs[t]: gemmgen.m_grouped_fp8_gemm_nt_masked((a, sa), (b3, sb3), o, masked_m,
                                                                          expected, config=c))
             for t, c in configs.items()}
    dm = int(masked.max())
    ad, sad = gemmgen.per_token_cast_to_fp8(torch.randn(dm, k, device="cuda"))
    dense_out = torch.empty(dm, g * n, device="cuda", dtype=torch.bfloat16)
    calls["dense_same_weights"] = lambda: gemmgen.fp8_gemm_nt((ad, sad), (b, sb), dense_out)
    times, seen = rotated_kernel_us(calls, rounds)
    med = {t: statistics.median(v) for t, v in times.items()}
    rows = int(masked.sum())
    kb = -(-k // 128)
    nbytes = g * n * k + rows * k + 2 * rows * n + 4 * (rows * kb + g * -(-n // 128) * kb)
    dense_bytes = g * n * k + dm * k + 2 * dm * g * n + 4 * (dm * kb + g * -(-n // 128) * kb)
    tbs = {t: (dense_bytes if t == "dense_same_weights" else nbytes) / (us * 1e-6) / 1e12 for t, us in med.items()}
    return {"case": case, "masked_m": masked.tolist(), "rounds": rounds, "median_us": med, "all_us": times,
            "tb_per_s": tbs, "kernels_seen": seen, "bytes": nbytes,
            "over_default": {t: med["default"] / v for t, v in med.items()}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", action="append", required=True, help="GxEXPECTEDxNxK (repeatable)")
    ap.add_argument("--config", action="append", default=[], help="key=value,... (repeatable)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    results = []
    for case in args.case:
        res = run_case(case, args.config, args.rounds)
        results.append(res)
        print(f"{case} (rows {res['masked_m']}): " + "; ".join(
            f"{t} {us:.2f} us {res['tb_per_s'][t]:.2f} TB/s (x{res['over_default'][t]:.3f})"
            for t, us in res["median_us"].items()) + f"; kernels {res['kernels_seen']['default']}", flush=True)
    args.out.write_text(json.dumps({"env": env_info(__doc__ or ""), "results": results}, indent=1))


if __name__ == "__main__":
    main()
