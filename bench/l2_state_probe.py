"""A decode GEMM's kernel time under three L2 states, for configs pinned against the default (one process, rounds
interleaved): how much of a change's gain depends on what L2 holds when the kernel starts.

- zeroed: a 256 MB buffer zeroed before each call (the benchmark's method, TARGETS.md): L2 full of dirty lines;
- read: a 256 MB buffer read (summed) before each call: L2 full of clean lines, dropped without a write-back;
- layers: no flush, LAYERS weight sets used in turn (as a decode step's layers; together larger than L2), each
  call's output a new tensor: L2 holds what the previous GEMM left (its weights' tail, its output).

    PYTHONPATH=. python bench/l2_state_probe.py --out l2_state.json --shape 8x7168x16384 --config evict_first=0
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import _cuda_kernel_events, _duration_us, env_info  # type: ignore[import-not-found]  # noqa: E402

import gemmgen  # noqa: E402
from gemmgen.ir import parse_overrides  # noqa: E402

LAYERS = 8
CALLS = 24
FLUSH_BYTES = 256 * 1024 * 1024


def kernel_us(fn, prep) -> float:
    """Median duration (us) of the sm90_ kernels `CALLS` calls of fn launch, `prep` before each (not timed)."""
    for _ in range(3):
        prep()
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            prep()
            fn()
        torch.cuda.synchronize()
    times = [_duration_us(ev) for ev in _cuda_kernel_events(prof) if ev.name.startswith("sm90_")]
    if not times:
        raise RuntimeError("the profiler saw no sm90_ kernel")
    return statistics.median(times)


def run_shape(shape: str, texts: list[str], rounds: int) -> dict:
    m, n, k = (int(v) for v in shape.split("x"))
    target = gemmgen.api.device_target(0)
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
    weights = [gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda")) for _ in range(LAYERS)]
    outs = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(LAYERS)]
    flush = torch.empty(FLUSH_BYTES // 4, device="cuda", dtype=torch.float32).normal_()
    kernels = {t: gemmgen.get_kernel(m, n, k, target, None if t == "default" else parse_overrides(t.split(",")))
               for t in ["default", *texts]}
    step = itertools.count()

    def call(kern, layers: bool):
        def fn():
            i = next(step) % LAYERS
            b, sb = weights[i if layers else 0]
            kern(a, sa, b, sb, outs[i])
        return fn

    preps = {"zeroed": lambda: flush.zero_(), "read": lambda: flush.sum(), "layers": lambda: None}
    times: dict[str, dict[str, list[float]]] = {s: {t: [] for t in kernels} for s in preps}
    for r in range(rounds):
        for s, prep in preps.items():
            order = list(kernels)
            order = order[r % len(order):] + order[:r % len(order)]
            for t in order:
                times[s][t].append(kernel_us(call(kernels[t], s == "layers"), prep))
    med = {s: {t: statistics.median(v) for t, v in ts.items()} for s, ts in times.items()}
    return {"shape": shape, "names": {t: kern.name for t, kern in kernels.items()}, "median_us": med, "all_us": times,
            "over_default": {s: {t: med[s]["default"] / v for t, v in ms.items()} for s, ms in med.items()}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", action="append", required=True, help="MxNxK (repeatable)")
    ap.add_argument("--config", action="append", default=[], help="key=value,... (repeatable)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    results = []
    for shape in args.shape:
        res = run_shape(shape, args.config, args.rounds)
        results.append(res)
        for s, ms in res["median_us"].items():
            print(f"{shape} {s}: " + "; ".join(f"{t} {us:.2f} us (x{res['over_default'][s][t]:.3f})"
                                               for t, us in ms.items()), flush=True)
    args.out.write_text(json.dumps({"env": env_info(__doc__ or ""), "results": results}, indent=1))


if __name__ == "__main__":
    main()
