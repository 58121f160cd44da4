"""Where the driver's part of a gemmgen call goes: cuLaunchKernelEx of one kernel timed in an enqueue loop (as
bench/host_overhead.py), in forms that differ in one thing each, interleaved over ROUNDS rounds in one process:

- typed: the launcher's call today (lib()'s argument types, the config struct and two ints converted per call);
- raw: the same call with ready ctypes arguments (no argument types, nothing converted);
- extra: the parameters as one buffer (CU_LAUNCH_PARAM_BUFFER_POINTER) instead of the pointer array, where the
  driver's parameter offsets (cuFuncGetParamInfo) are the block's;
- gil: `raw` through a PyDLL function object (the GIL kept across the call);
- side stream / per-thread stream: `raw` on a torch side stream and on CU_STREAM_PER_THREAD instead of the current
  (legacy default) stream;
- tiny kernel: `raw` for a kernel with one int parameter and 32 threads (the driver's floor for any launch);
- and, for scale, gemmgen.fp8_gemm_nt with new pointers and torch's small.add_(1).
Also the per-call cost of the torch tensor attributes validate.fast_dense reads, on this host's Python.

    PYTHONPATH=. python bench/launch_probe.py 64x7168x2048 [--json out.json]
"""

from __future__ import annotations

import ctypes
import json
import statistics
import sys
import timeit
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from host_overhead import ROUNDS, SETS, per_call_us  # type: ignore[import-not-found]  # noqa: E402

import gemmgen  # noqa: E402
from gemmgen.runtime import cdriver, driver, launch  # noqa: E402
from gemmgen.toolchain.nvrtc import compile_cuda  # noqa: E402

CU_STREAM_PER_THREAD = 0x2  # cuda.h
PARAM_BUFFER_POINTER, PARAM_BUFFER_SIZE, PARAM_END = 1, 2, 0  # cuda.h: CU_LAUNCH_PARAM_*

TINY = 'extern "C" __global__ void tiny(int x) { if (x == 12345 && threadIdx.x == 0) asm volatile("trap;"); }'


def param_offsets(func: int, count: int) -> list[tuple[int, int]] | None:
    drv = driver._driver()
    if not hasattr(drv, "cuFuncGetParamInfo"):
        return None
    out = []
    for i in range(count):
        err, offset, size = drv.cuFuncGetParamInfo(drv.CUfunction(func), i)
        if int(err):
            return None
        out.append((int(offset), int(size)))
    return out


def main() -> None:
    m, n, k = (int(v) for v in sys.argv[1].split("x"))
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    sets = []
    for _ in range(SETS):
        a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
        sets.append((a, sa, torch.empty(m, n, device="cuda", dtype=torch.bfloat16)))
    a, sa, out = sets[0]
    gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)  # the kernel loaded, its DenseCall made
    kern = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0))
    launcher = kern.launcher
    dense = next(iter(gemmgen.api._FAST_CALLS.values()))
    block = dense.block
    slots, size = launch.block_layout(launcher.plan)
    func = dense.func
    base = (ctypes.addressof(block._raw) + 63) // 64 * 64  # ParamBlock's 64-byte aligned start
    got = param_offsets(func, len(slots))
    want = [(s.offset, launch._SIZE_ALIGN[s.kind][0]) for s in slots]
    print(f"driver parameter offsets {got}\nblock's                  {want}", flush=True)
    la = launcher.plan.launch
    stream0 = torch.cuda.current_stream().cuda_stream
    side = torch.cuda.Stream()
    cfgs = {name: cdriver.launch_config(la.grid(m, 1), la.threads, la.dynamic_smem, s, la.cluster, la.pdl)
            for name, s in (("current", stream0), ("side", side.cuda_stream), ("per_thread", CU_STREAM_PER_THREAD))}
    typed = cdriver.lib().cuLaunchKernelEx
    raw = ctypes.CDLL("libcuda.so.1")["cuLaunchKernelEx"]
    raw.restype = ctypes.c_int
    gil = ctypes.PyDLL("libcuda.so.1")["cuLaunchKernelEx"]
    gil.restype = ctypes.c_int
    fp, pp = ctypes.c_void_p(func), ctypes.c_void_p(block.array_address)
    refs = {name: ctypes.byref(c) for name, c in cfgs.items()}
    size_v = ctypes.c_size_t(size)
    extra = (ctypes.c_void_p * 5)(PARAM_BUFFER_POINTER, base, PARAM_BUFFER_SIZE, ctypes.addressof(size_v), PARAM_END)
    xp = ctypes.c_void_p(ctypes.addressof(extra))

    tiny = compile_cuda(TINY, "tiny.cu", "sm_90a")
    assert tiny.ok, tiny.log
    _mod, tfunc = driver.load_function(tiny.cubin, "tiny", 0)
    tcfg = cdriver.launch_config(1, 32, 0, stream0, 1, False)
    tx = ctypes.c_int(0)
    targs = (ctypes.c_void_p * 1)(ctypes.addressof(tx))
    tref, tfp, tpp = ctypes.byref(tcfg), ctypes.c_void_p(int(tfunc)), ctypes.c_void_p(ctypes.addressof(targs))
    small = torch.zeros(16, device="cuda")

    def check(code: int) -> None:
        if code:
            raise RuntimeError(f"launch failed: {cdriver.error_text(code)}")

    cases = {
        "fp8_gemm_nt, new pointers": lambda i: gemmgen.fp8_gemm_nt((sets[i % SETS][0], sets[i % SETS][1]), (b, sb),
                                                                   sets[i % SETS][2]),
        "typed (today)": lambda i: typed(cfgs["current"], func, block.array_address, None),
        "raw": lambda i: raw(refs["current"], fp, pp, None),
        "gil held (PyDLL)": lambda i: gil(refs["current"], fp, pp, None),
        "raw, side stream": lambda i: raw(refs["side"], fp, pp, None),
        "raw, per-thread stream": lambda i: raw(refs["per_thread"], fp, pp, None),
        "tiny kernel, raw": lambda i: raw(tref, tfp, tpp, None),
        "torch small.add_(1)": lambda i: small.add_(1),
    }
    if got == want:
        cases["extra (one parameter buffer)"] = lambda i: raw(refs["current"], fp, None, xp)
    for name, fn in cases.items():  # each form launches without an error once before timing
        if name.startswith(("typed", "raw", "gil", "tiny", "extra")):
            check(fn(0))
    torch.cuda.synchronize()
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(ROUNDS):
        for name, fn in cases.items():
            samples[name].append(per_call_us(fn))
    result = {"shape": sys.argv[1], "kernel": kern.name, "rounds": ROUNDS, "param_offsets_driver": got,
              "param_offsets_block": want, "median_us": {}, "min_us": {}, "attr_ns": {}}
    for name, values in samples.items():
        result["median_us"][name] = statistics.median(values)
        result["min_us"][name] = min(values)
        print(f"{name:34s} {statistics.median(values):7.2f} us per call (median), {min(values):6.2f} (min)",
              flush=True)
    g = {"x": a, "T": torch.Tensor}
    for expr in ("x.dtype", "x.shape", "x.get_device()", "x.is_cuda", "x.is_contiguous()", "x.data_ptr()",
                 "x.stride()", "isinstance(x, T)"):
        ns = min(timeit.repeat(expr, globals=g, number=100000, repeat=5)) / 100000 * 1e9
        result["attr_ns"][expr] = ns
        print(f"  {expr:24s} {ns:6.1f} ns", flush=True)
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "a") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
