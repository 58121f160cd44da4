"""Interleaved A/B of forced configs against the default on dense shapes, in one process on one GPU: the check a
single-shot sweep (sweep.py, sweep_decode.py: one measurement per config, ~5% noise at 10-20 us) cannot give. Each
round times every config once, rotating which goes first; the median per config is reported, with whether its
output equals the default's bitwise.

    PYTHONPATH=. python bench/ab_configs.py --out ab_cfg.json --rounds 7 --shape 1x24576x1536 \
        --config a_rows=8,block_n=128,stages=12 --config a_rows=8,block_n=192
    (a_rows written as `m` takes the A-slot rows select_config would give M: 8, 16 or 32; 64 above M = 32)
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
from gemmgen.errors import IllegalConfigError  # noqa: E402
from gemmgen.ir import parse_overrides  # noqa: E402
from gemmgen.passes.select_config import stream_a_rows  # noqa: E402


def parse_config(text: str, m: int) -> dict[str, int] | None:
    """`key=value,...` as `gemmgen build --config` takes them, `a_rows=m` first made M's A-slot rows."""
    if text == "default":
        return None
    items = [f"a_rows={stream_a_rows(m)}" if item.replace(" ", "") == "a_rows=m" else item for item in text.split(",")]
    return parse_overrides(items)


def ab_configs(m: int, n: int, k: int, texts: list[str], rounds: int) -> dict:
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    target = gemmgen.api.device_target(0)
    kernels, skipped = {}, {}
    for text in ["default", *texts]:
        try:
            kernels[text] = gemmgen.get_kernel(m, n, k, target, parse_config(text, m))
        except (IllegalConfigError, ValueError) as exc:
            skipped[text] = str(exc).splitlines()[0]
    outs = {t: torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for t in kernels}
    calls = {t: (lambda kern=kern, o=outs[t]: kern(a, sa, b, sb, o)) for t, kern in kernels.items()}
    times, seen = rotated_kernel_us(calls, rounds)
    med = {t: statistics.median(ts) for t, ts in times.items()}
    return {"m": m, "n": n, "k": k, "rounds": rounds, "median_us": med, "all_us": times,
            "names": {t: kern.name for t, kern in kernels.items()}, "kernels_seen": seen,
            "over_default": {t: med["default"] / v for t, v in med.items()},
            "bitwise_equal_default": {t: bool(torch.equal(outs[t], outs["default"])) for t in outs},
            "skipped": skipped}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", action="append", required=True, help="MxNxK (repeatable)")
    ap.add_argument("--config", action="append", default=[], help="key=value,... (repeatable); a_rows=m: M's rows")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    results = []
    for shape in args.shape:
        m, n, k = (int(v) for v in shape.split("x"))
        res = ab_configs(m, n, k, args.config, args.rounds)
        results.append(res)
        best = min(res["median_us"], key=res["median_us"].get)
        print(f"{shape}: default {res['median_us']['default']:.2f} us; "
              + "; ".join(f"{t} {v:.2f} (x{res['over_default'][t]:.3f})" for t, v in res["median_us"].items()
                          if t != "default")
              + f"; best {best}" + (f"; skipped {list(res['skipped'])}" if res["skipped"] else ""), flush=True)
        args.out.write_text(json.dumps({"env": env_info(__doc__ or ""), "results": results}, indent=1))


if __name__ == "__main__":
    main()
