"""gemmgen's exceptions: each carries what a user needs to act on it."""

from __future__ import annotations

from pathlib import Path


class GemmgenError(Exception):
    """Base class."""


class IllegalConfigError(GemmgenError, ValueError):
    """A schedule breaks one or more rules of `legality.check`; all of them are listed."""

    def __init__(self, kernel_desc: str, violations: list[str]):
        self.violations = list(violations)
        body = "\n".join(f"  - {v}" for v in self.violations)
        super().__init__(f"illegal config for {kernel_desc}:\n{body}")


class CompileError(GemmgenError):
    """NVRTC rejected a generated kernel: the log, the source path and a one-line repro."""

    def __init__(self, name: str, source_path: Path, log: str, repro: str):
        self.source_path = source_path
        self.log = log
        super().__init__(f"NVRTC failed to compile {name}\n  source: {source_path}\n  repro:  {repro}\n"
                         f"--- compiler log ---\n{log.strip()}")


class NoGpuError(GemmgenError, RuntimeError):
    """A launch was asked for on a machine where the CUDA driver finds no GPU (building still works)."""


class ToolNotFoundError(GemmgenError, RuntimeError):
    """A disassembler (nvdisasm / cuobjdump) could not be located."""
