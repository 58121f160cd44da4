"""Where the launcher's CPU time goes: per-call microseconds of each piece of the fp8_gemm_nt path, measured as
the enqueue loop's wall time (no sync inside; 200 calls stay below the launch-queue depth), plus the three cases of
the targets' host table (same tensors, new pointers every call, row-major SA with new pointers) and, beside them,
new pointers through the general launcher (Launcher.launch: the path before DenseCall). The device's host varies
by tens of percent from one loop to the next (bench/NOTES.md v0.9), so every case and piece is measured in ROUNDS
interleaved rounds; the median and the minimum over the rounds are reported.

    PYTHONPATH=. python bench/host_overhead.py 64x7168x2048 [--json out.json]
"""

from __future__ import annotations

import ctypes
import json
import statistics
import sys
import time

import torch

import gemmgen
from gemmgen.runtime import cdriver, validate

CALLS = 200
SETS = 100
ROUNDS = 15


def per_call_us(fn, calls: int = CALLS) -> float:
    fn(0)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(calls):
        fn(i)
    elapsed = time.perf_counter() - t0
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def _general(launcher, a, b, out):
    """fp8_gemm_nt's fast path before DenseCall: the flat checks, then the general launcher (dicts and its block)."""
    fast = validate.fast_dense(a, b, out)
    return launcher.launch(*validate.fast_dense_operands(a, b, out, fast))


def main() -> None:
    m, n, k = (int(v) for v in sys.argv[1].split("x"))
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    sets = []
    for _ in range(SETS):  # new pointers: activations, their scales and the output differ on every call
        a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
        sets.append((a, sa, sa.contiguous(), torch.empty(m, n, device="cuda", dtype=torch.bfloat16)))
    a, sa, _, out = sets[0]
    target = gemmgen.api.device_target(0)
    kern = gemmgen.get_kernel(m, n, k, target)
    launcher = kern.launcher
    gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)  # creates the call's DenseCall (and loads the kernel)
    tensors, env = validate.check_dense(a, sa, b, sb, out)
    device = out.get_device()
    func = launcher._function(device)
    block = launcher._blocks[device]
    cfg = launcher._launch_config(m, 1, torch.cuda.current_stream().cuda_stream)
    cases = {
        "same_tensors": lambda i: gemmgen.fp8_gemm_nt((a, sa), (b, sb), out),
        "new_pointers": lambda i: gemmgen.fp8_gemm_nt((sets[i % SETS][0], sets[i % SETS][1]), (b, sb),
                                                      sets[i % SETS][3]),
        "row_major_sa": lambda i: gemmgen.fp8_gemm_nt((sets[i % SETS][0], sets[i % SETS][2]), (b, sb),
                                                      sets[i % SETS][3]),
        "new_pointers, general launcher": lambda i: _general(launcher, (sets[i % SETS][0], sets[i % SETS][1]),
                                                             (b, sb), sets[i % SETS][3]),
    }
    small = torch.zeros(16, device="cuda")
    fast = validate.fast_dense((a, sa), (b, sb), out)
    dense_call = gemmgen.api._FAST_CALLS[fast[:4]]
    fasts = [validate.fast_dense((s[0], s[1]), (b, sb), s[3]) for s in sets]
    legacy = cdriver.lib().cuLaunchKernel  # the launch without the Ex config (timed where the kernel has no cluster)
    legacy.restype = ctypes.c_int
    legacy.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    la = kern.launcher.plan.launch
    stream = torch.cuda.current_stream().cuda_stream
    pieces = {
        "validate.fast_dense": lambda i: validate.fast_dense((a, sa), (b, sb), out),
        "validate.check_dense": lambda i: validate.check_dense(a, sa, b, sb, out),
        "get_kernel lookup": lambda i: gemmgen.get_kernel(m, n, k, target),
        "launcher.launch (checked args, same pointers)": lambda i: launcher.launch(tensors, env),
        "ParamBlock.fill (same pointers)": lambda i: block.fill(tensors, env, "x"),
        "ParamBlock.fill (new A and D maps)": lambda i: block.fill(
            {**tensors, "a": sets[i % SETS][0], "out": sets[i % SETS][3]}, env, "x"),
        "DenseCall (checked args, new pointers)": lambda i: dense_call(fasts[i % SETS], (sets[i % SETS][0],
                                                                                         sets[i % SETS][1]),
                                                                         (b, sb), sets[i % SETS][3]),
        "cuLaunchKernelEx, the block's slots (DenseCall's)": lambda i: cdriver.lib().cuLaunchKernelEx(
            dense_call.cfg, dense_call.func, dense_call.array_address, None),
        "cuLaunchKernelEx via ctypes": lambda i: cdriver.lib().cuLaunchKernelEx(cfg, func, block.array_address,
                                                                                 None),
        "raw stream getter": lambda i: torch._C._cuda_getCurrentRawStream(0),
        "torch floor: small.add_(1) (one torch kernel launch)": lambda i: small.add_(1),
        "python floor: an empty lambda": lambda i: None,
    }
    if la.cluster == 1:  # cuLaunchKernel takes no cluster dimensions
        pieces["cuLaunchKernel via ctypes (no Ex config)"] = lambda i: legacy(
            func, la.grid(m, 1), 1, 1, la.threads, 1, 1, la.dynamic_smem, stream, block.array_address, None)
    templates = [t.ok for t in block.map_cache._templates.values()]
    print(f"tensor-map templates verified against the driver: {templates}", flush=True)
    result = {"shape": sys.argv[1], "kernel": kern.name, "rounds": ROUNDS, "cases": {}, "pieces": {},
              "cases_min": {}, "pieces_min": {}, "templates_ok": templates}
    everything = {**{("cases", k): v for k, v in cases.items()}, **{("pieces", k): v for k, v in pieces.items()}}
    samples: dict = {key: [] for key in everything}
    for _ in range(ROUNDS):
        for key, fn in everything.items():
            samples[key].append(per_call_us(fn))
    for (group, name), values in samples.items():
        result[group][name] = statistics.median(values)
        result[f"{group}_min"][name] = min(values)
        print(f"{'  ' if group == 'pieces' else ''}{name:46s} {statistics.median(values):7.2f} us per call (median), "
              f"{min(values):6.2f} (min)", flush=True)
    if "--json" in sys.argv:
        path = sys.argv[sys.argv.index("--json") + 1]
        with open(path, "a") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
