"""NVRTC compile matrix over the GPU shape set, dense and grouped: every kernel compiles, spills nothing, and its
SASS has the instructions the design needs (QGMMA of the right N, TMA loads/stores, mbarrier SYNCS, setmaxnreg)."""

from __future__ import annotations

import pytest
from shapes import (
    BF16_CASES,
    BF16_GROUPED_CASES,
    BF16_MASKED_CASES,
    COMPILE_SHAPES,
    CONFIG_CASES,
    E5M2_CASES,
    FP32_OUT_CASES,
    GROUPED_CONTIGUOUS_CASES,
    GROUPED_MASKED_CASES,
    K_GROUPED_CASES,
    RECIPE_CASES,
    WGRAD_CASES,
)

from gemmgen import __version__
from gemmgen.codegen.render import render
from gemmgen.ir import (
    CONTIGUOUS_ALIGNMENT,
    H200_SXM,
    DType,
    GemmKind,
    GemmProblem,
    Kernel,
    ScaleRecipe,
    WgmmaShape,
)
from gemmgen.passes import run_pipeline
from gemmgen.sass.parse import parse, wgmma_waits
from gemmgen.stages import build

Case = tuple[GemmProblem, dict[str, int] | None]


def _grouped_cases() -> list[Case]:
    cases: list[Case] = []
    for groups, expected, n, k, config in GROUPED_CONTIGUOUS_CASES:
        m_total = groups * -(-expected // CONTIGUOUS_ALIGNMENT) * CONTIGUOUS_ALIGNMENT
        cases.append((GemmProblem(m_total, n, k, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=groups), config))
    for groups, expected, n, k, config in BF16_GROUPED_CASES:
        m_total = groups * -(-expected // CONTIGUOUS_ALIGNMENT) * CONTIGUOUS_ALIGNMENT
        cases.append((GemmProblem(m_total, n, k, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=groups,
                                  a_dtype=DType.BF16, b_dtype=DType.BF16, scales=ScaleRecipe.NONE), config))
    for groups, _m_max, expected, n, k, config in GROUPED_MASKED_CASES:
        cases.append((GemmProblem(expected, n, k, kind=GemmKind.M_GROUPED_MASKED, groups=groups), config))
    for groups, _m_max, expected, n, k, config in BF16_MASKED_CASES:
        cases.append((GemmProblem(expected, n, k, kind=GemmKind.M_GROUPED_MASKED, groups=groups, a_dtype=DType.BF16,
                                  b_dtype=DType.BF16, scales=ScaleRecipe.NONE), config))
    for groups, m, n, k, acc, config in K_GROUPED_CASES:
        cases.append((GemmProblem(m, n, k, kind=GemmKind.K_GROUPED, groups=groups, out_dtype=DType.FP32,
                                  accumulate=acc, scales=ScaleRecipe.A1x128_B1x128), config))
    return cases


def _distinct_kernels() -> dict[str, Case]:
    seen: dict[str, Case] = {}
    cases: list[Case] = [(GemmProblem(*s), None) for s in COMPILE_SHAPES]
    cases += [(GemmProblem(*s), c) for s, c in CONFIG_CASES] + _grouped_cases()
    cases += [(GemmProblem(*s, out_dtype=DType.FP32, accumulate=acc), c) for s, acc, c in FP32_OUT_CASES]
    cases += [(GemmProblem(*s, a_dtype=DType(a), b_dtype=DType(b)), None) for s, a, b in E5M2_CASES]
    cases += [(GemmProblem(*s, scales=ScaleRecipe(r), out_dtype=DType(o)), c) for s, r, o, c in RECIPE_CASES]
    cases += [(GemmProblem(*s, a_dtype=DType.BF16, b_dtype=DType.BF16, scales=ScaleRecipe.NONE, out_dtype=DType(o),
                           accumulate=acc), c) for s, o, acc, c in BF16_CASES]
    cases += [(GemmProblem(*s, out_dtype=DType.FP32, accumulate=acc, scales=ScaleRecipe.A1x128_B1x128,
                           a_dtype=DType(a), b_dtype=DType(b)), c) for s, acc, c, (a, b) in WGRAD_CASES]
    for problem, config in cases:
        forced = tuple(sorted((config or {}).items()))
        name = run_pipeline(Kernel(problem, forced=forced), H200_SXM).name
        assert name is not None
        seen.setdefault(name, (problem, config))
    return seen


KERNELS = _distinct_kernels()


def test_matrix_holds_every_scheduler() -> None:
    assert {p.kind for p, _ in KERNELS.values()} == set(GemmKind)


def test_matrix_holds_every_grouped_recipe() -> None:
    from gemmgen.ir.problem import GROUPED_RECIPES
    held = {(p.kind, p.scales) for p, _ in KERNELS.values()}
    assert {(kind, r) for kind, recipes in GROUPED_RECIPES.items() for r in recipes} <= held


def test_matrix_holds_every_implemented_recipe() -> None:
    from gemmgen.ir.problem import IMPLEMENTED_RECIPES
    assert {p.scales for p, _ in KERNELS.values()} == set(IMPLEMENTED_RECIPES)


@pytest.mark.parametrize("case", list(KERNELS.values()), ids=list(KERNELS))
def test_kernel_compiles_clean(case: Case, settings) -> None:
    problem, config = case
    built = build(problem, config, settings=settings)
    res = built.resources
    assert (res.spill_stores, res.spill_loads, res.stack_frame) == (0, 0, 0), f"spills: {res}"
    instrs = parse(built.sass)
    ops = {i.opcode for i in instrs}
    bases = {i.base_opcode for i in instrs}
    shape = WgmmaShape(built.config.wgmma_n, problem.a_dtype.value, problem.b_dtype.value)
    assert shape.sass_opcode in ops, f"expected {shape.sass_opcode}"
    store = "UTMAREDG" if problem.accumulate else "UTMASTG"  # accumulate: the TMA store is a reduce-add
    for needed in ("UTMALDG", store, "SYNCS", "USETMAXREG", "WARPGROUP"):
        assert needed in bases, f"{needed} missing from the SASS"
    assert not bases & {"LDL", "STL"}, "local memory traffic in the SASS"
    if built.config.cluster > 1:
        assert any(op.startswith("UTMALDG.2D.MULTICAST") for op in ops), "multicast config without multicast TMA"
    # wgmma groups stay asynchronous: at most one full wait per group of BLOCK_K/32 QGMMAs. ptxas waits after every
    # QGMMA when it cannot prove the tile loop warp-uniform (seen with NVRTC 13.0: 12 waits for 12 QGMMAs).
    waits = wgmma_waits(instrs)
    full_waits = waits.full
    # the design's bound: at most one full wait per group of a k-block's 32-byte steps (stricter than `serialized`)
    per_group = built.config.block_k * problem.a_dtype.bytes // 32
    assert full_waits * per_group <= waits.mma, f"wgmma serialized: {waits}"
    assert not built.meta["wgmma_waits"]["serialized"] and built.meta["wgmma_waits"]["full"] == full_waits
    # two sets: a group stays in flight through each promotion (where a tile has a second step to issue ahead)
    if built.config.acc_sets == 2 and problem.scales.promotes and built.kernel.plan.k_steps >= 2:
        assert waits.in_flight, "two accumulator sets but no wgmma wait that leaves a group in flight"
    ffma = sum(i.base_opcode == "FFMA" for i in instrs)
    if problem.scales.promotes:
        assert ffma >= built.config.block_n // 2 * built.config.waves, "promotion FFMAs missing"
    else:  # whole-K accumulation: no promotion, and one group in flight (a single wait inside the k-block loop)
        assert ffma == 0, f"{ffma} FFMAs in a kernel without promotion"
        assert full_waits <= 2 * built.config.k_splits, f"{full_waits} full wgmma waits: the groups serialize"
    # Compiler warnings surface in meta.json (and the build summary); the templates must not produce any.
    assert not [m for m in built.meta["compiler_messages"] if "warning" in m.lower()], built.meta["compiler_messages"]
    if not problem.accumulate:
        assert "UTMAREDG" not in bases, "a TMA reduce in a kernel that overwrites D"
    # the row-predicated store of partial tiles goes to global memory directly
    if problem.kind in (GemmKind.M_GROUPED_CONTIGUOUS, GemmKind.M_GROUPED_MASKED):
        assert "STG" in bases, "grouped kernel without the row-predicated global stores"
        # one 4-byte bf16-pair store per 8-column group, half-row and wave of a thread (epilogue.cu.j2)
        stores = sum(i.base_opcode == "STG" for i in instrs)
        assert stores >= built.config.wgmma_n // 8 * 2 * built.config.waves, f"{stores} STG: row stores missing"
    if problem.scales is ScaleRecipe.A1x128_B1x128:
        _check_column_scales(built, instrs)


def _check_column_scales(built, instrs) -> None:
    """1x128/1x128: per promoted k-block, one 8-byte shared load of B-scale pairs per 8-column group (per wave where
    the promotion loads them; once at the issue where they are early) and an FMUL (sa * sb) per accumulator; the SB
    gather's 4-byte cp.async (LDGSTS) and the SFB TMA load are both there."""
    groups = built.config.block_n // 8
    counts = {op: sum(i.opcode == op for i in instrs) for op in ("LDS.64", "FMUL")}
    loads = groups * (1 if built.kernel.plan.early_column_scales else built.config.waves)
    assert counts["LDS.64"] >= loads, f"B-scale pair loads missing: {counts}"
    assert counts["FMUL"] >= 4 * groups * built.config.waves, f"sa * sb products missing: {counts}"
    assert sum(i.base_opcode == "LDGSTS" for i in instrs) >= 8 + 4, "the SB (8 columns) and SA gathers' cp.async"
    assert "tmap_sfb" in built.cu and "ld_shared_v2_f32" in built.cu
    # plan.early_column_scales: a k-block's scale pairs are loaded while its wgmma group runs (between the group's
    # QGMMAs and its wait), else after the wait, by the promotion
    running, during = False, 0
    for i in instrs:
        if i.base_opcode == "QGMMA":
            running = True
        elif i.opcode.startswith("WARPGROUP.DEPBAR"):
            running = False
        elif running and i.opcode == "LDS.64":
            during += 1
    if built.kernel.plan.early_column_scales:
        assert during >= groups, f"{during} B-scale pair loads while a group runs, expected >= {groups}"
    else:
        assert during == 0, f"{during} B-scale pair loads before the wait in a late-scale kernel"


# What a PDL kernel may do before griddepcontrol.wait: read its parameters (pointers are copied into Params, never
# dereferenced) and cluster rank, prefetch its tensor maps (kernel parameters), set up its barriers and sync. Anything
# that touches a tensor, and every scheduler (a grouped one reads group sizes or expert indices), comes after.
BEFORE_WAIT_FORBIDDEN = ("tma_load", "tma_store", "__ldg", "cp_async", "ld.global", "st.global", "red.global",
                         "atom", "Scheduler ", "params.sfa[", "params.sfb[", "masked_m[", "m_indices[")


@pytest.mark.parametrize("case", list(KERNELS.values()), ids=list(KERNELS))
def test_pdl_render_touches_no_tensor_before_the_wait(case: Case) -> None:
    """Every distinct kernel of the matrix, rendered with pdl=1: one wait, after the barrier set-up, before any
    global read or write or scheduler (a grouped one reads group sizes); one trigger, in the TMA thread's branch after
    its tile loop (bench/NOTES.md v0.20)."""
    problem, config = case
    kernel = run_pipeline(Kernel(problem, forced=tuple(sorted({**(config or {}), "pdl": 1}.items()))), H200_SXM)
    assert kernel.name is not None and kernel.name.endswith("_pdl")
    text = render(kernel, __version__)
    body = text[text.index(f"{kernel.name}("):]
    assert body.count("griddepcontrol.wait;") == 1 and body.count("griddepcontrol.launch_dependents;") == 1
    wait = body.index("griddepcontrol.wait;")
    code = body[body.index(") {") + 3:wait]  # from the kernel's opening brace, comments dropped
    before = "\n".join(line.split("//")[0] for line in code.splitlines())
    assert "fence_mbar_init();" in before and not [w for w in BEFORE_WAIT_FORBIDDEN if w in before]
    trigger = body.index("griddepcontrol.launch_dependents;")
    tma_branch = body.index("if (threadIdx.x == NUM_MATH_THREADS) {", wait)
    assert body.rindex("while (sched.next<false>(tile))", 0, trigger) > tma_branch
    assert "tma_load" not in body[trigger:]  # every load issued before it


@pytest.mark.parametrize("shape,config", [(s, c) for s, c in CONFIG_CASES if c.get("pdl")])
def test_pdl_kernels_wait_and_trigger_in_sass(shape, config, settings) -> None:
    """The PDL cases compile to one ACQBULK (griddepcontrol.wait) ahead of every global load or store and one
    PREEXIT (launch_dependents); the same kernels without PDL have neither."""
    on = build(GemmProblem(*shape), config, settings=settings)
    off = build(GemmProblem(*shape), {k: v for k, v in config.items() if k != "pdl"}, settings=settings)
    assert on.name == off.name + "_pdl" and on.kernel.plan.launch.pdl and not off.kernel.plan.launch.pdl
    ops = [i.base_opcode for i in parse(on.sass)]
    assert ops.count("ACQBULK") == 1 and ops.count("PREEXIT") == 1
    memory = [i for i, op in enumerate(ops) if op in ("UTMALDG", "UTMASTG", "LDG", "STG", "LDGSTS", "UBLKCP", "REDG")]
    assert memory and ops.index("ACQBULK") < min(memory)
    assert "ACQBULK" not in {i.base_opcode for i in parse(off.sass)} and "PREEXIT" not in off.sass


# The column-scale register rule at its edges (plan_kernel.early_column_scales): 128x144 alone and 128x136 with a
# multicast pair load early; 128x144 with the pair and a 64x152 pair load late (early, NVRTC 13.0 spilled 8-24 B).
COLUMN_EDGES = [({"block_m": 128, "block_n": 144, "cluster": 1}, True),
                ({"block_m": 128, "block_n": 136, "cluster": 2}, True),
                ({"block_m": 128, "block_n": 144, "cluster": 2}, False),
                ({"block_m": 64, "block_n": 152, "cluster": 2}, False)]


@pytest.mark.parametrize("config,early", COLUMN_EDGES, ids=[f"{c['block_m']}x{c['block_n']}-mc{c['cluster']}"
                                                            for c, _ in COLUMN_EDGES])
def test_column_scales_early_only_where_they_compile_clean(config, early: bool, settings) -> None:
    n = 2 * config["block_n"] * 14
    problem = GemmProblem(7168, n, 4096, out_dtype=DType.FP32, accumulate=True, scales=ScaleRecipe.A1x128_B1x128)
    built = build(problem, {**config, "epilogue_per_wg": 0, "a_shift": 0, "cross_tile": 0, "sa_gather": 0},
                  settings=settings)
    assert built.kernel.plan.early_column_scales is early
    res = built.resources
    assert (res.spill_stores, res.spill_loads) == (0, 0), f"spills: {res}"
