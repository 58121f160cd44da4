"""The MoE layer's row kernels (templates/moe_rows.cu): dispatch's cast-and-place and combine's weighted gather,
compiled once per process by NVRTC and launched on torch's current stream through the driver (CUDA-graph capturable
once loaded, as the GEMMs). The torch chains they replace read and write the routed rows several times (bench/NOTES.md
v0.35: 3.4 of a 10.7 ms prefill layer); each of these reads its input once and writes its output once."""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path

import torch

from ..errors import CompileError, GemmgenError
from ..toolchain.nvrtc import compile_cuda
from . import cdriver, driver
from .launch import _current_stream

SOURCE = Path(__file__).resolve().parent.parent / "templates" / "moe_rows.cu"
THREADS = 256  # a block per row: 256 threads x 8 columns per step (moe_rows.cu)
_LOCK = threading.Lock()
_CUBIN: list[bytes] = []
_FUNCTIONS: dict[tuple[str, int], int] = {}
_MODULES: list[object] = []  # loaded modules stay alive with the process
_CONFIGS: dict[tuple[int, int], cdriver.LaunchConfig] = {}  # (grid, stream) -> launch struct, as Launcher keeps them


def _function(name: str, device: int) -> int:
    func = _FUNCTIONS.get((name, device))
    if func is not None:
        return func
    with _LOCK:
        if not _CUBIN:
            result = compile_cuda(SOURCE.read_text(), SOURCE.name, "sm_90a")
            if not result.ok:
                raise CompileError(f"NVRTC failed to compile {SOURCE}:\n{result.log}")
            _CUBIN.append(result.cubin)
        if (name, device) not in _FUNCTIONS:
            if torch.cuda.is_current_stream_capturing():
                raise GemmgenError(f"{name} would be loaded inside a CUDA graph capture: call the layer once before "
                                   "capturing (a warm-up), then capture")
            driver.make_current(device)
            for kernel in ("moe_cast_rows_bf16", "moe_cast_rows_f32", "moe_combine_bf16"):
                module, handle = driver.load_function(_CUBIN[0], kernel, 0)
                _MODULES.append(module)
                _FUNCTIONS[(kernel, device)] = int(handle)
    return _FUNCTIONS[(name, device)]


def _launch(name: str, device: int, grid: int, args: list) -> None:
    if grid == 0:
        return
    func = _function(name, device)
    params = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])
    stream = _current_stream(device)
    cfg = _CONFIGS.get((grid, stream))
    if cfg is None:
        if len(_CONFIGS) > 1024:  # the grid follows the routed rows: many values over a serving run
            _CONFIGS.clear()
        cfg = _CONFIGS[(grid, stream)] = cdriver.launch_config(grid, THREADS, 0, stream, 1)
    code = cdriver.lib().cuLaunchKernelEx(cfg, func, ctypes.addressof(params), None)
    if code:
        raise RuntimeError(f"cuLaunchKernelEx({name}) failed: {cdriver.error_text(code)}")


def rows_fit(x: torch.Tensor) -> bool:
    """A 2-D CUDA tensor whose rows the kernels read 8 elements (16 or 32 bytes) at a time."""
    return (x.is_cuda and x.dim() == 2 and x.stride(-1) == 1 and x.shape[-1] % 8 == 0
            and (x.stride(0) * x.element_size()) % 16 == 0 and x.data_ptr() % 16 == 0)


def cast_rows(x: torch.Tensor, src: torch.Tensor, q: torch.Tensor, s: torch.Tensor) -> None:
    """q[r], s[r] = per_token_cast_to_fp8(x[src[r]]) (bit for bit, as on the GPU) for every row r of q ([R, K] e4m3,
    contiguous) and its scales s ([(G,) R / G, ceil(K/128)] float32, any strides); src int64 [R], -1: a zero row with
    zero scales."""
    name = {torch.bfloat16: "moe_cast_rows_bf16", torch.float32: "moe_cast_rows_f32"}[x.dtype]
    *groups, group_rows, _ = s.shape
    c = ctypes
    _launch(name, x.get_device(), q.shape[0], [
        c.c_void_p(x.data_ptr()), c.c_longlong(x.stride(0)), c.c_void_p(src.data_ptr()), c.c_int(x.shape[1]),
        c.c_void_p(q.data_ptr()), c.c_longlong(q.stride(0)), c.c_void_p(s.data_ptr()), c.c_longlong(s.stride(-2)),
        c.c_longlong(s.stride(-1)), c.c_longlong(max(group_rows, 1)), c.c_longlong(s.stride(0) if groups else 0)])


def combine_rows(y: torch.Tensor, rows: torch.Tensor, weights: torch.Tensor, out: torch.Tensor) -> None:
    """out[t] = sum_j weights[t, j] * y[rows[t, j]] in fp32, rounded to bf16 (rows < 0 add nothing); y and out bf16
    [*, N] with rows_fit, rows int64 and weights float32 [T, k] contiguous."""
    c = ctypes
    _launch("moe_combine_bf16", y.get_device(), out.shape[0], [
        c.c_void_p(y.data_ptr()), c.c_longlong(y.stride(0)), c.c_longlong(y.shape[0]), c.c_void_p(rows.data_ptr()),
        c.c_void_p(weights.data_ptr()), c.c_int(rows.shape[1]), c.c_int(y.shape[1]), c.c_void_p(out.data_ptr()),
        c.c_longlong(out.stride(0))])
