"""NVRTC through cuda.bindings: CUDA C++ -> PTX + sm_90a cubin, with the ptxas report captured from the log."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from cuda.bindings import nvrtc

# -default-device: no __device__ annotations needed on helpers; ptxas -v puts registers/spills in the log.
# --ptxas-options must be repeated per option (the comma form fails; docs/TOOLCHAIN.md).
BASE_OPTIONS = ("-default-device", "--std=c++17", "-lineinfo", "--ptxas-options=-v")


@dataclass(frozen=True, slots=True)
class PtxasReport:
    registers: int
    spill_stores: int
    spill_loads: int
    stack_frame: int
    static_smem: int

    @staticmethod
    def parse(log: str, kernel_name: str) -> PtxasReport:
        """Pull the ptxas -v lines that belong to `kernel_name` out of the NVRTC log."""
        block = log[log.find(f"Compiling entry function '{kernel_name}'"):] if kernel_name in log else log

        def grab(pattern: str) -> int:
            found = re.search(pattern, block)
            return int(found.group(1)) if found else 0

        return PtxasReport(
            registers=grab(r"Used (\d+) registers"),
            spill_stores=grab(r"(\d+) bytes spill stores"),
            spill_loads=grab(r"(\d+) bytes spill loads"),
            stack_frame=grab(r"(\d+) bytes stack frame"),
            static_smem=grab(r"(\d+) bytes smem"),
        )


def compiler_messages(log: str) -> list[str]:
    """The lines of an NVRTC log a user should see: front-end warnings and ptxas warnings, and ptxas's C7517
    (a wgmma.wait_group the compiler injected: it serializes wgmma, docs/KERNEL_DESIGN.md), each once."""
    keep = []
    for line in log.splitlines():
        text = line.strip()
        if ("warning" in text.lower() or "(C7517)" in text) and text not in keep:
            keep.append(text)
    return keep


@dataclass(frozen=True, slots=True)
class CompileResult:
    ok: bool
    ptx: str
    cubin: bytes
    log: str
    seconds: float
    options: tuple[str, ...]


def nvrtc_version() -> tuple[int, int]:
    err, major, minor = nvrtc.nvrtcVersion()
    _check(err, "nvrtcVersion")
    return int(major), int(minor)


def _check(err: nvrtc.nvrtcResult, what: str) -> None:
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, msg = nvrtc.nvrtcGetErrorString(err)
        raise RuntimeError(f"{what}: {msg.decode()}")


def options_for(arch: str) -> tuple[str, ...]:
    return (f"--gpu-architecture={arch}", *BASE_OPTIONS)


def _read(prog: object, size_fn: object, get_fn: object) -> bytes:
    err, size = size_fn(prog)  # type: ignore[operator]
    _check(err, "size query")
    buf = b" " * size
    (err,) = get_fn(prog, buf)  # type: ignore[operator]
    _check(err, "read")
    return buf


def compile_cuda(source: str, filename: str, arch: str) -> CompileResult:
    """Compile one translation unit. A compile error returns ok=False with the log (never raises for it)."""
    opts = options_for(arch)
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), filename.encode(), 0, [], [])
    _check(err, "nvrtcCreateProgram")
    try:
        start = time.perf_counter()
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        seconds = time.perf_counter() - start
        log = _read(prog, nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog).decode(errors="replace")
        log = log.rstrip("\x00")
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return CompileResult(False, "", b"", log, seconds, opts)
        ptx = _read(prog, nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX).rstrip(b"\x00").decode()
        cubin = _read(prog, nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
        return CompileResult(True, ptx, cubin, log, seconds, opts)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
