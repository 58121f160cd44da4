"""What every benchmark here shares: the timing method of docs/BENCHMARKING.md and the results file.

Kernel time: CUDA kernel durations from torch.profiler, summed over every kernel a call launches (only the L2 flush
is excluded), mean of 30 calls after 5 warm-ups, a 256 MB buffer zeroed before every call so L2 is cold.
Call time: triton's do_bench median of one Python call (host overhead included).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import time
from pathlib import Path

import torch

WARMUP, ITERS = 5, 30
FLUSH = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda") if torch.cuda.is_available() else None
FLUSH_NAMES = ("elementwise", "fill", "Fill")  # the flush's own kernels (FLUSH.zero_())


def kernel_seconds(fn) -> tuple[float, list[str]]:
    """Mean summed CUDA-kernel time per call of `fn` (flush kernels excluded), and the kernel names seen."""
    for _ in range(WARMUP):
        FLUSH.zero_()
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(ITERS):
            FLUSH.zero_()
            fn()
        torch.cuda.synchronize()
    total, names = 0.0, set()
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA and not any(x in ev.name for x in FLUSH_NAMES):
            total += ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
            names.add(ev.name[:80])
    return total / ITERS * 1e-6, sorted(names)


def call_seconds(fn) -> float:
    from triton.testing import do_bench

    return do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e-3


def env_info(method: str) -> dict:
    from cuda.bindings import nvrtc

    commit = os.environ.get("GEMMGEN_COMMIT")  # the device's copy of the tree may carry a stale .git
    if not commit:
        try:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                    check=False).stdout.strip() or "unknown"
        except OSError:
            commit = "unknown"
    _, major, minor = nvrtc.nvrtcVersion()
    return {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "nvrtc": f"{major}.{minor}",
            "gemmgen_commit": commit, "date": time.strftime("%Y-%m-%d %H:%M:%S"), "method": method}


def row(kind: str, impl: str, m: int, n: int, k: int, seconds: float, flops: float, nbytes: float, **extra) -> dict:
    """One results-file row (docs/BENCHMARKING.md schema): kernel_us, tflops, tbps from the kernel time."""
    return {"kind": kind, "impl": impl, "m": m, "n": n, "k": k, "kernel_us": seconds * 1e6,
            "tflops": flops / seconds / 1e12, "tbps": nbytes / seconds / 1e12, **extra}


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def write(out: Path, env: dict, rows: list[dict], table: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"env": env, "rows": rows}, indent=1))
    out.with_suffix(".md").write_text(f"# {env['gpu']}, {env['date']}, gemmgen {env['gemmgen_commit']}\n\n{table}")
