"""The same dense kernel with its A scales by TMA against gathered by producer threads, interleaved (GPU).

SA in per_token_cast_to_fp8's layout (M-major, M stride rounded up to 4) goes by tensor map unless the kernel always
gathers it (GemmConfig.sa_gather); a row-major SA is always gathered (params.sa_tma = 0). So one kernel, two SA
layouts, the
same result bit for bit, and the time difference is the SA path alone. The kernel time is bench/common.py's (every
kernel of a call, L2 flushed), median over interleaved rounds.

    PYTHONPATH=. python bench/sa_gather_probe.py --out sa_gather.json 32x4096x7168 64x4096x7168
    PYTHONPATH=. python bench/sa_gather_probe.py --out partial_m.json --config block_m=128,block_n=32,k_splits=2 \
        65x2112x7168 128x2112x7168      (one forced kernel over several M)
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


def probe(m: int, n: int, k: int, rounds: int, config: dict[str, int] | None = None) -> dict:
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    layouts = {"tma": sa, "gather": sa.contiguous()}  # M-major (TMA layout), row-major [M, KB] (gathered)
    outs = {v: torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16) for v in layouts}

    def call(v: str):
        return lambda: gemmgen.fp8_gemm_nt((a, layouts[v]), (b, sb), outs[v], config=config)

    times: dict[str, list[float]] = {v: [] for v in layouts}
    for r in range(rounds):
        for v in (("tma", "gather") if r % 2 == 0 else ("gather", "tma")):
            times[v].append(kernel_seconds(call(v))[0] * 1e6)
    med = {v: statistics.median(ts) for v, ts in times.items()}
    return {"m": m, "n": n, "k": k, "kernel": gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), config).name,
            "median_us": med, "all_us": times, "gather_speedup": med["tma"] / med["gather"],
            "bitwise_equal": bool(torch.equal(outs["tma"], outs["gather"])),
            "sa_strides": {v: list(t.stride()) for v, t in layouts.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shapes", nargs="+", type=parse_shape, help="MxNxK")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--config", default=None, help="key=value,... pinned for every shape (as gemmgen build --config)")
    args = ap.parse_args()
    config = config_option(ap, args.config)
    results = {}
    for m, n, k in args.shapes:
        res = results[f"{m}x{n}x{k}"] = probe(m, n, k, args.rounds, config)
        med = res["median_us"]
        print(f"{m}x{n}x{k}: tma {med['tma']:.2f} us, gather {med['gather']:.2f} us (x{res['gather_speedup']:.3f}), "
              f"bitwise equal {res['bitwise_equal']}; {res['kernel']}", flush=True)
    args.out.write_text(json.dumps({"env": env_info(__doc__ or ""), "results": results}, indent=1))


if __name__ == "__main__":
    main()
