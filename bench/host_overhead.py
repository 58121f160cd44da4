"""Where the launcher's CPU time goes: per-call microseconds of each piece of the fp8_gemm_nt path, measured as
the enqueue loop's wall time (no sync inside; 300 calls stay below the launch-queue depth).

    PYTHONPATH=. python bench/host_overhead.py 64x2112x7168
"""

from __future__ import annotations

import sys
import time

import torch
from cuda.bindings import driver as drv

import gemmgen
from gemmgen.quant import tma_aligned_scales
from gemmgen.runtime import validate

CALLS = 300


def per_call_us(fn) -> float:
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(CALLS):
        fn()
    elapsed = time.perf_counter() - t0
    torch.cuda.synchronize()
    return elapsed / CALLS * 1e6


def main() -> None:
    m, n, k = (int(v) for v in sys.argv[1].split("x"))
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    target = gemmgen.api.device_target(0)
    kern = gemmgen.get_kernel(m, n, k, target)
    launcher = kern.launcher
    launcher(a, sa, b, sb, out)
    tensors, env = validate.check_dense(a, sa, b, sb, out)
    params = launcher._packed_args(tensors, env)
    stream = torch.cuda.current_stream().cuda_stream
    cfg = launcher._launch_config(launcher.plan.launch.grid(m, 1), stream)
    func = launcher._function(0)
    pieces = {
        "fp8_gemm_nt (whole call)": lambda: gemmgen.fp8_gemm_nt((a, sa), (b, sb), out),
        "BuiltKernel.launcher.launch (no checks)": lambda: launcher.launch(tensors, env),
        "validate.check_dense": lambda: validate.check_dense(a, sa, b, sb, out),
        "get_kernel lookup": lambda: gemmgen.get_kernel(m, n, k, target),
        "tma_aligned_scales (aligned input)": lambda: tma_aligned_scales(sa),
        "packed-args lookup": lambda: launcher._packed_args(tensors, env),
        "torch.cuda.current_stream": lambda: torch.cuda.current_stream(a.device).cuda_stream,
        "raw stream getter": lambda: torch._C._cuda_getCurrentRawStream(0),
        "cuLaunchKernelEx (cached cfg + params)": lambda: drv.cuLaunchKernelEx(cfg, func, params, 0),
    }
    for name, fn in pieces.items():
        print(f"{name:42s} {per_call_us(fn):7.2f} us", flush=True)


if __name__ == "__main__":
    main()
