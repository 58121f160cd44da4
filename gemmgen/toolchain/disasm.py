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


def sass(cubin: Path) -> str:
    """The cubin's SASS, each instruction with both 64-bit words of its encoding: `nvdisasm -c -hex -ndf`.

    nvdisasm directly, without its dataflow pass (-ndf: branch targets are then printed as labels only where the
    listing knows them), takes 0.21 s on a 4096x7168x16384 kernel where `cuobjdump -sass` takes 0.28 s (2-core
    build box): a third of a cold `gemmgen build`."""
    return _run([find_tool("nvdisasm"), "-c", "-hex", "-ndf", str(cubin)])


def resource_usage(cubin: Path) -> str:
    """`cuobjdump --dump-resource-usage`: REG/STACK/SHARED/LOCAL per function."""
    return _run([find_tool("cuobjdump"), "--dump-resource-usage", str(cubin)])
