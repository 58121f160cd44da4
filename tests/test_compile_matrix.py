"""NVRTC compile matrix over the GPU shape set: every kernel compiles, spills nothing, and its SASS has the
instructions the design needs (QGMMA of the right N, TMA loads/stores, mbarrier SYNCS, setmaxnreg)."""

from __future__ import annotations

import pytest
from shapes import COMPILE_SHAPES

from gemmgen.ir import H200_SXM, GemmProblem, Kernel, WgmmaShape
from gemmgen.passes import run_pipeline
from gemmgen.sass.parse import parse
from gemmgen.stages import build


def _distinct_kernels() -> dict[str, tuple[int, int, int]]:
    seen: dict[str, tuple[int, int, int]] = {}
    for shape in COMPILE_SHAPES:
        name = run_pipeline(Kernel(GemmProblem(*shape)), H200_SXM).name
        assert name is not None
        seen.setdefault(name, shape)
    return seen


KERNELS = _distinct_kernels()


@pytest.mark.parametrize("shape", list(KERNELS.values()), ids=list(KERNELS))
def test_kernel_compiles_clean(shape: tuple[int, int, int], settings) -> None:
    built = build(GemmProblem(*shape), settings=settings)
    res = built.resources
    assert (res.spill_stores, res.spill_loads, res.stack_frame) == (0, 0, 0), f"spills: {res}"
    instrs = parse(built.sass)
    ops = {i.opcode for i in instrs}
    bases = {i.base_opcode for i in instrs}
    assert WgmmaShape(built.config.block_n).sass_opcode in ops, "expected QGMMA of the tile's N"
    for needed in ("UTMALDG", "UTMASTG", "SYNCS", "USETMAXREG", "WARPGROUP"):
        assert needed in bases, f"{needed} missing from the SASS"
    assert not bases & {"LDL", "STL"}, "local memory traffic in the SASS"
    if built.config.cluster > 1:
        assert any(op.startswith("UTMALDG.2D.MULTICAST") for op in ops), "multicast config without multicast TMA"
    ffma = sum(i.base_opcode == "FFMA" for i in instrs)
    assert ffma >= built.config.block_n // 2 * built.config.waves, "promotion FFMAs missing"
