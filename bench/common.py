"""What every benchmark here shares: the timing method of docs/BENCHMARKING.md and the results file.

Kernel time: CUDA kernel durations from torch.profiler, summed over every kernel a call launches (only the L2 flush's
own kernels are excluded, recognised by the names a flush alone launches), mean of 30 calls after 5 warm-ups, a
256 MB buffer zeroed before every call so L2 is cold.
Call time: triton's do_bench median of one Python call (host overhead included).
Host time: the wall time of an enqueue loop (no sync inside) divided by its calls.
`configure(quick=True)` cuts the iterations for a smoke run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

WARMUP, ITERS = 5, 30
CALL_WARMUP_MS, CALL_REP_MS = 25, 100
HOST_REPEATS = 5  # enqueue loops per host measurement; the median is kept
FLUSH = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda") if torch.cuda.is_available() else None
FLUSH_NAMES = ("elementwise", "fill", "Fill")  # fallback only: substrings of the flush's kernels (FLUSH.zero_())
_flush_kernels: set[str] | None = None


def configure(quick: bool) -> None:
    """Full (the documented method) or quick (a smoke run: a few iterations, numbers only indicative)."""
    global WARMUP, ITERS, CALL_WARMUP_MS, CALL_REP_MS, HOST_REPEATS
    if quick:
        WARMUP, ITERS, CALL_WARMUP_MS, CALL_REP_MS, HOST_REPEATS = 2, 5, 5, 10, 2
    else:
        WARMUP, ITERS, CALL_WARMUP_MS, CALL_REP_MS, HOST_REPEATS = 5, 30, 25, 100, 5


def _cuda_kernel_events(prof) -> list:
    return [ev for ev in prof.events() if ev.device_type == torch.autograd.DeviceType.CUDA]


def _duration_us(ev) -> float:
    return ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total


def flush_kernel_names() -> set[str]:
    """The exact names of the kernels the L2 flush launches, seen by profiling the flush alone (once per process):
    only these are left out of a call's kernel time, so a call's own copy or fill kernels always count."""
    global _flush_kernels
    if _flush_kernels is None:
        FLUSH.zero_()
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                FLUSH.zero_()
            torch.cuda.synchronize()
        _flush_kernels = {ev.name for ev in _cuda_kernel_events(prof)}
    return _flush_kernels


def _is_flush(name: str, flush: set[str]) -> bool:
    return name in flush if flush else any(x in name for x in FLUSH_NAMES)


def config_option(ap: argparse.ArgumentParser, text: str | None) -> dict[str, int] | None:
    """A `--config key=value,...` argument read as `gemmgen build --config` reads it (None: no pin); a bad field or
    value is the parser's error (exit code 2, the field named), not a traceback."""
    from gemmgen.ir import parse_overrides

    try:
        return parse_overrides(text.split(",")) if text else None
    except ValueError as exc:
        ap.error(str(exc))


def profiled_kernels(fn, calls: int) -> list[tuple[str, float]]:
    """(name, us) of every kernel `calls` calls of `fn` launch, in launch order, the L2 flushed before each call
    (the flush's own kernels left out)."""
    flush = flush_kernel_names()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            FLUSH.zero_()
            fn()
        torch.cuda.synchronize()
    return [(ev.name, _duration_us(ev)) for ev in _cuda_kernel_events(prof) if not _is_flush(ev.name, flush)]


def kernel_seconds(fn) -> tuple[float, list[str]]:
    """Mean summed CUDA-kernel time per call of `fn` (flush kernels excluded), and the kernel names seen."""
    for _ in range(WARMUP):
        FLUSH.zero_()
        fn()
    torch.cuda.synchronize()
    kernels = profiled_kernels(fn, ITERS)
    total = sum(us for _, us in kernels)
    if total <= 0:
        raise RuntimeError("the profiler saw no kernel of the call")
    return total / ITERS * 1e-6, sorted({name[:80] for name, _ in kernels})


def rotated_kernel_us(calls: dict, rounds: int, settle_s: float = 0.0) -> tuple[dict[str, list[float]],
                                                                              dict[str, list[str]]]:
    """Each call's kernel time (us) per round, the calls' order rotated by one every round (so none always runs first
    or after the same neighbour), and the kernel names each call launched. `settle_s`: an idle pause before each
    timing, so heavy calls under the power cap each start from the same state (bench_gemm's --settle-impl-s)."""
    order = list(calls)
    times: dict[str, list[float]] = {t: [] for t in order}
    seen: dict[str, list[str]] = {}
    for r in range(rounds):
        shift = r % len(order)
        for t in order[shift:] + order[:shift]:
            if settle_s:
                torch.cuda.synchronize()
                time.sleep(settle_s)
            secs, seen[t] = kernel_seconds(calls[t])
            times[t].append(secs * 1e6)
    torch.cuda.synchronize()
    return times, seen


def call_seconds(fn) -> float:
    from triton.testing import do_bench

    return do_bench(fn, warmup=CALL_WARMUP_MS, rep=CALL_REP_MS, return_mode="median") * 1e-3


def enqueue_us(calls: Sequence[Callable[[], object]], n: int = 200) -> tuple[float, float]:
    """Host cost of a call: `n` calls cycling through `calls`, no sync inside the loop, synchronised before and after.
    Returns (enqueue-loop wall time / n, the same including the final sync), medians over HOST_REPEATS loops. The
    first is the host's cost while the launch queue does not fill; the second bounds it by the GPU time."""
    seq = [calls[i % len(calls)] for i in range(n)]
    for c in seq:  # warm-up: every buffer set once, caches at their steady state
        c()
    torch.cuda.synchronize()
    enqueue, synced = [], []
    for _ in range(HOST_REPEATS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for c in seq:
            c()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        enqueue.append((t1 - t0) / n * 1e6)
        synced.append((t2 - t0) / n * 1e6)
    return statistics.median(enqueue), statistics.median(synced)


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
    # at_unix_s: when the row was measured, to line it up with a clock log (nvidia-smi -lms, bench/device_run.sh)
    return {"kind": kind, "impl": impl, "m": m, "n": n, "k": k, "kernel_us": seconds * 1e6,
            "tflops": flops / seconds / 1e12, "tbps": nbytes / seconds / 1e12, "at_unix_s": round(time.time(), 3),
            **extra}


def error_row(kind: str, impl: str, m: int, n: int, k: int, error: BaseException | str, **extra) -> dict:
    """A row for an implementation that refused or failed: the measured fields are null and `error` says why."""
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    text = " ".join(text.split())[:400]
    return {"kind": kind, "impl": impl, "m": m, "n": n, "k": k, "kernel_us": None, "tflops": None, "tbps": None,
            "call_us": None, "calc_diff": None, "config": extra.pop("config", ""), **extra, "error": text}


def write_json(out: Path, env: dict, rows: list[dict]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"env": env, "rows": rows}, indent=1))

