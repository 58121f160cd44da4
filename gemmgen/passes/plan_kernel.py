"""plan_kernel: make the kernel plan, the one record of the kernel's ABI and memory map (docs/CONVENTIONS.md #14).

Reads: the problem (kind, N, K) and the complete config. Decides: `Kernel.plan` — the shared-memory layout, the
barrier slots and bytes per stage, every TMA map (operand, dtype, symbolic dims, box, swizzle), the ordered kernel
parameters, the B-scale mode, the D-store boxes, the main loop's step count and the launch facts. Runs after every
config pass. The templates print this plan and the launcher builds tensor maps, parameters and grid from it, so no
fact is computed on both sides; `legality.check_plan` checks it.
"""

from __future__ import annotations

import math

from ..ir import (
    CONTIGUOUS_ALIGNMENT,
    BarrierPlan,
    DStorePlan,
    DType,
    Extent,
    GemmConfig,
    GemmKind,
    GemmProblem,
    Kernel,
    KernelPlan,
    LaunchPlan,
    ParamKind,
    ParamPlan,
    ScaleRecipe,
    SchedulerKind,
    Target,
    TmaMapPlan,
)
from ..ir.plan import BALANCED_MIN_ROUNDS, BALANCED_MIN_ROWS
from ..legality import SMEM_ALIGN, b_scale_mode, b_scale_splits, d_tile_cols, smem_layout

SCHEDULERS = {GemmKind.NORMAL: SchedulerKind.DENSE, GemmKind.M_GROUPED_CONTIGUOUS: SchedulerKind.M_GROUPED_CONTIGUOUS,
              GemmKind.M_GROUPED_MASKED: SchedulerKind.M_GROUPED_MASKED, GemmKind.K_GROUPED: SchedulerKind.K_GROUPED}
M, G = "m", "g"  # run-time symbols: rows of the per-group A/D view, groups
K, KB = "k", "kb"  # run-time symbols of a k-grouped GEMM: the total K of the concatenated groups, its 128-wide blocks
SA_STRIDE_M, SA_STRIDE_K, SA_STRIDE_G = "sa_stride_m", "sa_stride_k", "sa_stride_g"  # run-time: SA's strides
D_TMA_DTYPES = {DType.BF16: "bf16", DType.FP32: "f32", DType.E4M3: "u8"}
DS_STRIDE_M, DS_STRIDE_K, DS_STRIDE_G = "ds_stride_m", "ds_stride_k", "ds_stride_g"  # run-time: FP8 D's scales
SA_TMA = "sa_tma"  # run-time flag: SA is in the TMA layout (M-major, M stride align(M, 4)), loaded by tmap_sfa
SA_ROWS_PER_GATHER_THREAD = 4  # SA not in the TMA layout: block_m / 4 producer threads gather it, one arrival each
# 1x128/1x128 (wgrad): SB [N, ceil(K/128)] goes by TMA where it is N-major (per_token_cast_to_fp8's layout of the
# weight's scales; run-time flag sb_tma), else block_n / 8 producer threads gather it. 8 columns per thread keep the
# SA (<= 64) and SB (<= 32) gatherers inside the producer's warps 1-3, and N % 8 == 0 puts a thread's 8 columns all
# inside N or all outside it.
SB_TMA = "sb_tma"
SB_STRIDE_N, SB_STRIDE_K = "sb_stride_n", "sb_stride_k"  # run-time: SB's element strides (gathered)
SB_COLS_PER_GATHER_THREAD = 8
# Kinds whose tiles may hold rows that must not be written (padding, past masked_m): stored row by row then. A
# k-grouped tile never does: its M is a multiple of block_m (legality), so a tile stays inside its group's rows.
ROW_PREDICATED = (GemmKind.M_GROUPED_CONTIGUOUS, GemmKind.M_GROUPED_MASKED)


def operand_extents(operand: str, elem_bytes: int) -> tuple[Extent, Extent]:
    """A TMA operand's rows and row stride (bytes) in its 2-D map, as run-time symbols the call's checks set
    (runtime/validate.operand_layout): "<operand>_rows" (a 3-D tensor's groups stacked, each its own group stride
    apart) and "<operand>_ld" (elements between rows), so strided operands (a padded K, a column slice) need no copy."""
    return Extent(1, (f"{operand}_rows",)), Extent(elem_bytes, (f"{operand}_ld",))


def _maps(p: GemmProblem, c: GemmConfig, per_wg: bool) -> tuple[TmaMapPlan, ...]:
    assert c.block_m is not None and c.block_n is not None and c.block_k is not None
    assert c.swizzle_ab is not None and c.swizzle_d is not None
    masked, kgrouped = p.kind is GemmKind.M_GROUPED_MASKED, p.kind is GemmKind.K_GROUPED
    k_cols = Extent(1, (K,)) if kgrouped else Extent(p.k)  # K of A and B (k-grouped: the run-time total)
    # SFA by TMA where SA is M-major with the M stride rounded up to 4 floats (per_token_cast_to_fp8's layout):
    # [KB (x G), align(M, 4)]; its box counts in the full barrier only then (SFA_TX_BYTES, added at run time). The box
    # holds the rows the A slot loads (a decode tile's a_rows, as A's box): a 64-float box over M = 32 rows cost
    # x1.08 at 32x4096x7168 against no SA box at all (bench/NOTES.md v0.14 section 6). The rows past a_rows are
    # past M (legality), so their scales, like their accumulators, are never used for a stored row.
    sfa_rows = Extent(p.k_blocks, (G,)) if masked else Extent(1, (KB,)) if kgrouped else Extent(p.k_blocks)
    out_bytes = p.out_dtype.bytes
    ab, ab_bytes = ("bf16", 2) if p.a_dtype is DType.BF16 else ("u8", 1)  # TMA moves FP8 as bytes
    d_cols = c.swizzle_d // out_bytes if c.swizzle_d else d_tile_cols(c.block_n, p.swiglu)  # one swizzle span per box
    sfa = (TmaMapPlan("tmap_sfa", "sa", "f32", 4, (Extent(1, (M,)), sfa_rows), Extent(4, (M,), 4), (c.load_rows, 1),
                      0, False, SA_TMA),) if p.scales.promotes else ()  # scales constant along K: no per-stage SA
    # SFB by TMA (column scales only) where SB is N-major: [KB, N] (N % 8, so its rows are already 16-byte strides).
    sfb = (TmaMapPlan("tmap_sfb", "sb", "f32", 4, (Extent(p.n), Extent(1, (KB,)) if kgrouped else Extent(p.k_blocks)),
                      Extent(4 * p.n),
                      (c.block_n, 1), 0, False, SB_TMA),) if p.scales is ScaleRecipe.A1x128_B1x128 else ()
    a_rows, a_ld = operand_extents("a", ab_bytes)
    b_rows, b_ld = operand_extents("b", ab_bytes)
    d_rows, d_ld = operand_extents("out", out_bytes)
    return (
        TmaMapPlan("tmap_a", "a", ab, ab_bytes, (k_cols, a_rows), a_ld, (c.block_k, c.load_rows), c.swizzle_ab, True),
        TmaMapPlan("tmap_b", "b", ab, ab_bytes, (k_cols, b_rows), b_ld, (c.block_k, c.block_n), c.swizzle_ab, True),
        *sfa,
        *sfb,
        TmaMapPlan("tmap_d", "out", D_TMA_DTYPES[p.out_dtype], out_bytes, (Extent(p.out_n), d_rows), d_ld,
                   (d_cols, c.rows_per_math_wg if per_wg else c.block_m), c.swizzle_d, False),
    )


def _swapped_maps(p: GemmProblem, c: GemmConfig) -> tuple[TmaMapPlan, ...]:
    """A and B swapped (GemmConfig.swap_ab): wgmma's A is the weights (box 128 x block_m of their rows), its B the
    tokens (box 128 x block_n rows: TMA zero-fills the rows past M), the stage's SA box the tokens' block_n scales of
    the k-block, and D [M, N] is stored from a tile staged as block_n token rows of block_m weights, unswizzled."""
    assert c.block_m is not None and c.block_n is not None and c.block_k is not None and c.swizzle_ab is not None
    k_cols = Extent(p.k)
    (a_rows, a_ld), (b_rows, b_ld) = operand_extents("a", 1), operand_extents("b", 1)
    d_rows, d_ld = operand_extents("out", 2)
    return (
        TmaMapPlan("tmap_a", "b", "u8", 1, (k_cols, b_rows), b_ld, (c.block_k, c.block_m), c.swizzle_ab, True),
        TmaMapPlan("tmap_b", "a", "u8", 1, (k_cols, a_rows), a_ld, (c.block_k, c.block_n), c.swizzle_ab, True),
        TmaMapPlan("tmap_sfa", "sa", "f32", 4, (Extent(1, (M,)), Extent(p.k_blocks)), Extent(4, (M,), 4),
                   (c.block_n, 1), 0, False, SA_TMA),
        TmaMapPlan("tmap_d", "out", "bf16", 2, (Extent(p.n), d_rows), d_ld, (c.block_m, c.block_n), 0, False),
    )


def _params(p: GemmProblem, maps: tuple[TmaMapPlan, ...]) -> tuple[ParamPlan, ...]:
    params = [ParamPlan(m.param, ParamKind.TMAP, m.operand, "CUtensorMap",
                        f"{m.operand}: {m.dtype} {{{m.dims[0]}, {m.dims[1]}}}, box {{{m.box[0]}, {m.box[1]}}}, "
                        f"swizzle {m.swizzle or 'none'}") for m in maps]
    if p.out_dtype is DType.E4M3:  # the epilogue writes D's 1x128 scales through their strides (any layout)
        params += [
            ParamPlan("d_scales", ParamKind.POINTER, "out_scales", "float*",
                      "D's scales [(G,) M, ceil(N_out/128)] fp32, one per row per 128 columns"),
            ParamPlan("ds_stride_m", ParamKind.INT32, DS_STRIDE_M, "int", "D-scale elements between rows"),
            ParamPlan("ds_stride_k", ParamKind.INT32, DS_STRIDE_K, "int", "D-scale elements between 128-column groups"),
            ParamPlan("ds_stride_g", ParamKind.INT32, DS_STRIDE_G, "int",
                      "D-scale elements between masked groups (0 for dense and contiguous)"),
        ]
    if p.scales.epilogue_scaled:  # read once per tile by the epilogue
        tensor = p.scales is ScaleRecipe.TENSOR
        return tuple(params + [
            ParamPlan("sfb", ParamKind.POINTER, "sb", "const float*",
                      "B's scale, one fp32" if tensor else "B scales [N] fp32, one per column of D"),
            ParamPlan("shape_m", ParamKind.INT32, M, "int", "rows of A and D (M)"),
            ParamPlan("sfa", ParamKind.POINTER, "sa", "const float*",
                      "A's scale, one fp32" if tensor else "A scales [M] fp32, one per row of D"),
        ])
    if p.scales is ScaleRecipe.NONE:  # bf16: no scales at all (a grouped kernel still takes the layout below)
        shape_m = "rows of A and D (M_total)" if p.kind.is_grouped else "rows of A and D (M)"
        return tuple(params + [ParamPlan("shape_m", ParamKind.INT32, M, "int", shape_m)] + _grouped_params(p))
    column = p.scales is ScaleRecipe.A1x128_B1x128
    params += [
        ParamPlan("sfb", ParamKind.POINTER, "sb", "const float*",
                  "B scales [N, ceil(K/128)] fp32, gathered through the strides below" if column else
                  "B scales [G, ceil(N/128), ceil(K/128)] fp32, row-major" if p.kind.is_grouped
                  else "B scales [ceil(N/128), ceil(K/128)] fp32, row-major"),
        ParamPlan("shape_m", ParamKind.INT32, M, "int", "rows of the per-group A/D view (M, M_total or M_max)"),
        # SA in the TMA layout is loaded by tmap_sfa; any other layout is gathered by producer warps through its
        # strides (no conversion kernel).
        ParamPlan("sa_tma", ParamKind.INT32, SA_TMA, "int", "1: SA in the TMA layout (tmap_sfa); 0: gathered"),
        ParamPlan("sfa", ParamKind.POINTER, "sa", "const float*", "A scales, fp32, read through the strides below"),
        ParamPlan("sfa_stride_m", ParamKind.INT32, SA_STRIDE_M, "int", "SA elements between rows (M)"),
        ParamPlan("sfa_stride_k", ParamKind.INT32, SA_STRIDE_K, "int", "SA elements between 128-wide K blocks"),
        ParamPlan("sfa_stride_g", ParamKind.INT32, SA_STRIDE_G, "int",
                  "SA elements between masked groups (0 for dense and contiguous)"),
    ]
    if column:
        params += [
            ParamPlan("sb_tma", ParamKind.INT32, SB_TMA, "int", "1: SB N-major (tmap_sfb); 0: gathered"),
            ParamPlan("sfb_stride_n", ParamKind.INT32, SB_STRIDE_N, "int", "SB elements between columns (N)"),
            ParamPlan("sfb_stride_k", ParamKind.INT32, SB_STRIDE_K, "int", "SB elements between 128-wide K blocks"),
        ]
    return tuple(params + _grouped_params(p))


def _workspace_params() -> tuple[ParamPlan, ...]:
    """split_global: the launcher's workspace (runtime/launch.py, LaunchPlan.workspace_floats), in two views."""
    return (ParamPlan("ws_partials", ParamKind.POINTER, "ws_partials", "float*",
                      "split-K: fp32 partial tiles [tiles][k_splits][threads x accumulators], thread-major"),
            ParamPlan("ws_counters", ParamKind.POINTER, "ws_counters", "int*",
                      "split-K: each tile's arrived splits (0 between launches: the last resets it)"))


def _grouped_params(p: GemmProblem) -> list[ParamPlan]:
    """A grouped kernel's layout (G and the GPU-side row indices or counts) and D as a plain pointer for the
    row-predicated stores of partial tiles; nothing for a dense one."""
    if p.kind is GemmKind.K_GROUPED:
        return [
            ParamPlan("num_groups", ParamKind.INT32, G, "int", "G"),
            ParamPlan("k_offsets", ParamKind.POINTER, "k_offsets", "const int*",
                      "int32 [G + 1]: group g reads k-blocks k_offsets[g] .. k_offsets[g + 1] - 1 of the whole K"),
            ParamPlan("d_group_rows", ParamKind.INT32, "out_gr", "int", "rows of D's 2-D map between groups"),
        ]
    if not p.kind.is_grouped:
        return []
    masked = p.kind is GemmKind.M_GROUPED_MASKED
    layout = ("masked_m", "int32 [G]: valid rows of each group") if masked else (
        "m_indices", "int32 [M_total]: each row's expert, -1 (or >= G) = padding")
    a_groups = [ParamPlan("a_group_rows", ParamKind.INT32, "a_gr", "int",
                          "rows of A's 2-D map between groups (its group stride / row stride)")] if masked else []
    d_groups = [ParamPlan("d_group_rows", ParamKind.INT32, "out_gr", "int",
                          "rows of D's 2-D map between groups")] if masked else []
    return [
        ParamPlan("num_groups", ParamKind.INT32, G, "int", "G"),
        ParamPlan(layout[0], ParamKind.POINTER, layout[0], "const int*", layout[1]),
        ParamPlan("d_out", ParamKind.POINTER, "out", "unsigned short*" if p.out_dtype is DType.E4M3 else "u32*",
                  f"D as {'e4m3' if p.out_dtype is DType.E4M3 else 'bf16'} pairs, for the row-predicated stores of "
                  "partial tiles"),
        ParamPlan("d_ld", ParamKind.INT32, "out_ld", "int", "elements between rows of D (the row-predicated stores)"),
        *a_groups,
        ParamPlan("b_group_rows", ParamKind.INT32, "b_gr", "int",
                  "rows of B's 2-D map between groups (its group stride / row stride)"),
        *d_groups,
    ]


def make_plan(p: GemmProblem, c: GemmConfig, target: Target) -> KernelPlan:
    assert c.is_complete and c.block_m is not None and c.block_n is not None and c.acc_sets is not None
    assert c.cluster is not None and c.num_sms is not None and c.swizzle_d is not None
    out_bytes = p.out_dtype.bytes
    layout = smem_layout(c, out_bytes, p.scales, p.a_dtype.bytes, p.swiglu)
    per_wg = bool(c.epilogue_per_wg or c.pingpong)  # ping-pong: each warpgroup stores its own whole tile
    swap = bool(c.swap_ab)
    maps = _swapped_maps(p, c) if swap else _maps(p, c, per_wg)
    gather_threads = c.sa_rows // SA_ROWS_PER_GATHER_THREAD if p.scales.promotes else 0
    sb_threads = c.block_n // SB_COLS_PER_GATHER_THREAD if p.scales is ScaleRecipe.A1x128_B1x128 else 0
    # The block recipe's B scales: one producer thread copies them per stage and arrives when they land.
    sb_copy = 1 if p.scales.promotes and p.scales is not ScaleRecipe.A1x128_B1x128 else 0
    barriers = BarrierPlan(layout.barrier_offset, c.stages or 0, 1 + sb_copy + gather_threads + sb_threads,
                           empty_arrivals(p, c), sum(m.box_bytes for m in maps if m.loaded_per_stage))
    d_box = maps[-1].box
    if swap:  # one box: block_n token rows of block_m weights (D's row-major layout, transposed from the tile)
        d_store = DStorePlan(c.block_m, 1, c.block_m * out_bytes, c.block_m * c.block_n * out_bytes, 0, False,
                             out_bytes)
    else:
        d_rows = c.block_m * (2 if c.pingpong else 1)  # a box holds every math warpgroup's rows (smem_layout)
        d_store = DStorePlan(d_box[0], d_tile_cols(c.block_n, p.swiglu) // d_box[0], d_box[0] * out_bytes,
                             d_rows * d_box[0] * out_bytes, max(c.swizzle_d // 16 - 1, 0),
                             p.kind in ROW_PREDICATED, out_bytes, p.accumulate, per_wg, p.swiglu,
                             p.out_dtype is DType.E4M3)
    assert c.k_splits is not None
    launch = LaunchPlan(c.num_threads, layout.total + SMEM_ALIGN, c.ctas_per_cluster,
                        c.num_sms, c.block_m, 1 if swap else p.n_blocks(c.block_n),
                        p.kind in (GemmKind.M_GROUPED_MASKED, GemmKind.K_GROUPED), c.k_splits,
                        bool(c.balanced), bool(c.pdl), p.n if swap else 0, c.block_n if swap else 0,
                        c.block_m * c.block_n if c.split_global else 0, c.cluster if c.multicast_b else 1)
    alignment = CONTIGUOUS_ALIGNMENT if p.kind is GemmKind.M_GROUPED_CONTIGUOUS else 1
    # A and B swapped: the B scales are the weights', along the tile's 64 or 128 rows (one 128-row block: "uniform")
    mode = b_scale_mode(c.block_m if swap else c.block_n, p.scales)
    params = _params(p, maps) + (_workspace_params() if c.split_global else ())
    return KernelPlan(SCHEDULERS[p.kind], layout, barriers, maps, params, mode,
                      d_store, alignment, 0 if p.kind is GemmKind.K_GROUPED else p.k_blocks // c.k_splits * c.waves,
                      main_loop_unroll(p, c), launch,
                      gather_threads, sb_threads, split_loops(p, c), bool(c.cross_tile), bool(c.a_shift), swap,
                      mode == "column" and early_column_scales(c), bool(c.pingpong))


# Registers a math thread keeps for all but fin, acc and early column B scales, and what a multicast cluster adds: at
# 232, 128x144 (180 for those) compiles clean alone and spills 12-24 B with a cluster of 2; 128x152 (190) spills 20 B;
# with these, 426 early configs of an NVRTC 13.0 sweep (64-256 rows, any feature) compile clean (NOTES v0.36)
OTHER_MATH_REGS = 52
CLUSTER_MATH_REGS = 8


def early_column_scales(c: GemmConfig) -> bool:
    """Column B scales (1x128/1x128): whether all of the thread's (2 registers per 8-column group and set) fit beside
    the accumulators (fin per wave, acc per set), to be loaded at the issue while the wgmma group runs."""
    assert c.math_regs is not None and c.acc_sets is not None and c.cluster is not None
    acc = c.wgmma_n // 2  # accumulator registers of an m64nN wgmma per thread
    other = OTHER_MATH_REGS + (CLUSTER_MATH_REGS if c.cluster > 1 else 0)
    return (c.waves + c.acc_sets) * acc + c.acc_sets * acc // 2 <= c.math_regs - other


def empty_arrivals(p: GemmProblem, c: GemmConfig) -> int:
    """Arrivals that hand a ring slot back (consumer.cu.j2, release): where the math threads read the slot's scales
    with ld.shared (the promoting recipes), every lane of every math warp arrives for its own loads, plus one
    arrival per warp from each other CTA of the cluster; where only wgmma reads the slot, one per warp per cluster
    CTA. Ping-pong: a slot is one warpgroup's."""
    warps = 4 if c.pingpong else c.math_warpgroups * 4  # ping-pong: one warpgroup reads a slot
    return warps * (32 + c.cluster - 1) if p.scales.promotes else warps * c.cluster


def split_loops(p: GemmProblem, c: GemmConfig) -> tuple[int, ...]:
    """One main loop per place of the tile's B-scale split (legality.b_scale_splits), for one-set kernels only. With
    two accumulator sets, NVRTC 13.0's ptxas serializes every wgmma of a kernel that has more than one promoting main
    loop (C7517; the SASS has `WARPGROUP.DEPBAR.LE gsb0, 0x0` after each QGMMA: 80 of 80 in 384x2112x7168's 64x96
    kernel, 72 of 72 in a 64x192 kernel of two column halves), so those select the split per 8-column group at run
    time in one loop (8 `DEPBAR.LE gsb0, 0x1`, one wgmma group in flight through each promotion)."""
    assert c.block_n is not None
    return b_scale_splits(c.block_n, p.scales) if c.acc_sets == 1 else ()


# k-blocks per unrolled main-loop body: x1.005-1.028 against one on 256x128 kernels (bench/NOTES.md v0.10).
BODY_K_BLOCKS = 4


def main_loop_unroll(p: GemmProblem, c: GemmConfig) -> int:
    """Main-loop steps per unrolled body: BODY_K_BLOCKS k-blocks (x waves steps), a whole number of accumulator-set
    and wave rounds, so each step's set and wave are compile-time numbers. k-grouped kernels keep lcm(sets, waves):
    their step count is a run-time multiple of the waves only."""
    assert c.acc_sets is not None
    unroll = math.lcm(c.acc_sets, c.waves)
    if p.kind is GemmKind.K_GROUPED:
        return unroll
    return math.lcm(unroll, BODY_K_BLOCKS * c.waves)


def _balances(plan: KernelPlan, p: GemmProblem) -> bool:
    """Whether the balanced grid changes this problem's launch (the kernel is M's: the reason says so per problem)."""
    la = plan.launch
    return la.grid(p.m, p.groups) != la.default_grid(p.m, p.groups)


def run(kernel: Kernel, target: Target) -> Kernel:
    assert kernel.config is not None and kernel.config.is_complete, "plan_kernel runs after every config pass"
    plan = make_plan(kernel.problem, kernel.config, target)
    steps = "a run-time count of" if plan.k_steps == 0 else f"{plan.k_steps}"
    body = plan.unroll // kernel.config.waves  # k-blocks per unrolled body
    features = [text for on, text in (
        (plan.cross_tile_issue, "the next tile's step 0 issued before this tile's epilogue"),
        (plan.launch.balanced, f"the grid balanced at launch (M > {BALANCED_MIN_ROWS}, >= {BALANCED_MIN_ROUNDS} "
         "rounds of tiles)" + ("" if _balances(plan, kernel.problem) else f", not at M = {kernel.problem.m}")),
        (plan.a_tail_shift, "a partial last M block's A box ending at M"),
        (plan.pingpong, "ping-pong math warpgroups, whole tiles in turn"),
        (plan.d_store.per_warpgroup and not plan.pingpong, "an epilogue per math warpgroup")) if on]
    why = (f"main loop: {steps} steps per tile, unrolled by {plan.unroll} "
           f"({body} k-block{'s' if body > 1 else ''} per body)" + "".join(f"; {f}" for f in features))
    return kernel.replace(plan=plan).because("plan_kernel", why)
