"""Energy per FLOP under a steady load: each implementation runs back to back for a few seconds (warm L2, no flush),
while NVML's energy counter, SM clock, power and clock-event reasons are read (bench/NOTES.md v0.14 section 2: the
large FP8 kernels run into the H200's 700 W limit, so their speed is the clock the power cap leaves).

    PYTHONPATH=. python bench/power_per_flop.py --out power.json --seconds 2 4096x7168x16384 8192x8192x8192
    (--deepgemm DIR adds DeepGEMM, built by its own JIT as in bench_gemm.py)

Per (shape, impl, round): TFLOPS over the loop, mean board power (energy delta / time), pJ per FLOP, the mean SM
clock and the share of samples with the software power cap (NVML clocks-event reason 0x4) active.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import deepgemm_peer  # type: ignore[import-not-found]  # noqa: E402
from bench_gemm import cublas_blockwise_setup, parse_shape, per_tensor_cast_to_fp8, scaled_mm_call  # noqa: E402
from common import env_info  # noqa: E402

import gemmgen  # noqa: E402

# NVML (nvml.h): nvmlDeviceGetTotalEnergyConsumption in mJ since the driver loaded, nvmlDeviceGetPowerUsage in mW,
# nvmlDeviceGetClockInfo with NVML_CLOCK_SM = 1 in MHz, nvmlDeviceGetCurrentClocksEventReasons a bit mask
# (0x4: nvmlClocksEventReasonSwPowerCap).
NVML_CLOCK_SM = 1
SW_POWER_CAP = 0x4


class Nvml:
    def __init__(self, index: int = 0) -> None:
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        assert self.lib.nvmlInit_v2() == 0, "nvmlInit_v2 failed"
        self.handle = ctypes.c_void_p()
        assert self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.handle)) == 0
        reasons = getattr(self.lib, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = reasons or self.lib.nvmlDeviceGetCurrentClocksThrottleReasons

    def energy_mj(self) -> int:
        v = ctypes.c_ulonglong()
        assert self.lib.nvmlDeviceGetTotalEnergyConsumption(self.handle, ctypes.byref(v)) == 0
        return v.value

    def sample(self) -> tuple[int, int, int]:
        clock, power, reasons = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
        self.lib.nvmlDeviceGetClockInfo(self.handle, NVML_CLOCK_SM, ctypes.byref(clock))
        self.lib.nvmlDeviceGetPowerUsage(self.handle, ctypes.byref(power))
        self._reasons(self.handle, ctypes.byref(reasons))
        return clock.value, power.value, reasons.value


def steady(fn: Callable[[], object], seconds: float, nvml: Nvml) -> dict:
    """Run fn back to back for `seconds` (synchronising every 20 calls), sampling NVML every 20 ms meanwhile."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    samples: list[tuple[int, int, int]] = []
    done = threading.Event()

    def sampler() -> None:
        while not done.is_set():
            samples.append(nvml.sample())
            time.sleep(0.02)

    thread = threading.Thread(target=sampler)
    e0, t0, calls = nvml.energy_mj(), time.perf_counter(), 0
    thread.start()
    while time.perf_counter() - t0 < seconds:
        for _ in range(20):
            fn()
        calls += 20
        torch.cuda.synchronize()
    t1, e1 = time.perf_counter(), nvml.energy_mj()
    done.set()
    thread.join()
    clocks = [s[0] for s in samples]
    return {"calls": calls, "seconds": t1 - t0, "joules": (e1 - e0) / 1e3, "samples": len(samples),
            "sm_mhz_mean": sum(clocks) / len(clocks), "sm_mhz_min": min(clocks),
            "power_w_mean_sampled": sum(s[1] for s in samples) / len(samples) / 1e3,
            "capped_share": sum(bool(s[2] & SW_POWER_CAP) for s in samples) / len(samples)}


def impls(m: int, n: int, k: int) -> dict[str, Callable[[], object]]:
    torch.manual_seed(m + n + k)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    b, sb = gemmgen.per_block_cast_to_fp8(w)
    at, sx = per_tensor_cast_to_fp8(x)
    bt, sw = per_tensor_cast_to_fp8(w)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    calls: dict[str, Callable[[], object]] = {
        "gemmgen": lambda: gemmgen.fp8_gemm_nt((a, sa), (b, sb), out),
        "gemmgen_tensor": lambda: gemmgen.fp8_gemm_nt((at, sx), (bt, sw), out, recipe="tensor"),
        "cublaslt_tensorwise": scaled_mm_call(at, bt, sx, sw),
        "cublaslt_blockwise": cublas_blockwise_setup(a, sa, b, sb)[0],
    }
    if deepgemm_peer.loaded():
        calls["deepgemm"] = deepgemm_peer.dense(a, sa, b, sb, torch.empty_like(out))
    return calls


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("shapes", nargs="+", type=parse_shape, help="MxNxK")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--pause", type=float, default=2.0, help="idle seconds before each measurement")
    ap.add_argument("--deepgemm", type=Path, default=None)
    args = ap.parse_args()
    if args.deepgemm is not None:
        deepgemm_peer.load(args.deepgemm)
    nvml = Nvml()
    rows = []
    for m, n, k in args.shapes:
        shape = f"{m}x{n}x{k}"
        calls = impls(m, n, k)
        order = list(calls)
        for r in range(args.rounds):
            for impl in (order if r % 2 == 0 else order[::-1]):
                time.sleep(args.pause)
                res = steady(calls[impl], args.seconds, nvml)
                flops = 2 * m * n * k * res["calls"]
                res.update(shape=shape, impl=impl, round=r, tflops=flops / res["seconds"] / 1e12,
                           watts=res["joules"] / res["seconds"], pj_per_flop=res["joules"] / flops * 1e12)
                rows.append(res)
                print(f"{shape} {impl:20s} r{r}: {res['tflops']:6.0f} TFLOPS {res['watts']:5.0f} W "
                      f"{res['pj_per_flop']:.3f} pJ/FLOP, SM {res['sm_mhz_mean']:.0f} MHz (min {res['sm_mhz_min']}), "
                      f"capped {res['capped_share']:.0%}", flush=True)
                args.out.write_text(json.dumps({"env": env_info(__doc__ or ""), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
