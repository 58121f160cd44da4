"""One pinned dense config over several M (or N), the shapes interleaved round by round (GPU).

Asks whether a tile's rows past M cost time: M = 200 on 128-row tiles runs as many tiles as M = 256, so with the same
kernel it should not be slower; if it is, the last M block's partly out-of-bounds A box (TMA zero-fills the rows past
M) is what it pays (bench/NOTES.md v0.16 section 1 found this on decode tiles). Kernel time is bench/common.py's
(every kernel of a call, L2 flushed), the median over rounds; the kernel name is checked to be one for every M.
With --per-n the shapes may differ in N (N is compiled in: one kernel per N): a partial last N block against a whole
one of the same tile count, e.g. 64x160 tiles at N = 4096 (26 blocks, the last 96 columns) and N = 4160.

    PYTHONPATH=. python bench/m_tail_probe.py --out tail.json --config block_m=128,block_n=128,stages=5 \
        136x7168x2048 200x7168x2048 256x7168x2048
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gemm import parse_shape  # type: ignore[import-not-found]  # noqa: E402
from common import config_option, env_info, kernel_seconds  # type: ignore[import-not-found]  # noqa: E402

import gemmgen  # noqa: E402
from gemmgen.quant import dequantize_a, dequantize_b  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shapes", nargs="+", type=parse_shape, help="MxNxK (one kernel for all: the same N, K)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--config", required=True, help="key=value,... pinned for every M (as gemmgen build --config)")
    ap.add_argument("--per-n", action="store_true", help="allow one kernel per N (the shapes differ in N)")
    args = ap.parse_args()
    config = config_option(ap, args.config)
    calls, names = {}, {}
    for m, n, k in args.shapes:
        a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
        b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
        d = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        key = f"{m}x{n}x{k}"
        calls[key] = (lambda a=a, sa=sa, b=b, sb=sb, d=d: gemmgen.fp8_gemm_nt((a, sa), (b, sb), d, config=config))
        names[key] = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), config).name
        calls[key]()
        ref = dequantize_a(a, sa) @ dequantize_b(b, sb).t()
        err = ((d.double() - ref).norm() / ref.norm()).item()
        if not err < 1e-2:
            raise SystemExit(f"{key}: relative error {err:.3g} against float64")
    if not args.per_n and len(set(names.values())) != 1:
        raise SystemExit(f"the pinned config gave more than one kernel: {names}")
    times: dict[str, list[float]] = {key: [] for key in calls}
    order = list(calls)
    for r in range(args.rounds):
        for key in (order if r % 2 == 0 else order[::-1]):
            times[key].append(kernel_seconds(calls[key])[0] * 1e6)
    results = {key: {"median_us": statistics.median(ts), "all_us": ts, "kernel": names[key]}
               for key, ts in times.items()}
    for key, res in results.items():
        print(f"{key}: {res['median_us']:.2f} us  {res['kernel']}", flush=True)
    args.out.write_text(json.dumps({"env": env_info(__doc__ or ""), "kernel": next(iter(names.values())),
                                    "config": config, "results": results}, indent=1))


if __name__ == "__main__":
    main()
