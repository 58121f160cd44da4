"""Fixed cost of a decode kernel: kernel time at M = 1 against K (N fixed), for gemmgen's default and a few forced
variants, beside cuBLASLt per-tensor FP8 (torch._scaled_mm); the intercept at small K is launch + prologue + first
loads + epilogue, the slope the streaming rate. Interleaved rounds, median per implementation.

    PYTHONPATH=. python bench/probe_fixed_cost.py --out fixed_cost.json --n 7168 --k 128 512 2048 8192
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import env_info, kernel_seconds  # type: ignore[import-not-found]  # noqa: E402

import gemmgen  # noqa: E402

VARIANTS = {"default": None, "unswapped": {"swap_ab": 0}, "stages4": {"stages": 4}, "a_rows64": {"a_rows": 64}}


def probe(n: int, k: int, rounds: int) -> dict:
    target = gemmgen.api.device_target(0)
    x = torch.randn(1, k, device="cuda")
    w = torch.randn(n, k, device="cuda")
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    b, sb = gemmgen.per_block_cast_to_fp8(w)
    at, sx = gemmgen.per_tensor_cast_to_fp8(x)
    bt, sw = gemmgen.per_tensor_cast_to_fp8(w)
    out = torch.empty(1, n, device="cuda", dtype=torch.bfloat16)
    calls, names = {}, {}
    for label, cfg in VARIANTS.items():
        try:
            kern = gemmgen.get_kernel(1, n, k, target, cfg)
        except Exception as exc:  # noqa: BLE001 - an illegal variant at this K is reported, not fatal
            names[label] = f"illegal: {str(exc).splitlines()[-1]}"
            continue
        calls[label] = lambda kern=kern: kern(a, sa, b, sb, out)
        names[label] = kern.name
    calls["cublaslt_tensorwise"] = lambda: torch._scaled_mm(at, bt.t(), scale_a=sx, scale_b=sw,
                                                            out_dtype=torch.bfloat16, use_fast_accum=True)
    times: dict[str, list[float]] = {label: [] for label in calls}
    for _ in range(rounds):
        for label, fn in calls.items():
            times[label].append(kernel_seconds(fn)[0] * 1e6)
    return {"m": 1, "n": n, "k": k, "bytes": n * k + k + 2 * n, "names": names,
            "us": {label: statistics.median(v) for label, v in times.items()}, "all_us": times}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--n", type=int, default=7168)
    ap.add_argument("--k", type=int, nargs="+", default=[128, 512, 2048, 8192])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for k in args.k:
        row = probe(args.n, k, args.rounds)
        rows.append(row)
        print(f"1x{args.n}x{k}: " + ", ".join(f"{label} {us:.2f}" for label, us in row["us"].items()), flush=True)
    args.out.write_text(json.dumps({"env": env_info(__doc__ or ""), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
