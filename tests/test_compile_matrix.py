"""NVRTC compile matrix over the GPU shape set: every kernel compiles, spills nothing, and its SASS has the
instructions the design needs (QGMMA of the right N, TMA loads/stores, mbarrier SYNCS, setmaxnreg)."""

from __future__ import annotations

import pytest
from shapes import COMPILE_SHAPES, CONFIG_CASES

from gemmgen.ir import H200_SXM, GemmProblem, Kernel, WgmmaShape
from gemmgen.passes import run_pipeline
from gemmgen.sass.parse import parse
from gemmgen.stages import build

Case = tuple[tuple[int, int, int], dict[str, int] | None]


def _distinct_kernels() -> dict[str, Case]:
    seen: dict[str, Case] = {}
    cases: list[Case] = [(s, None) for s in COMPILE_SHAPES] + list(CONFIG_CASES)
    for shape, config in cases:
        forced = tuple(sorted((config or {}).items()))
        name = run_pipeline(Kernel(GemmProblem(*shape), forced=forced), H200_SXM).name
        assert name is not None
        seen.setdefault(name, (shape, config))
    return seen


KERNELS = _distinct_kernels()


@pytest.mark.parametrize("case", list(KERNELS.values()), ids=list(KERNELS))
def test_kernel_compiles_clean(case: Case, settings) -> None:
    shape, config = case
    built = build(GemmProblem(*shape), config, settings=settings)
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
