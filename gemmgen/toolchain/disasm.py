"""Disassemble cubins to SASS with the NVIDIA wheels' cuobjdump/nvdisasm, found through cuda.pathfinder."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ..errors import ToolNotFoundError


def find_tool(name: str) -> str:
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
    except ImportError as exc:  # pragma: no cover - cuda-pathfinder comes with cuda-bindings
        raise ToolNotFoundError(f"{name}: cuda.pathfinder is not importable ({exc})") from exc
    path = find_nvidia_binary_utility(name)
    if not path:
        raise ToolNotFoundError(f"{name} not found: install the nvidia-cuda-nvdisasm and nvidia-cuda-cuobjdump "
                                "wheels (pip install -e .)")
    return str(path)


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr.strip()}")
    return proc.stdout


def cuobjdump_sass(cubin: Path) -> str:
    """`cuobjdump -sass`: one instruction per line with its encoding (needs nvdisasm beside it)."""
    return _run([find_tool("cuobjdump"), "-sass", str(cubin)])


def resource_usage(cubin: Path) -> str:
    """`cuobjdump --dump-resource-usage`: REG/STACK/SHARED/LOCAL per function."""
    return _run([find_tool("cuobjdump"), "--dump-resource-usage", str(cubin)])
