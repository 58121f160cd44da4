"""The SA gather's rows per producer thread (KernelPlan.sa_gather_rows): each gather thread copies that many rows of
the tile's A scales per stage and arrives once, so more rows per thread mean fewer arrivals per stage. Times, per
shape, the default kernel with SA row-major (gathered) at each rows-per-thread value, and with SA in the TMA layout
(loaded by TMA: the gather's reference), in interleaved rounds; outputs compared bitwise with the first form's.

    PYTHONPATH=. python bench/sa_gather_rows_probe.py --rows 4 8 16 --rounds 7 --shape 4096x7168x2048 [--json out]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import rotated_kernel_us  # type: ignore[import-not-found]  # noqa: E402

import gemmgen  # noqa: E402
from gemmgen.ir import GemmProblem  # noqa: E402
from gemmgen.passes import plan_kernel  # noqa: E402


def built_with_rows(m: int, n: int, k: int, rows: int):
    original = plan_kernel.sa_gather_rows
    plan_kernel.sa_gather_rows = lambda c: rows  # type: ignore[assignment]
    try:
        return gemmgen.build(GemmProblem(m, n, k), None, gemmgen.api.device_target(0))
    finally:
        plan_kernel.sa_gather_rows = original  # type: ignore[assignment]


def probe_shape(shape: str, rows_list: list[int], rounds: int) -> dict:
    m, n, k = (int(v) for v in shape.split("x"))
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    rows_sa = sa.contiguous()  # row-major [M, ceil(K/128)]: gathered
    kernels, calls, outs = {}, {}, {}
    for r in rows_list:
        try:
            kernels[r] = built_with_rows(m, n, k, r)
        except Exception as exc:  # noqa: BLE001 - an illegal or failing form is reported, the others run
            print(f"{shape} rows {r}: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            continue
        outs[r] = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        calls[f"gather {r} rows"] = (lambda kern=kernels[r], o=outs[r]: kern.launcher(a, rows_sa, b, sb, o))
    first = next(iter(kernels.values()))
    tma_out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    calls["tma"] = lambda: first.launcher(a, sa, b, sb, tma_out)
    for fn in calls.values():
        fn()
    torch.cuda.synchronize()
    ref = outs[next(iter(outs))]
    equal = {str(r): bool(torch.equal(o, ref)) for r, o in outs.items()}
    equal["tma"] = bool(torch.equal(tma_out, ref))
    times, _ = rotated_kernel_us(calls, rounds)
    med = {t: statistics.median(v) for t, v in times.items()}
    print(f"{shape} {first.name}: " + ", ".join(f"{t} {v:.2f} us" for t, v in med.items()) + f"; equal {equal}",
          flush=True)
    return {"shape": shape, "kernel": first.name, "median_us": med, "bitwise_equal_first": equal,
            "over_first": {t: med[next(iter(med))] / v for t, v in med.items()}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", action="append", required=True)
    ap.add_argument("--rows", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json")
    args = ap.parse_args()
    results = [probe_shape(shape, args.rows, args.rounds) for shape in args.shape]
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results}, indent=1))


if __name__ == "__main__":
    main()
