"""SASS passes on/off: the same kernel built unpatched and patched (interleave_ffma + register_reuse), timed
interleaved in one process (docs/BENCHMARKING.md method), median of the rounds; the data stages.default_sass_passes
is decided from.

    PYTHONPATH=. python bench/ab_sass_passes.py --out ab_sass.json 64x2112x7168 128x7168x2048
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import kernel_seconds  # type: ignore[import-not-found]  # noqa: E402

import gemmgen  # noqa: E402
from gemmgen.settings import Settings  # noqa: E402

BOTH = ("interleave_ffma", "register_reuse")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("shapes", nargs="+")
    args = ap.parse_args()
    base = Settings.from_env()
    rows = []
    for shape in args.shapes:
        m, n, k = (int(v) for v in shape.split("x"))
        problem = gemmgen.GemmProblem(m, n, k)
        kernels = {"off": gemmgen.build(problem, settings=dataclasses.replace(base, sass_passes=())),
                   "on": gemmgen.build(problem, settings=dataclasses.replace(base, sass_passes=BOTH))}
        a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
        b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        times: dict[str, list[float]] = {key: [] for key in kernels}
        for _ in range(args.rounds):
            for key, kern in kernels.items():
                call = lambda kern=kern, a=a, sa=sa, b=b, sb=sb, out=out: kern(a, sa, b, sb, out)  # noqa: E731
                times[key].append(kernel_seconds(call)[0])
        med = {key: sorted(ts)[len(ts) // 2] for key, ts in times.items()}
        patches = kernels["on"].meta["sass_passes"]["patches"]
        rows.append({"shape": shape, "name": kernels["off"].name, "patches": patches,
                     "off_us": med["off"] * 1e6, "on_us": med["on"] * 1e6, "on_over_off": med["on"] / med["off"],
                     "all_off_us": [t * 1e6 for t in times["off"]], "all_on_us": [t * 1e6 for t in times["on"]]})
        print(f"{shape:18s} patches {patches}  off {med['off'] * 1e6:8.2f} us  on {med['on'] * 1e6:8.2f} us  "
              f"on/off {med['on'] / med['off']:.4f}", flush=True)
    args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
