"""Interleaved A/B of pinned configs for the masked MoE grouped GEMM (ab_configs.py does dense only), one process.

    PYTHONPATH=. python bench/ab_masked_configs.py --case 4x64x16x7168x2048 --config acc_sets=1 --out ab.json

--case GxMMAXxEXPECTEDxNxK: G groups of M_max rows; masked_m[g] drawn as expected - 8 g (decoding's ragged counts,
at least 1), expected_m = EXPECTED steers the default config. Each --config (key=value,...) is timed against the
default on the same inputs; outputs compared bitwise.
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


def run_case(case: str, texts: list[str], rounds: int) -> dict:
    g, m_max, expected, n, k = (int(v) for v in case.split("x"))
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(g, m_max, k, device="cuda"))
    pairs = [gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda")) for _ in range(g)]
    b, sb = torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])
    masked_m = torch.tensor([max(expected - 8 * i, 1) for i in range(g)], device="cuda", dtype=torch.int32)
    configs = {"default": None, **{t: parse_overrides(t.split(",")) for t in texts}}
    outs = {t: torch.zeros(g, m_max, n, device="cuda", dtype=torch.bfloat16) for t in configs}
    calls = {t: (lambda c=c, o=outs[t]: gemmgen.m_grouped_fp8_gemm_nt_masked((a, sa), (b, sb), o, masked_m,
                                                                          expected, config=c))
             for t, c in configs.items()}
    times, seen = rotated_kernel_us(calls, rounds)
    med = {t: statistics.median(v) for t, v in times.items()}
    return {"case": case, "masked_m": masked_m.tolist(), "rounds": rounds, "median_us": med, "all_us": times,
            "kernels_seen": seen, "over_default": {t: med["default"] / v for t, v in med.items()},
            "bitwise_equal_default": {t: bool(torch.equal(outs[t], outs["default"])) for t in outs}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", action="append", required=True, help="GxMMAXxEXPECTEDxNxK (repeatable)")
    ap.add_argument("--config", action="append", default=[], help="key=value,... (repeatable)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    results = []
    for case in args.case:
        res = run_case(case, args.config, args.rounds)
        results.append(res)
        print(f"{case}: default {res['median_us']['default']:.2f} us; " + "; ".join(
            f"{t} {res['median_us'][t]:.2f} (x{res['over_default'][t]:.3f}, equal {res['bitwise_equal_default'][t]})"
            for t in args.config) + f"; kernels {res['kernels_seen']['default']}", flush=True)
    args.out.write_text(json.dumps({"env": env_info(__doc__ or ""), "results": results}, indent=1))


if __name__ == "__main__":
    main()
