"""Masked-layout tiles over many draws of the group sizes: kernel TFLOPS on valid rows per (case, draw, config).

The masked kernel is chosen on the host from expected_m alone (masked_m lives on the device, for CUDA graphs), so a
tile rule must be judged over the sizes a caller draws about expected_m, not over one draw. Each draw here takes
every group's size uniformly in [0.7, 1.3] x expected (the bench's and DeepGEMM's test distribution); the inputs
stay, only masked_m changes between draws.

    PYTHONPATH=. python bench/sweep_masked_draws.py --draws 8 --out draws.json 1:1024:4096:7168 2:512:7168:2048
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gemm import MASKED_M_MAX, SEED, _sizes, grouped_case  # noqa: E402
from common import env_info, kernel_seconds  # noqa: E402

from gemmgen.errors import IllegalConfigError  # noqa: E402
from gemmgen.ir import parse_overrides  # noqa: E402

TILES = ["128x112", "128x128", "128x144", "128x160", "128x192", "256x96", "256x128"]


def draws_of(spec: str, draws: int, tiles: list[str]) -> list[dict]:
    groups, expected, n, k = (int(v) for v in spec.split(":"))
    case = grouped_case("masked", groups, expected, n, k)
    configs: list[dict | None] = [None] + [parse_overrides([f"block_m={t.split('x')[0]}", f"block_n={t.split('x')[1]}"])
                                           for t in tiles]
    names = {}
    for cfg in configs:
        try:
            names[str(cfg)] = case.kernel_name(cfg)
        except (IllegalConfigError, ValueError):
            pass
    gen = torch.Generator().manual_seed(SEED + 1000 + groups * 7 + n)
    rows = []
    for d in range(draws):
        sizes = _sizes(groups, expected, gen, MASKED_M_MAX)
        case.grouped_layout.copy_(torch.tensor(sizes, dtype=torch.int32))
        flops = 2 * sum(sizes) * n * k
        for cfg in configs:
            if str(cfg) not in names:
                continue
            secs = kernel_seconds(lambda cfg=cfg: case.call(cfg))[0]
            rows.append({"case": spec, "draw": d, "sizes": sizes, "config": cfg or "default",
                         "name": names[str(cfg)], "tflops": flops / secs / 1e12, "us": secs * 1e6})
        best = max((r for r in rows if r["draw"] == d and r["case"] == spec), key=lambda r: r["tflops"])
        default = next(r for r in rows if r["draw"] == d and r["case"] == spec and r["config"] == "default")
        print(f"  {spec} draw {d} {sizes}: default {default['tflops']:.0f}, best {best['config']} "
              f"{best['tflops']:.0f}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="+", help="groups:expected:N:K ...")
    ap.add_argument("--draws", type=int, default=8)
    ap.add_argument("--tiles", nargs="*", default=TILES, help="block_m x block_n tiles besides the default")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    rows = [r for spec in args.cases for r in draws_of(spec, args.draws, args.tiles)]
    args.out.write_text(json.dumps({"env": env_info(__doc__ or ""), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
