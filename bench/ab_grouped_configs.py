"""Interleaved A/B of pinned configs on the bench's own grouped cases (bench_gemm.grouped_case: the same seed, the
same drawn rows per expert), one process on one GPU. ab_masked_configs.py draws decoding's ragged counts instead;
this one answers "what would the bench's row get".

    PYTHONPATH=. python bench/ab_grouped_configs.py --case contiguous:4x8192x4096x7168 \
        --config block_n=256,wave_n=128 --config cluster=1 --out ab.json

--case LAYOUT:GxEXPECTEDxNxK (LAYOUT contiguous or masked; @V after it: every group V rows instead of the bench's
draw). --settle-s pauses before each timing (heavy cases run under the power cap). Each --config (key=value,...)
is timed against the default on the same inputs; outputs compared bitwise on the valid rows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gemm import MASKED_M_MAX, grouped_case  # type: ignore[import-not-found]  # noqa: E402
from common import env_info, rotated_kernel_us  # type: ignore[import-not-found]  # noqa: E402

from gemmgen.errors import IllegalConfigError  # noqa: E402
from gemmgen.ir import parse_overrides  # noqa: E402


def run_case(case_text: str, texts: list[str], rounds: int, settle_s: float) -> dict:
    layout, _, rest = case_text.partition(":")
    if layout not in ("contiguous", "masked"):
        raise SystemExit(f"--case {case_text!r}: expected contiguous:... or masked:...")
    dims, _, fixed = rest.partition("@")
    g, expected, n, k = (int(v) for v in dims.split("x"))
    rows = int(fixed) if fixed else None
    if rows is not None and not 1 <= rows <= (MASKED_M_MAX if layout == "masked" else rows):
        raise SystemExit(f"--case {case_text!r}: @V must be 1..{MASKED_M_MAX} rows for the masked layout (M_max), "
                         ">= 1 for the contiguous one")
    case = grouped_case(layout, g, expected, n, k, [rows] * g if rows else None)
    configs: dict[str, dict | None] = {"default": None}
    names, skipped = {}, {}
    for t in texts:
        configs[t] = parse_overrides(t.split(","))
    for t, c in list(configs.items()):
        try:
            names[t] = case.kernel_name(c)
        except (IllegalConfigError, ValueError) as exc:
            skipped[t] = str(exc).splitlines()[0]
            del configs[t]
    outs = {t: torch.full_like(case.out, float("nan")) for t in configs}

    def call(c: dict | None, o: torch.Tensor) -> None:
        case.out = o
        case.call(c)

    calls = {t: (lambda c=c, o=outs[t]: call(c, o)) for t, c in configs.items()}
    times, seen = rotated_kernel_us(calls, rounds, settle_s)
    med = {t: statistics.median(v) for t, v in times.items()}
    valid = sum(case.sizes)

    def rows(o: torch.Tensor) -> torch.Tensor:
        return torch.cat([case.rows_of(o, gi, s) for gi, s in case.segments])

    return {"case": case_text, "sizes": case.sizes, "valid_rows": valid, "rounds": rounds, "median_us": med,
            "all_us": times, "names": names, "kernels_seen": seen, "skipped": skipped,
            "tflops": {t: 2 * valid * n * k / (v * 1e-6) / 1e12 for t, v in med.items()},
            "over_default": {t: med["default"] / v for t, v in med.items()},
            "bitwise_equal_default": {t: bool(torch.equal(rows(outs[t]), rows(outs["default"]))) for t in outs}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", action="append", required=True, help="LAYOUT:GxEXPECTEDxNxK (repeatable)")
    ap.add_argument("--config", action="append", default=[], help="key=value,... (repeatable)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--settle-s", type=float, default=0.0, help="idle seconds before each timing")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if args.settle_s < 0 or args.rounds < 1:
        ap.error("--settle-s must be >= 0 and --rounds >= 1")
    results = []
    for text in args.case:
        res = run_case(text, args.config, args.rounds, args.settle_s)
        results.append(res)
        print(f"{text} ({res['valid_rows']} rows): default {res['median_us']['default']:.1f} us "
              f"{res['tflops']['default']:.0f} TFLOPS {res['names']['default']}", flush=True)
        for t in args.config:
            if t in res["skipped"]:
                print(f"  {t}: skipped ({res['skipped'][t]})", flush=True)
                continue
            print(f"  {t}: {res['median_us'][t]:.1f} us {res['tflops'][t]:.0f} TFLOPS x{res['over_default'][t]:.3f}"
                  f" equal {res['bitwise_equal_default'][t]} {res['names'][t]}", flush=True)
    args.out.write_text(json.dumps({"env": env_info(__doc__ or ""), "results": results}, indent=1))


if __name__ == "__main__":
    main()
