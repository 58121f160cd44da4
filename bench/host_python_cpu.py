"""CPU harness (no GPU): the per-call Python cost of gemmgen.fp8_gemm_nt up to, not including, the launch, through
the full checks and through validate.fast_dense. The device checks are stubbed (CPU tensors stand in for CUDA ones)
and the kernel is a stand-in whose launch returns at once.

    PYTHONPATH=. python bench/host_python_cpu.py [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import itertools
import pstats
import time
import types

import torch

import gemmgen
from gemmgen import api
from gemmgen.ir import DType, GemmKind, ScaleRecipe
from gemmgen.runtime import validate

CALLS = 20000


def _cpu_on_gpu(a, tma, pointers, gathered=None) -> None:
    """validate._on_gpu without its device-type test."""
    index = a.get_device()
    for x in tma.values():
        if x.get_device() != index or not x.is_contiguous() or x.data_ptr() % 16:
            raise ValueError("tma operand")
    for x in (*pointers.values(), *(gathered or {}).values()):
        if x.get_device() != index:
            raise ValueError("device")
    for x in pointers.values():
        if not x.is_contiguous():
            raise ValueError("pointer operand")


def per_call_us(fn) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(CALLS):
            fn()
        best = min(best, (time.perf_counter() - start) / CALLS * 1e6)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--launch", action="store_true", help="also time Launcher.launch (driver calls stubbed)")
    args = ap.parse_args()
    validate.driver.require_gpu = lambda: None
    validate._on_gpu = _cpu_on_gpu
    m, n, k = 64, 7168, 2048
    a = torch.empty(m, k, dtype=torch.float8_e4m3fn)
    b = torch.empty(n, k, dtype=torch.float8_e4m3fn)
    sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k))[1]
    sb = torch.empty((n + 127) // 128, (k + 127) // 128)
    out = torch.empty(m, n, dtype=torch.bfloat16)
    stand_in = types.SimpleNamespace(launcher=types.SimpleNamespace(launch=lambda tensors, env: tensors["out"]))
    api._DEFAULT_KERNELS[(GemmKind.NORMAL, m, n, k, 1, -1, DType.BF16, False, DType.E4M3, DType.E4M3,
                          ScaleRecipe.A1x128_B128x128, False)] = stand_in  # the last: with_pdl
    api._FAST_CALLS[(m, n, k, -1)] = lambda fast, a_, b_, out_: out_  # type: ignore[assignment]

    def call() -> torch.Tensor:
        return gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)

    assert call() is out
    print(f"full checks (CPU tensors miss the fast path): {per_call_us(call):.2f} us per call")
    validate.fast_dense = functools.partial(validate.fast_dense, cuda=False)
    assert call() is out
    print(f"fast path: {per_call_us(call):.2f} us per call")
    if args.launch:
        call = _real_launcher(m, n, k, a, sa, b, sb, out)
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(lambda: [call() for _ in range(CALLS)])
        pstats.Stats(profile).sort_stats("tottime").print_stats(12)


def _real_launcher(m, n, k, a, sa, b, sb, out):
    """The real kernel's DenseCall (the fast path's parameter block, map templates, launch config) with the three driver
    touch points stubbed: the module load, the stream handle and cuLaunchKernelEx (a Python no-op here: the real
    ctypes call adds ~1 us of ctypes marshalling plus the driver's own time). Maps come from a MapTemplate with
    a made-up template (no driver to learn one from)."""
    from gemmgen.ir import preset
    from gemmgen.runtime import cdriver, launch

    built = gemmgen.get_kernel(m, n, k, preset("h200"))
    launcher = launch.Launcher(built)
    launcher._functions[-1] = 1
    launcher._blocks[-1] = launch.ParamBlock(built.kernel.plan, launcher._map_cache)
    launcher._launch_fn = lambda cfg, func, params, extra: 0
    launch._current_stream = lambda index: 0

    templates: dict = {}

    def template(self, i, encoder, m_, env):
        key = (i, env["m"], env["g"], env.get("k", 0))  # as MapCache.template's key
        if key not in templates:
            t = templates[key] = cdriver.MapTemplate.__new__(cdriver.MapTemplate)
            t.ok, t.word, t.shift = True, 1, 4
            t.bytes = launch.ctypes.create_string_buffer(192)
            t._base = (launch.ctypes.addressof(t.bytes) + 63) // 64 * 64
        return templates[key]
    launch.MapCache.template = template
    for key in api._DEFAULT_KERNELS:
        api._DEFAULT_KERNELS[key] = types.SimpleNamespace(launcher=launcher)
    api._FAST_CALLS[(m, n, k, -1)] = launch.DenseCall(launcher, m, -1)
    sets = [(a.clone(), sa.clone(), out.clone()) for _ in range(100)]

    def same():
        return gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)
    cycle = itertools.cycle(sets)

    def rotating():
        x, s, o = next(cycle)
        return gemmgen.fp8_gemm_nt((x, s), (b, sb), o)
    same()
    print(f"fast path + Launcher.launch, same tensors: {per_call_us(same):.2f} us per call")
    print(f"fast path + Launcher.launch, 100 rotating sets: {per_call_us(rotating):.2f} us per call")
    return rotating


if __name__ == "__main__":
    main()
