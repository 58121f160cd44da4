"""Decode-regime sweep (M <= 64): kernel time of every legal (block_n, k_splits) for the (N, K) pairs of the
decode table, against the default config; the data select_config's decode rule is checked against.

    PYTHONPATH=. python bench/sweep_decode.py --out sweep_decode.json --m 1 32 64
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import kernel_seconds  # type: ignore[import-not-found]  # noqa: E402

import gemmgen  # noqa: E402
from gemmgen.errors import IllegalConfigError  # noqa: E402

NK = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048), (576, 7168)]
BNS = [32, 64, 96, 128, 160, 192]
SPLITS = [1, 2, 3, 4, 6, 7, 8]


def configs(k: int) -> list[dict[str, int]]:
    kb = -(-k // 128)
    return [{"block_m": 64, "block_n": bn, "k_splits": s} for bn in BNS for s in SPLITS if kb % s == 0]


def _build(args: tuple) -> None:
    m, n, k, cfg = args
    try:
        gemmgen.build(gemmgen.GemmProblem(m, n, k), cfg)
    except (IllegalConfigError, ValueError):
        pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--m", type=int, nargs="+", default=[1, 32])
    args = ap.parse_args()
    jobs = [(1, n, k, c) for n, k in NK for c in configs(k)] + [(m, n, k, None) for m in args.m for n, k in NK]
    with ProcessPoolExecutor() as pool:
        list(pool.map(_build, jobs, chunksize=2))
    target = gemmgen.api.device_target(0)
    rows = []
    for m in args.m:
        for n, k in NK:
            a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
            b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
            out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            byts = m * k + n * k + 2 * m * n + 4 * m * (k // 128) + 4 * (-(-n // 128)) * (-(-k // 128))
            default = gemmgen.get_kernel(m, n, k, target).name
            res = []
            for cfg in [None, *configs(k)]:
                try:
                    kern = gemmgen.get_kernel(m, n, k, target, cfg)
                except (IllegalConfigError, ValueError):
                    continue
                secs, _ = kernel_seconds(lambda kern=kern, a=a, sa=sa, b=b, sb=sb, out=out: kern(a, sa, b, sb, out))
                res.append({"m": m, "n": n, "k": k, "config": cfg or "default", "name": kern.name,
                            "us": secs * 1e6, "tbps": byts / secs / 1e12, "is_default": kern.name == default})
            rows += res
            best = min(res, key=lambda r: r["us"])
            dflt = next(r for r in res if r["config"] == "default")
            print(f"{m}x{n}x{k}: default {dflt['us']:6.1f} us ({dflt['tbps']:.2f} TB/s) {dflt['name'][30:]}; "
                  f"best {best['us']:6.1f} us {best['config']}", flush=True)
    args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
