"""The legality rules and the one shared-memory budget (docs/CONVENTIONS.md #3).

`check(problem, config, target)` holds every rule of a schedule; `check_plan(plan, target)` every rule of the kernel
plan made from it. Config search, the CLI's --config, the pass verifier and the tests all call them, and
`smem_layout`/`smem_bytes` and `b_scale_mode` are the only places their numbers are computed.
"""

from __future__ import annotations

import math

from .ir import (
    CONTIGUOUS_ALIGNMENT,
    LEGAL_N,
    SCALE_BLOCK,
    DType,
    GemmConfig,
    GemmKind,
    GemmProblem,
    KernelPlan,
    ScaleRecipe,
    SmemLayout,
    Target,
    WgmmaShape,
    ceil_div,
)
from .ir.config import THREADS_PER_WARPGROUP
from .ir.problem import SWIGLU_BLOCK

# NOTE: a 128-byte-swizzled TMA box / wgmma operand must start 1024-byte aligned (PTX ISA 9.7.15.5.1,
# "Shared memory matrix layout": the swizzle pattern repeats every 8 rows of 128 B). Dynamic shared memory is
# only 16-byte aligned, so the kernel rounds its base up and we budget the slack.
SMEM_ALIGN = 1024
SFA_ALIGN = 128  # TMA destination alignment (CUDA driver API: cuTensorMapEncodeTiled)
MATH_REG_OVERHEAD = 40  # registers a math thread needs beyond the two accumulator sets (scales, addresses, loop)
# 1x128/1x128 (wgrad): the promotion also holds the thread's B-scale pairs (read from shared memory per 8-column
# group) and the products sa * sb, so it needs more than the block recipe's one scale per row half. Sized from the
# SASS of the 128x128 kernels (docs/KERNEL_DESIGN.md, "The weight-gradient recipe"), plus the fold of the loaded
# B scales that the slot's release waits on (consumer.cu.j2): with it a 64x128 two-set tile (estimate 244 of 248)
# spilled 16 bytes, so 17.
COLUMN_SCALE_REG_OVERHEAD = 17
BLOCK_RECIPE = ScaleRecipe.A1x128_B128x128
# A ping-pong warpgroup holds the whole tile: with per-row/column scales held beside it (channel, 1x128/1x128) it needs
# this many more (NVRTC 13.0 sweep, NOTES v0.37: channel 128x192 at 0 to spare spilled 20-24 B, 1x128/1x128 64x160 at
# 15 spilled 44 B; bf16, tensor and the block recipe compiled clean at 0)
PINGPONG_SCALE_REGS = 16
SETMAXNREG_RANGE = (24, 256)  # PTX ISA 9.7.17.1 setmaxnreg: a multiple of 8 in 24..256
DEFAULT_PRODUCER_REGS = 40  # one thread issues TMA; DeepGEMM's producer setmaxnreg (docs/KERNEL_DESIGN.md)
COLUMN_WAVE_N = 128  # the one column-wave width (wave_n < block_n) the GPU suite runs: each wave in one B-scale block
# Column halves (wave_n = block_n / 2) the GPU suite runs, as two accumulator sets of half the tile's width: a 192-wide
# tile's second accumulator set does not fit in registers whole (2 x 96 + 96 promoted per thread), but two halves of
# 48 do (2 x 48 + 2 x 48). A 96-wide wave may straddle a 128-row B-scale block (the promotion selects per 8 columns).
COLUMN_HALF_BLOCK_N = (192,)


def column_halves(c: GemmConfig) -> bool:
    """The tile runs as the two column halves of COLUMN_HALF_BLOCK_N (wave_n = block_n / 2)."""
    return c.block_n in COLUMN_HALF_BLOCK_N and c.wgmma_n * 2 == c.block_n


def _align(x: int, a: int) -> int:
    return ceil_div(x, a) * a


# The block recipe (1x128/128x128): each stage carries its k-block's B scales for the tile, the one or two 128-row
# scale blocks the tile touches (fp32, copied by a producer thread with cp.async), so a tile switch loads nothing.
BLOCK_SFB_STAGE_BYTES = 8


def d_tile_cols(block_n: int, swiglu: bool = False) -> int:
    """Columns of the D tile a block_n-wide tile stores: half of them with SwiGLU (one per gate/up pair)."""
    return block_n // 2 if swiglu else block_n


def smem_layout(config: GemmConfig, out_bytes: int = 2, scales: ScaleRecipe = BLOCK_RECIPE,
                ab_bytes: int = 1, swiglu: bool = False) -> SmemLayout:
    """The kernel's shared-memory map (`out_bytes`: bytes per D element, 2 bf16 / 4 fp32; `scales`: recipes that
    promote stage each k-block's A and B scales: the block recipe its tile's one or two B scales
    (BLOCK_SFB_STAGE_BYTES), the 1x128/1x128 recipe block_n of them, one per column; `ab_bytes`: bytes per A/B
    element); the plan stores it, so the template and the launch read this one result."""
    bm, bn, bk, stages = config.block_m, config.block_n, config.block_k, config.stages
    assert bm is not None and bn is not None and bk is not None and stages is not None, \
        "smem_layout needs block_m, block_n, block_k and stages"
    # the D tile staged for the TMA store; ping-pong: one per math warpgroup (each stores its own tile)
    d_bytes = _align(bm * d_tile_cols(bn, swiglu) * out_bytes, SMEM_ALIGN) * (2 if config.pingpong else 1)
    a_stage = config.load_rows * bk * ab_bytes  # ab_bytes: bytes per A/B element (1 FP8, 2 bf16)
    b_stage = bn * bk * ab_bytes
    sfa_stage = _align(config.sa_rows * 4, SFA_ALIGN) if scales.promotes else 0
    a_off = d_bytes
    b_off = a_off + stages * a_stage
    sfa_off = _align(b_off + stages * b_stage, SFA_ALIGN)
    sfb_off = sfa_off + stages * sfa_stage
    if scales is ScaleRecipe.A1x128_B1x128:
        sfb_stage = _align(bn * 4, SFA_ALIGN)  # a TMA destination too
    else:
        sfb_stage = BLOCK_SFB_STAGE_BYTES if scales.promotes else 0
    bar_off = _align(sfb_off + stages * sfb_stage, 8)
    end = bar_off + 2 * stages * 8  # full + empty mbarriers, 8 bytes each
    end += 16 if config.pingpong else 0  # ping-pong: each math warpgroup's turn barrier (consumer.cu.j2)
    # one fp32 partial tile, where the K splits meet through distributed shared memory (not split_global)
    red_bytes = bm * bn * 4 if config.cluster_splits else 0
    red_bar = end
    red_off = _align(red_bar + (16 if red_bytes else 0), SFA_ALIGN)
    total = red_off + red_bytes if red_bytes else end
    return SmemLayout(0, d_bytes, a_off, a_stage, b_off, b_stage, sfa_off, sfa_stage, bar_off,
                      red_off if red_bytes else 0, red_bytes, red_bar if red_bytes else 0, total,
                      sfb_off if sfb_stage else 0, sfb_stage)


def smem_bytes(config: GemmConfig, out_bytes: int = 2, scales: ScaleRecipe = BLOCK_RECIPE, ab_bytes: int = 1,
               swiglu: bool = False) -> int:
    """Dynamic shared memory the kernel launches with, alignment slack included: the only budget."""
    return smem_layout(config, out_bytes, scales, ab_bytes, swiglu).total + SMEM_ALIGN


def math_regs_needed(config: GemmConfig, scales: ScaleRecipe = BLOCK_RECIPE) -> int:
    """Registers a math thread needs: the wgmma accumulator set(s), one promoted set per wave, and overhead. Without
    promotion wgmma accumulates into the one set per wave (extra sets only keep a group in flight: no registers)."""
    acc = WgmmaShape(config.wgmma_n).accum_regs if config.block_n in LEGAL_N and config.wgmma_n in LEGAL_N else 0
    extra = COLUMN_SCALE_REG_OVERHEAD if scales is ScaleRecipe.A1x128_B1x128 else 0
    if config.pingpong and scales in (ScaleRecipe.CHANNEL, ScaleRecipe.A1x128_B1x128):
        extra += PINGPONG_SCALE_REGS
    sets = (config.acc_sets or 1) if scales.promotes else 0
    return acc * (sets + config.waves) + MATH_REG_OVERHEAD + extra


def math_regs_budget(math_warpgroups: int, producer_regs: int, target: Target) -> int:
    """The most registers each math thread can get once the producer warpgroup keeps `producer_regs`."""
    per_thread = (target.regs_per_sm - THREADS_PER_WARPGROUP * producer_regs) // (
        THREADS_PER_WARPGROUP * math_warpgroups)
    return min(per_thread, target.max_regs_per_thread) // 8 * 8


def b_scale_blocks_spanned(block_n: int) -> int:
    """Worst-case number of 128-row B-scale blocks one N tile touches (tiles start at multiples of block_n)."""
    worst_offset = 128 - math.gcd(block_n, 128)
    return ceil_div(worst_offset + block_n, 128)


def b_scale_mode(block_n: int, scales: ScaleRecipe = BLOCK_RECIPE) -> str:
    """How a tile's columns map to B scales (the plan records it; the promotion is printed from it): 128-row blocks
    "uniform" = always one block, "aligned" = a compile-time split at column 128, "runtime" = a split that moves
    with the tile's N offset; "column" = one scale per column (1x128/1x128), read from the stage's shared memory;
    "none" = no per-k-block B scales (recipes constant along K: the epilogue scales, or none at all)."""
    if not scales.promotes:
        return "none"
    if scales is ScaleRecipe.A1x128_B1x128:
        return "column"
    if b_scale_blocks_spanned(block_n) == 1:
        return "uniform"
    return "aligned" if block_n % 128 == 0 else "runtime"


# A tile whose B-scale split moves with its N offset (mode "runtime") gets one main loop per place the split can be,
# each with the split a compile-time constant, where there are at most this many places (block_n 96/160/192/224: 2-4);
# otherwise the promotion selects each 8-column group's scale at run time. DeepGEMM's `outer_launch_k_iterations`
# does the same for its block_n (deep_gemm/include/deep_gemm/fp8_gemm.cuh, 2025).
MAX_SPLIT_LOOPS = 4


def b_scale_splits(block_n: int, scales: ScaleRecipe = BLOCK_RECIPE) -> tuple[int, ...]:
    """The places tile.n0 % 128 a "runtime"-mode tile can start at (tiles start at multiples of block_n, so every
    multiple of gcd(block_n, 128)), if few enough for one main loop each; else ()."""
    if b_scale_mode(block_n, scales) != "runtime":
        return ()
    step = math.gcd(block_n, 128)
    places = tuple(range(0, 128, step))
    return places if len(places) <= MAX_SPLIT_LOOPS else ()


def check(problem: GemmProblem, config: GemmConfig, target: Target) -> list[str]:
    """Every rule `config` breaks for `problem` on `target`, as sentences; [] means legal."""
    c = config
    assert c.has_tile, "legality.check needs the tile fields (block_m, block_n, stages, cluster, block_k) decided"
    assert c.block_m is not None and c.block_n is not None and c.stages is not None
    errors: list[str] = []
    if c.block_k != problem.k_block:
        errors.append(f"block_k={c.block_k}: {problem.a_dtype.value} inputs need block_k={problem.k_block} (one "
                      "128-byte swizzled K-major row per stage" + (", one scale block)" if problem.scales.promotes
                                                                    else ")"))
    if c.block_m not in (64, 128, 256):
        errors.append(f"block_m={c.block_m}: expected 64 (one math warpgroup), 128 or 256 (two)")
    elif problem.kind is GemmKind.M_GROUPED_CONTIGUOUS and CONTIGUOUS_ALIGNMENT % c.block_m:
        errors.append(f"block_m={c.block_m}: a contiguous grouped layout aligns experts to {CONTIGUOUS_ALIGNMENT} "
                      "rows, so a tile must divide that (64 or 128) to hold one expert")
    if c.block_n not in LEGAL_N:
        errors.append(f"block_n={c.block_n}: wgmma m64nNk32 needs N a multiple of 8 in 8..256")
    elif b_scale_mode(c.block_n, problem.scales) == "runtime" and b_scale_blocks_spanned(c.block_n) > 2:
        errors.append(f"block_n={c.block_n}: a tile may span {b_scale_blocks_spanned(c.block_n)} B-scale blocks; "
                      "the promotion handles at most 2")
    if c.stages < 3:
        errors.append(f"stages={c.stages}: the TMA/wgmma ring needs at least 3 stages")
    if c.stages > 32:
        errors.append(f"stages={c.stages}: at most 32 stages")
    errors += _cluster_rules(problem, c, target)
    budget = smem_bytes(c, problem.out_dtype.bytes, problem.scales, problem.a_dtype.bytes, problem.swiglu)
    if budget > target.smem_per_block:
        errors.append(f"shared memory: {budget} bytes needed (block {c.block_m}x{c.block_n}, {c.stages} stages) "
                      f"> {target.smem_per_block} available on {target.name}")
    errors += _register_rules(c, target, problem.scales)
    row_bytes = (c.block_k or 0) * problem.a_dtype.bytes
    if c.swizzle_ab is not None and c.swizzle_ab != row_bytes:
        errors.append(f"swizzle_ab={c.swizzle_ab}: K-major {problem.a_dtype.value} tiles with block_k={c.block_k} need "
                      f"the {row_bytes}-byte swizzle")
    if c.swizzle_d is not None:
        if c.swizzle_d not in (0, 32, 64, 128):
            errors.append(f"swizzle_d={c.swizzle_d}: expected 0, 32, 64 or 128 bytes")
        elif c.swizzle_d and (d_tile_cols(c.block_n, problem.swiglu) * problem.out_dtype.bytes) % c.swizzle_d:
            errors.append(f"swizzle_d={c.swizzle_d}: must divide the D tile row of "
                          f"{d_tile_cols(c.block_n, problem.swiglu) * problem.out_dtype.bytes} bytes")
    errors += acc_set_rules(problem, c)
    errors += wave_n_rules(problem, c)
    errors += _split_k_rules(problem, c)
    errors += _a_rows_rules(problem, c)
    errors += _feature_rules(problem, c)
    errors += _output_rules(problem)
    errors += _epilogue_rules(problem, c)
    errors += _column_scale_rules(problem, c)
    errors += _swap_ab_rules(problem, c)
    errors += _pingpong_rules(problem, c)
    if c.raster_group is not None and c.raster_group < 1:
        errors.append(f"raster_group={c.raster_group}: expected >= 1")
    return errors


# NOTE: cuTensorMapEncodeTiled (CUDA driver API): boxDim[i] in 1..256; the inner box extent in bytes a multiple of
# 16; with a swizzle, the inner box extent in bytes at most the swizzle span.
TMA_MAX_BOX = 256


def check_plan(plan: KernelPlan, target: Target) -> list[str]:
    """Every rule the kernel plan breaks: the facts the template and the launcher both read must be consistent."""
    errors: list[str] = []
    lay, bars = plan.smem, plan.barriers
    if plan.launch.dynamic_smem > target.smem_per_block:
        errors.append(f"plan: {plan.launch.dynamic_smem} bytes of dynamic shared memory > {target.smem_per_block}")
    for name, offset, stride in (("A", lay.a_offset, lay.a_stage_bytes), ("B", lay.b_offset, lay.b_stage_bytes)):
        if offset % SMEM_ALIGN or stride % SMEM_ALIGN:
            errors.append(f"plan: {name} stages at {offset} + s*{stride} are not {SMEM_ALIGN}-byte aligned "
                          "(128-byte swizzled operands)")
    if lay.sfa_offset % SFA_ALIGN or lay.sfa_stage_bytes % SFA_ALIGN:
        errors.append(f"plan: SFA stages are not {SFA_ALIGN}-byte aligned (TMA destinations)")
    column = plan.b_scale_mode == "column"  # TMA destinations, block_n scales; else the block recipe's one or two
    sfb_ok = (lay.sfb_stage_bytes > 0 and lay.sfb_stage_bytes % SFA_ALIGN == 0 if column else
              lay.sfb_stage_bytes == (0 if plan.b_scale_mode == "none" else BLOCK_SFB_STAGE_BYTES))
    if not sfb_ok or lay.sfb_offset % (SFA_ALIGN if column else 16) \
            or lay.sfb_offset + bars.stages * lay.sfb_stage_bytes > bars.offset:
        errors.append(f"plan: SFB stages at {lay.sfb_offset} + s*{lay.sfb_stage_bytes} are misaligned, overlap the "
                      f"barriers, or do not fit B-scale mode {plan.b_scale_mode}")
    if lay.red_bytes and (lay.red_offset % 16 or lay.red_barrier_offset % 8
                          or lay.red_offset + lay.red_bytes > lay.total):
        errors.append(f"plan: the split-K buffer at {lay.red_offset} ({lay.red_bytes} B) is misaligned or outside")
    if bars.offset % 8 or bars.offset + 16 * bars.stages + (16 if plan.pingpong else 0) > lay.total:
        errors.append(f"plan: barriers at {bars.offset} (x{2 * bars.stages}) are misaligned or outside the layout")
    if plan.cross_tile_issue and (plan.b_scale_mode == "none" or plan.k_steps == 0 or plan.launch.k_splits > 1):
        errors.append("plan: cross-tile issue needs promotion, a compile-time step count and one K split "
                      "(plan_kernel.cross_tile_issue)")
    if plan.a_tail_shift:
        row_bytes = lay.a_stage_bytes // plan.launch.block_m  # the A slot holds the whole tile (no decode slot)
        over_read = (plan.launch.block_m - A_SHIFT_ROWS) * row_bytes  # the last slot's wgmma read past it, at most
        if (plan.scheduler.value != "dense" or plan.cross_tile_issue
                or lay.b_offset != lay.a_offset + bars.stages * lay.a_stage_bytes
                or bars.stages * lay.b_stage_bytes < over_read):
            errors.append("plan: the shifted A box of the last M block needs a dense scheduler, no cross-tile issue, "
                          f"and B's stages right after A's, holding the last A slot's over-read of {over_read} B")
    d_map = next((m for m in plan.maps if m.operand == "out"), None)
    per_wg = plan.d_store.per_warpgroup  # two math warpgroups (3 x 128 threads), each storing its own half
    if plan.swap_ab:  # the transposed tile: block_m weights (inner) x the token columns, from a 64- or 128-row tile
        if d_map is None or d_map.box[0] != plan.launch.block_m or plan.launch.block_m not in SWAP_AB_BLOCK_M \
                or per_wg or plan.launch.n_blocks != 1 or not plan.launch.tile_rows or not plan.launch.max_m:
            errors.append("plan: A and B swapped needs a 64- or 128-row tile stored as one transposed D box, one "
                          "column block, the weights' rows as the tile rows and the tokens' bound")
    elif d_map is not None and (d_map.box[1] * (2 if per_wg and not plan.pingpong else 1) != plan.launch.block_m
                                or per_wg and (plan.launch.threads != 384 or plan.launch.k_splits > 1)
                                or plan.pingpong and not per_wg):
        errors.append(f"plan: D box of {d_map.box[1]} rows for {plan.launch.block_m}-row tiles: expected the tile's "
                      "rows, or half of them with per-warpgroup epilogues (two math warpgroups, one K split); "
                      "ping-pong: the tile's rows, stored per warpgroup")
    loaded = sum(m.box_bytes for m in plan.maps if m.loaded_per_stage)
    if bars.stage_tx_bytes != loaded:
        errors.append(f"plan: the full barrier expects {bars.stage_tx_bytes} bytes, the stage's boxes carry {loaded}")
    for m in plan.maps:
        inner_bytes = m.box[0] * m.elem_bytes
        if not all(1 <= b <= TMA_MAX_BOX for b in m.box):
            errors.append(f"plan: {m.param} box {m.box}: each extent must be 1..{TMA_MAX_BOX}")
        if inner_bytes % 16 or (m.swizzle and inner_bytes > m.swizzle):
            errors.append(f"plan: {m.param} inner box of {inner_bytes} bytes does not fit swizzle {m.swizzle}")
    names = [p.name for p in plan.params]
    if len(set(names)) != len(names):
        errors.append(f"plan: repeated kernel parameter names {names}")
    maps = {m.param for m in plan.maps}
    tmaps = {p.name for p in plan.params if p.kind.value == "tmap"}
    if maps != tmaps:
        errors.append(f"plan: tensor maps {sorted(maps)} and tensor-map parameters {sorted(tmaps)} differ")
    return errors


def _cluster_rules(problem: GemmProblem, c: GemmConfig, target: Target) -> list[str]:
    assert c.block_n is not None and c.cluster is not None
    errors: list[str] = []
    if c.cluster not in (1, 2):
        errors.append(f"cluster={c.cluster}: expected 1 or 2 (2 multicasts one operand's tile to a neighbour)")
        return errors
    n_blocks = problem.n_blocks(c.block_n)
    if c.multicast_b:
        # the pair are M-neighbours (scheduler_common.tile_coords); an odd M-block count's last pair computes one
        # tile past M on TMA's zero fill and stores none of it (TMA clips the box)
        if c.cluster != 2 or problem.kind is not GemmKind.NORMAL or c.swap_ab or (c.k_splits or 1) > 1:
            errors.append(f"multicast_b=1: pairs M-neighbours of a dense GEMM: needs cluster=2, swap_ab=0 and "
                          f"k_splits=1 (got cluster={c.cluster}, {problem.kind.value}, swap_ab={c.swap_ab}, "
                          f"k_splits={c.k_splits})")
        if c.a_shift or c.evict_first:
            errors.append("multicast_b=1: the shared B box is loaded with the default L2 policy and the A box "
                          f"unshifted (needs evict_first=0 and a_shift=0; got {c.evict_first}, {c.a_shift})")
    elif c.cluster > 1 and n_blocks % c.cluster:
        errors.append(f"cluster={c.cluster}: ceil(N/block_n) = {n_blocks} N blocks must be divisible by the cluster")
    sms = c.num_sms if c.num_sms is not None else target.num_sms
    if sms % c.cluster:
        errors.append(f"cluster={c.cluster}: the grid of {sms} SMs must be divisible by the cluster")
    if sms < c.ctas_per_cluster:  # the persistent grid is whole clusters: fewer SMs than one cluster is no grid
        errors.append(f"num_sms={sms}: a cluster of {c.ctas_per_cluster} CTAs (cluster {c.cluster} x k_splits "
                      f"{c.k_splits or 1}) needs at least that many SMs")
    if c.num_sms is not None and not 1 <= c.num_sms <= target.num_sms:
        errors.append(f"num_sms={c.num_sms}: expected 1..{target.num_sms} on {target.name}")
    return errors


def acc_set_rules(problem: GemmProblem, c: GemmConfig) -> list[str]:
    """The rules on the accumulator sets (pipeline_wgmma asks them of a second set before choosing it)."""
    errors: list[str] = []
    if c.acc_sets is not None and c.acc_sets not in (1, 2):
        errors.append(f"acc_sets={c.acc_sets}: expected 1 or 2 wgmma accumulator sets")
    elif c.acc_sets == 2 and c.waves != 1 and not (column_halves(c) and c.waves == 2):
        errors.append(f"acc_sets=2: needs one wave (one wgmma tile) per math warpgroup, or the two column halves of a "
                      f"{'/'.join(map(str, COLUMN_HALF_BLOCK_N))}-wide tile; block {c.block_m}x{c.block_n} with "
                      f"wave_n={c.wgmma_n} gives {c.waves}")
    if c.pingpong and problem.scales.promotes and c.acc_sets not in (None, 1):
        errors.append(f"acc_sets={c.acc_sets}: a promoting ping-pong warpgroup hands the turn over inside its main "
                      "loop, which with two sets makes NVRTC 13.0 wait after every wgmma (C7517: 20 of 20 at 64x96)")
    if problem.kind is GemmKind.K_GROUPED and c.acc_sets not in (None, 1):
        errors.append(f"acc_sets={c.acc_sets}: a k-grouped GEMM's k-block count is a run-time value, and its main "
                      "loop is kept with one accumulator set (no step issued ahead past a group's end)")
    return errors


def wave_n_rules(problem: GemmProblem, c: GemmConfig) -> list[str]:
    """wave_n < block_n: a warpgroup's tile as column waves of m64 x wave_n wgmma sharing one accumulator set, each
    promoted into its own columns of the fp32 result (consumer.cu.j2). Allowed as run on the GPU (tests/shapes.py):
    wave_n 128, the block recipe's promotion, one row wave, one K split (acc_set_rules: one set), bf16 D; or the two
    halves of a 192-wide tile with two accumulator sets, dense only (COLUMN_HALF_BLOCK_N)."""
    assert c.block_n is not None and c.block_m is not None
    if c.wave_n is None or c.wave_n == c.block_n:
        return []
    errors: list[str] = []
    halves = column_halves(c)
    if not halves and (c.wave_n != COLUMN_WAVE_N or c.block_n % COLUMN_WAVE_N):
        # Other splits (four waves of 64, other halves) render but were never run on a GPU.
        errors.append(f"wave_n={c.wave_n}: column waves are implemented with wave_n={COLUMN_WAVE_N} (each wave inside "
                      f"one 128-row B-scale block) and block_n a multiple of it, or as the halves of a block_n of "
                      f"{' or '.join(map(str, COLUMN_HALF_BLOCK_N))} (got block_n={c.block_n})")
        return errors
    if not problem.scales.promotes or problem.scales is ScaleRecipe.A1x128_B1x128:
        errors.append(f"wave_n={c.wave_n}: column waves are implemented for the 1x128/128x128 recipe's promotion, not "
                      f"scales {problem.scales.value}")
    if halves and c.acc_sets == 1:
        errors.append(f"wave_n={c.wave_n}: column halves run as two accumulator sets (acc_sets=2, as the GPU suite "
                      "runs them), got acc_sets=1")
    if halves and problem.kind is not GemmKind.NORMAL:
        errors.append(f"wave_n={c.wave_n}: column halves are GPU-tested on dense GEMMs only, not {problem.kind.value}")
    if c.waves_m != 1:
        errors.append(f"wave_n={c.wave_n}: column waves need one m64 row wave per math warpgroup (block_m 64 or 128, "
                      f"got {c.block_m})")
    if (c.k_splits or 1) > 1:
        errors.append(f"wave_n={c.wave_n}: column waves are not implemented with split-K (k_splits={c.k_splits})")
    if problem.out_dtype not in (DType.BF16, DType.E4M3):
        errors.append(f"wave_n={c.wave_n}: column waves are verified with a bf16 or e4m3 D only (got "
                      f"{problem.out_dtype.value})")
    return errors


# Rows a shifted last-M-block A box moves by: whole 8-row swizzle atoms (8 x 128 B = 1024 B, the 128-byte swizzle's
# period), so the wgmma descriptor of the shifted slot row starts on the pattern's period (no base-offset field) and
# the box start stays 16-byte aligned (plan_kernel.a_tail_shift).
A_SHIFT_ROWS = 8


def b_stages_hold(c: GemmConfig, rows: int) -> bool:
    """Whether B's stages, which follow A's in shared memory (smem_layout), hold `rows` rows of 128 B: the most the
    last A slot's wgmma reads past the slot (a decode slot of a_rows rows, or a shifted last-M-block box)."""
    assert c.stages is not None and c.block_n is not None
    return c.stages * c.block_n >= rows


def _feature_rules(problem: GemmProblem, c: GemmConfig) -> list[str]:
    """The schedule features (GemmConfig.FEATURES) where the kernel has them; combinations never built are refused."""
    errors: list[str] = []
    dense, swapped = problem.kind is GemmKind.NORMAL, bool(c.swap_ab)
    one_split = (c.k_splits or 1) == 1
    if c.sa_gather and (not problem.scales.promotes or swapped):
        errors.append(f"sa_gather=1: only a recipe with per-k-block A scales (1x128/128x128, 1x128/1x128), "
                      f"unswapped, loads SA per stage; got {problem.scales.value}{', swap_ab=1' if swapped else ''}")
    if c.epilogue_per_wg and c.a_shift and problem.scales is ScaleRecipe.A1x128_B1x128:
        # the column promotion's math warps with both: 4 spill stores at 128x128 (NVRTC 13.0), neither alone
        errors.append("epilogue_per_wg=1 with a_shift=1: the 1x128/1x128 recipe's math warps spill with both")
    if c.epilogue_per_wg and (c.math_warpgroups != 2 or not one_split or swapped):
        errors.append("epilogue_per_wg=1: needs two math warpgroups (block_m >= 128), one K split (the reduction "
                      "goes through the whole tile) and no A/B swap (the transposed tile is one D box)")
    if c.cross_tile and (not problem.scales.promotes or not one_split or c.acc_sets not in (None, 1) or swapped
                         or problem.kind is GemmKind.K_GROUPED):
        # two sets: a main loop and a tile loop each keeping a group in flight make ptxas serialize every wgmma
        errors.append("cross_tile=1: needs promotion, one K split, one accumulator set (two: NVRTC 13.0 waits after "
                      "every wgmma), a compile-time step count (not k-grouped) and no A/B swap")
    if c.a_shift and (not dense or swapped or c.cross_tile or c.load_rows != c.block_m
                      or not b_stages_hold(c, c.block_m - A_SHIFT_ROWS)):
        errors.append("a_shift=1: needs a dense problem, an A slot of the whole tile, no A/B swap, no cross-tile "
                      f"issue, and B's stages holding the last A slot's over-read of {c.block_m - A_SHIFT_ROWS} rows")
    if c.balanced and (not dense or swapped):
        errors.append("balanced=1: only a dense unswapped launch (a grouped grid is an upper bound)")
    return errors


def _a_rows_rules(problem: GemmProblem, c: GemmConfig) -> list[str]:
    """a_rows < block_m (a dense 64- or 128-row tile over a smaller M): the ring loads only the rows M has; each
    warpgroup's wgmma still reads its 64-row A operand (the second at the slot's row 64), whose rows past a_rows are
    whatever follows the slot (later slots, then B's) and land in accumulator rows never stored."""
    assert c.block_m is not None
    if c.a_rows is None or c.a_rows == c.block_m:
        return []
    errors: list[str] = []
    if c.a_rows % 8 or not 8 <= c.a_rows < c.block_m:
        # 8 rows of 128 B are one 128-byte swizzle atom: a slot must hold whole atoms (PTX ISA 9.7.15.5.1)
        errors.append(f"a_rows={c.a_rows}: expected a multiple of 8 in 8..block_m={c.block_m}")
    if c.block_m not in (64, 128) or problem.kind is not GemmKind.NORMAL or c.cluster != 1:
        errors.append(f"a_rows={c.a_rows}: fewer A rows than the tile is for dense 64- and 128-row tiles without A "
                      f"multicast (got block_m={c.block_m}, cluster={c.cluster}, {problem.kind.value})")
    if problem.m > c.a_rows:
        errors.append(f"a_rows={c.a_rows}: M={problem.m} rows would not be loaded; a_rows must hold all of M")
    if c.stages is not None and c.block_n is not None:
        if not b_stages_hold(c, c.block_m - c.a_rows):
            errors.append(f"a_rows={c.a_rows}: the last A slot's {c.block_m}-row wgmma read would run past B's stages")
    return errors


def _output_rules(problem: GemmProblem) -> list[str]:
    errors: list[str] = []
    if problem.accumulate and problem.out_dtype is not DType.FP32:
        errors.append(f"accumulate: D += A.B^T needs a float32 out (got {problem.out_dtype.value}): bf16 partial "
                      "sums would round at every call")
    if problem.out_dtype is DType.FP32 and problem.kind not in (GemmKind.NORMAL, GemmKind.K_GROUPED):
        errors.append(f"out_dtype=fp32: implemented for dense and k-grouped GEMMs only, not {problem.kind.value}")
    return errors


# NOTE: 8 CTAs is the portable cluster size (CUDA Programming Guide, "Thread Block Clusters"); larger needs an
# opt-in attribute and may not be schedulable with ~200 KB of shared memory per CTA.
MAX_K_SPLITS = 8


def _epilogue_rules(problem: GemmProblem, c: GemmConfig) -> list[str]:
    """The fused epilogues (epilogue_fused.cu.j2): a tile holds whole 128-column groups of D (the FP8 scales' amax is
    taken in the tile) and, with SwiGLU, a gate block and its up block (B's rows 256j.. of 256 rows)."""
    assert c.block_n is not None
    if not problem.fused_epilogue:
        return []
    errors: list[str] = []
    what = "swiglu" if problem.swiglu else "out_dtype=e4m3"
    if problem.swiglu and c.block_n != SWIGLU_BLOCK:
        errors.append(f"block_n={c.block_n}: swiglu needs block_n={SWIGLU_BLOCK} (a tile holds a 128-row gate block "
                      "and its 128-row up block of B)")
    elif c.block_n % SCALE_BLOCK:
        errors.append(f"block_n={c.block_n}: out_dtype=e4m3 needs block_n a multiple of {SCALE_BLOCK} (each 1x128 "
                      "scale's amax is taken inside one tile)")
    if c.swap_ab:
        errors.append(f"swap_ab=1: {what} is implemented for unswapped tiles only (the swapped tile holds D^T)")
    if (c.k_splits or 1) > 1:
        errors.append(f"k_splits={c.k_splits}: {what} is implemented without split-K")
    if problem.swiglu and problem.out_dtype is DType.E4M3 and c.cross_tile and (c.stages or 0) > 3:
        # NVRTC 13.0, 128x256 contiguous: 376 B of spill stores with 4 stages, none with 3 (or without cross_tile)
        errors.append(f"cross_tile=1: with swiglu, an e4m3 D and {c.stages} stages the kernel spills; use stages=3 "
                      "or cross_tile=0")
    return errors


def _split_k_rules(problem: GemmProblem, c: GemmConfig) -> list[str]:
    splits = c.k_splits or 1
    if splits == 1:
        return ["split_global=1: needs k_splits > 1 (it says where K splits meet)"] if c.split_global else []
    errors: list[str] = []
    if splits > MAX_K_SPLITS:
        errors.append(f"k_splits={splits}: at most {MAX_K_SPLITS} (the portable cluster size, and the splits a "
                      "workspace reduction was written for)")
    if problem.kind is not GemmKind.NORMAL:
        errors.append(f"k_splits={splits}: split-K is implemented for dense GEMMs only, not {problem.kind.value}")
    if c.cluster != 1:
        errors.append(f"k_splits={splits}: needs cluster=1 (no multicast pair beside the K splits)")
    if problem.k_blocks % splits:
        errors.append(f"k_splits={splits}: must divide the {problem.k_blocks} K blocks of 128 (every split runs the "
                      "same compile-time step count)")
    return errors


def _register_rules(c: GemmConfig, target: Target, scales: ScaleRecipe) -> list[str]:
    errors: list[str] = []
    lo, hi = SETMAXNREG_RANGE
    for name in ("producer_regs", "math_regs"):
        value = getattr(c, name)
        if value is not None and (value % 8 or not lo <= value <= min(hi, target.max_regs_per_thread + 1)):
            errors.append(f"{name}={value}: setmaxnreg takes a multiple of 8 in {lo}..{hi}")
    if c.producer_regs is not None and c.math_regs is not None:
        used = THREADS_PER_WARPGROUP * (c.producer_regs + c.math_warpgroups * c.math_regs)
        if used > target.regs_per_sm:
            errors.append(f"registers: {used} per CTA (producer {c.producer_regs}, {c.math_warpgroups} x math "
                          f"{c.math_regs}) > {target.regs_per_sm}")
    limit = c.math_regs if c.math_regs is not None else math_regs_budget(
        c.math_warpgroups, c.producer_regs or DEFAULT_PRODUCER_REGS, target)
    need = math_regs_needed(c, scales)
    if c.block_n in LEGAL_N and c.wgmma_n in LEGAL_N and need > limit:
        sets = ((c.acc_sets or 1) if scales.promotes else 0) + c.waves
        overhead = need - WgmmaShape(c.wgmma_n).accum_regs * sets
        errors.append(f"registers: block {c.block_m}x{c.block_n} needs ~{need} per math thread "
                      f"(accumulators x{sets} + {overhead}) > {limit}; it would spill")
    return errors


def _column_scale_rules(problem: GemmProblem, c: GemmConfig) -> list[str]:
    """The 1x128/1x128 (weight-gradient) recipe: what its kernel implements (dense only is GemmProblem's rule)."""
    if problem.scales is not ScaleRecipe.A1x128_B1x128:
        return []
    errors: list[str] = []
    if problem.out_dtype is not DType.FP32:
        errors.append(f"scales {problem.scales.value}: the weight-gradient GEMM writes float32 (got "
                      f"{problem.out_dtype.value}): its sums are accumulated over calls")
    if (c.k_splits or 1) > 1:
        errors.append(f"k_splits={c.k_splits}: split-K is not implemented for scales {problem.scales.value} (its "
                      "shapes have M, N >= 512 and long K: the tiles fill the SMs without it)")
    if problem.kind is GemmKind.K_GROUPED:
        assert c.block_m is not None
        if problem.m % c.block_m:
            errors.append(f"block_m={c.block_m}: a k-grouped GEMM's tiles must not straddle two groups' rows of D "
                          f"[G, M, N]: block_m must divide M={problem.m}")
    return errors


SWAP_AB_BLOCK_N = (8, 16, 32)  # token columns of a swapped decode tile (wgmma N): M rounded up
SWAP_AB_BLOCK_M = (64, 128)  # weight rows: one or two math warpgroups of one m64 wave (inside one 128-row scale block)


def _swap_ab_rules(problem: GemmProblem, c: GemmConfig) -> list[str]:
    """swap_ab=1: what the swapped kernel implements. Dense e4m3 with the block recipe into bf16; a
    64- or 128-row weight tile (one or two math warpgroups of one m64 wave, inside one 128-row B-scale block); the
    tokens as wgmma's N; no cluster, column waves or gathered-only SA (K splits are cluster ranks, _split_k_rules);
    the D tile staged transposed, unswizzled."""
    if not c.swap_ab:
        return []
    errors: list[str] = []
    if (problem.kind is not GemmKind.NORMAL or problem.scales is not BLOCK_RECIPE or problem.accumulate
            or problem.a_dtype is not DType.E4M3 or problem.b_dtype is not DType.E4M3
            or problem.out_dtype is not DType.BF16):
        errors.append("swap_ab=1: implemented for dense e4m3 GEMMs with 1x128/128x128 scales into bf16 only (got "
                      f"{problem.kind.value}, {problem.a_dtype.value} x {problem.b_dtype.value}, "
                      f"{problem.scales.value}, {problem.out_dtype.value}"
                      f"{', accumulate' if problem.accumulate else ''})")
    if c.block_m not in SWAP_AB_BLOCK_M:
        errors.append(f"swap_ab=1: block_m is the tile's weight rows, one of {SWAP_AB_BLOCK_M} (64 per math "
                      f"warpgroup); got {c.block_m}")
    if c.block_n not in SWAP_AB_BLOCK_N:
        errors.append(f"swap_ab=1: block_n is the token columns, one of {SWAP_AB_BLOCK_N}; got {c.block_n}")
    elif problem.m > c.block_n:
        errors.append(f"swap_ab=1: M={problem.m} tokens do not fit block_n={c.block_n} columns")
    if c.cluster != 1 or c.wave_n not in (None, c.block_n) or c.a_rows not in (None, c.block_m) or c.sa_gather:
        errors.append(f"swap_ab=1: needs cluster=1, wave_n=block_n, a_rows=block_m and sa_gather=0 (got "
                      f"{c.cluster}, {c.wave_n}, {c.a_rows}, {c.sa_gather})")
    if c.swizzle_d:
        errors.append(f"swap_ab=1: the transposed D tile is stored unswizzled (swizzle_d=0), got {c.swizzle_d}")
    return errors


def _pingpong_rules(problem: GemmProblem, c: GemmConfig) -> list[str]:
    """pingpong=1: what the ping-pong consumer implements (consumer.cu.j2): 64- or 128-row tiles per math warpgroup
    (the register rule bounds what fits: a warpgroup holds the whole tile's accumulators), unswapped, one K split,
    every A row of the tile loaded, a plain (unfused) epilogue; the warpgroup's own store replaces epilogue_per_wg,
    and neither the next tile's early issue (cross_tile) nor the last M block's shifted box (a_shift) is built into
    its loop."""
    if not c.pingpong:
        return []
    errors: list[str] = []
    if c.block_m not in (64, 128):
        errors.append(f"pingpong=1: block_m is one math warpgroup's tile, 64 or 128 rows; got {c.block_m}")
    if c.swap_ab or (c.k_splits or 1) > 1 or c.a_rows not in (None, c.block_m):
        errors.append("pingpong=1: needs swap_ab=0, k_splits=1 and a_rows=block_m (got "
                      f"{c.swap_ab}, {c.k_splits}, {c.a_rows})")
    if problem.fused_epilogue:
        errors.append("pingpong=1: implemented for plain epilogues (not swiglu or an e4m3 D)")
    if c.block_m == 128 and b_scale_mode(c.block_n or 0, problem.scales) == "runtime" \
            and not b_scale_splits(c.block_n or 0, problem.scales):
        # the promotion's per-8-column scale choice over a warpgroup's two row waves: contiguous 128x112 spilled 196 B
        errors.append(f"pingpong=1: block_n={c.block_n} selects its B-scale block per 8 columns at run time; not built "
                      "for a ping-pong warpgroup of two row waves (block_m=128: it spills)")
    if c.epilogue_per_wg or c.a_shift or c.cross_tile:
        errors.append("pingpong=1: each warpgroup stores its own tile already (epilogue_per_wg=0), and neither the "
                      "next tile's early issue (cross_tile=0) nor the shifted last A box (a_shift=0) is built into "
                      "its loop")
    return errors
