"""The kernel plan: every fact the kernel text and the launcher must agree on, computed once (docs/CONVENTIONS.md #14).

`passes/plan_kernel.py` makes a `KernelPlan` from the finished config; the templates print it, the launcher builds
its tensor maps, parameter block and grid from it, and `legality.check_plan` checks it. Nothing here computes:
these are frozen records (the arithmetic lives in the pass and in `legality.smem_layout`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from enum import Enum

from .problem import ceil_div


class SchedulerKind(Enum):
    """Which tile scheduler the kernel's warp roles share: the one place where problem kinds differ."""

    DENSE = "dense"
    M_GROUPED_CONTIGUOUS = "m_grouped_contiguous"
    M_GROUPED_MASKED = "m_grouped_masked"
    K_GROUPED = "k_grouped"


class ParamKind(Enum):
    TMAP = "tmap"  # a CUtensorMap passed by value (__grid_constant__); `source` names the map's operand
    POINTER = "pointer"  # a device pointer; `source` names the launcher's tensor
    INT32 = "int32"  # a run-time scalar; `source` names the symbol ("m" rows, "g" groups, "sa_stride_*")


@dataclass(frozen=True, slots=True)
class Extent:
    """A size known at launch: align_up(product of the run-time symbols, align) * scale.

    Symbols: "m" = rows of the kernel's per-group A/D view (dense M, contiguous M_total, masked M_max), "g" = groups.
    """

    scale: int = 1
    symbols: tuple[str, ...] = ()
    align: int = 1

    def value(self, env: Mapping[str, int]) -> int:
        product = math.prod(env[s] for s in self.symbols)
        return ceil_div(product, self.align) * self.align * self.scale

    def __str__(self) -> str:
        sym = "*".join(self.symbols)
        if self.align > 1:
            sym = f"align({sym}, {self.align})"
        if not sym:
            return str(self.scale)
        return sym if self.scale == 1 else f"{sym}*{self.scale}"


@dataclass(frozen=True, slots=True)
class SmemLayout:
    """Byte offsets from the 1024-aligned dynamic shared-memory base (legality.smem_layout computes them)."""

    d_offset: int
    d_bytes: int
    a_offset: int
    a_stage_bytes: int
    b_offset: int
    b_stage_bytes: int
    sfa_offset: int
    sfa_stage_bytes: int
    barrier_offset: int
    red_offset: int  # split-K: the partial tile a rank > 0 hands to rank 0 (fp32, thread-major); 0 bytes otherwise
    red_bytes: int
    red_barrier_offset: int  # split-K: red_full (rank 0: the partials are written) and red_empty (rank > 0: read)
    total: int  # from the aligned base; the launch asks for total + the alignment slack
    # B scales per stage: 1x128/1x128 (wgrad) block_n of them, one per column of the tile; the block recipe the one
    # or two 128-row scale blocks the tile touches; 0 bytes for the recipes that do not promote
    sfb_offset: int = 0
    sfb_stage_bytes: int = 0


@dataclass(frozen=True, slots=True)
class BarrierPlan:
    """The ring's mbarriers: full[s] at offset + 8s, empty[s] at offset + 8(stages + s)."""

    offset: int
    stages: int
    full_arrivals: int  # the TMA thread's arrive.expect_tx (+ the block recipe's B-scale copy thread) + one per
    #                     thread of the SA (and SB) gather warps
    empty_arrivals: int  # the math threads' releases of a slot (plan_kernel.empty_arrivals: every lane of a warp
    #                      that read scales from it, one per warp per cluster CTA otherwise)
    stage_tx_bytes: int  # bytes the TMA loads of one stage deliver to this CTA (= the boxes it waits for)


@dataclass(frozen=True, slots=True)
class TmaMapPlan:
    """One 2-D tiled tensor map (cuTensorMapEncodeTiled): dims {inner, outer} elements, box {inner, outer}."""

    param: str  # the kernel parameter that carries it
    operand: str  # the launcher's tensor: "a", "b", "sa", "out"
    dtype: str  # TMA element type: "u8" (e4m3 bytes), "f32", "bf16"
    elem_bytes: int
    dims: tuple[Extent, Extent]
    row_stride: Extent  # bytes between consecutive outer rows
    box: tuple[int, int]
    swizzle: int  # bytes; 0 = none
    loaded_per_stage: bool  # a pipeline-stage load (its box counts in the full barrier's transaction bytes)
    when: str = ""  # a run-time flag (an env symbol): the map is encoded and used only where it is nonzero

    @property
    def box_bytes(self) -> int:
        return self.box[0] * self.box[1] * self.elem_bytes


@dataclass(frozen=True, slots=True)
class ParamPlan:
    name: str
    kind: ParamKind
    source: str
    ctype: str  # the C++ declaration's type
    doc: str


@dataclass(frozen=True, slots=True)
class DStorePlan:
    """How the epilogue stages D: `atoms` column boxes of `atom_cols` elements (the D map's box), swizzled rows."""

    atom_cols: int
    atoms: int
    row_bytes: int
    atom_bytes: int
    swizzle_mask: int  # (swizzle bytes / 16) - 1; 0 = none
    row_predicate: bool  # a tile may hold rows that must not be written (grouped): such tiles store row by row
    elem_bytes: int = 2  # 1: e4m3 D, 2: bf16 D, 4: fp32 D
    reduce_add: bool = False  # accumulate: the TMA store adds the tile into D (cp.reduce.async.bulk.tensor .add)
    # Each math warpgroup stages and stores its own rows (its own named barrier, D rows and store thread), so one
    # warpgroup's epilogue may overlap the other's wgmma (the D map's box is then ROWS_PER_WG rows).
    per_warpgroup: bool = False
    # The fused epilogue (epilogue_fused.cu.j2): SwiGLU pairs the tile's gate and up column halves into D's block_n / 2
    # columns; fp8_scales quantizes each row's 128 columns to e4m3 with the scale it writes (amax / 448).
    swiglu: bool = False
    fp8_scales: bool = False

    @property
    def fused(self) -> bool:
        return self.swiglu or self.fp8_scales


# A balanced launch (GemmConfig.balanced) balances from here: its gains were at M >= 2304, 3+ rounds (NOTES v0.12)
BALANCED_MIN_ROWS = 128
BALANCED_MIN_ROUNDS = 3


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    threads: int
    dynamic_smem: int
    cluster: int
    max_ctas: int
    block_m: int
    n_blocks: int
    tiles_per_group: bool  # the grid bound counts M tiles in every group (masked layout)
    k_splits: int = 1  # CTAs per tile (one cluster rank per K split); `cluster` counts them
    balanced: bool = False  # past BALANCED_MIN_ROUNDS rounds of tiles: the fewest clusters that keep the round
    # count (GemmConfig.balanced)
    pdl: bool = False  # programmatic dependent launch (GemmConfig.pdl): the launch attribute
    # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, and griddepcontrol in the kernel (kernel.cu.j2)
    tile_rows: int = 0  # A and B swapped: the tiles' rows are the weights' N (compile-time), not the run-time M
    max_m: int = 0  # the most rows of A (tokens) a launch may have; 0: any (decode a_rows slots: Launcher)
    partial_floats: int = 0  # split_global: fp32 of one split's partial tile in the workspace (0: no workspace)
    m_pair: int = 1  # M blocks a cluster's CTAs take side by side (2: multicast_b); an odd count's last pair has one
    # tile past M, computed and not stored

    def tiles(self, m: int, g: int) -> int:
        m_blocks = ceil_div(ceil_div(self.tile_rows or m, self.block_m), self.m_pair) * self.m_pair
        return m_blocks * self.n_blocks * (g if self.tiles_per_group else 1)

    def workspace_floats(self, m: int, g: int) -> tuple[int, int]:
        """split_global: (fp32 partials, int32 counters) the launch's workspace holds: one partial per tile and
        split, one arrival counter per tile (zero between launches: the last arrival resets it). (0, 0): none."""
        if not self.partial_floats:
            return 0, 0
        tiles = self.tiles(m, g)
        return tiles * self.k_splits * self.partial_floats, tiles

    def default_grid(self, m: int, g: int) -> int:
        """The grid without balancing: what a balanced launch is measured against."""
        return replace(self, balanced=False).grid(m, g)

    def grid(self, m: int, g: int) -> int:
        """One CTA per SM up to the CTAs of every tile (an upper bound for grouped kinds), a multiple of the
        cluster; `balanced`, where M > BALANCED_MIN_ROWS and the tiles take BALANCED_MIN_ROUNDS or more rounds of the
        grid, ceil(units / rounds) clusters: the same number of rounds on fewer SMs, the last round short by fewer
        than `rounds` units."""
        tiles = self.tiles(m, g)
        ctas = min(self.max_ctas, tiles * self.k_splits) // self.cluster * self.cluster
        units, clusters = tiles * self.k_splits // self.cluster, self.max_ctas // self.cluster
        rounds = ceil_div(units, clusters) if clusters else 0
        if self.balanced and m > BALANCED_MIN_ROWS and rounds >= BALANCED_MIN_ROUNDS:
            ctas = ceil_div(units, rounds) * self.cluster
        return ctas


@dataclass(frozen=True, slots=True)
class KernelPlan:
    scheduler: SchedulerKind
    smem: SmemLayout
    barriers: BarrierPlan
    maps: tuple[TmaMapPlan, ...]
    params: tuple[ParamPlan, ...]  # the kernel's parameters, in order
    b_scale_mode: str  # "uniform" (one B-scale block per tile), "aligned" (compile-time split), "runtime" (split),
    # "column" (1x128/1x128: one scale per column, from the stage's shared memory), "none" (constant along K)
    d_store: DStorePlan
    m_alignment: int  # rows every group's segment of A starts at a multiple of (contiguous layout; else 1)
    k_steps: int  # main-loop steps per tile: k-blocks (of one K split) x waves (row and column)
    unroll: int  # main-loop steps per unrolled body: lcm(accumulator sets, waves)
    launch: LaunchPlan
    sa_gather_threads: int  # producer threads gathering each stage's A scales (SA not in the TMA layout, or sa_gather)
    sb_gather_threads: int = 0  # "column" B scales not in the TMA layout: producer threads gathering them (8
    # columns each); 0 for the block recipe, whose B scales the math threads read from global memory
    b_scale_splits: tuple[int, ...] = ()  # "runtime" mode with few places: every tile.n0 % 128 a tile can start at;
    # the main loop is emitted once per place with the split a constant (empty: the split is a run-time value)
    cross_tile_issue: bool = False  # the next tile's first main-loop step is issued before this tile's epilogue
    a_tail_shift: bool = False  # a dense M's last, partial M block loads A rows ending at M (its box shifted up by
    # whole 8-row atoms, wgmma reading from the tile's first row in the slot), not a box mostly past M
    swap_ab: bool = False  # A and B swapped (GemmConfig.swap_ab): tmap_a over the weights, tmap_b over the tokens,
    # the tokens' scales per column from the SFA stage, D^T tiles stored transposed
    early_column_scales: bool = False  # "column" B scales loaded into registers at the issue, while the wgmma group
    # runs (else the promotion loads them from the slot after the wait)
    pingpong: bool = False  # the ping-pong consumer (GemmConfig.pingpong): each math warpgroup computes and stores
    # whole tiles, the CTA's tiles in turn; a ring slot is read by one warpgroup, the D tile staged per warpgroup

    def map(self, operand: str) -> TmaMapPlan:
        return next(m for m in self.maps if m.operand == operand)

    def has_param(self, name: str) -> bool:
        return any(p.name == name for p in self.params)

    def render_lines(self) -> list[str]:
        splits = f" (one main loop per place n0 % 128 in {list(self.b_scale_splits)})" if self.b_scale_splits else ""
        cross = ", the next tile's step 0 issued before the epilogue" if self.cross_tile_issue else ""
        cross += ", the last M block's A box shifted to end at M" if self.a_tail_shift else ""
        cross += ", A and B swapped (weights in wgmma's M, tokens in its N)" if self.swap_ab else ""
        cross += ", column B scales loaded at the issue" if self.early_column_scales else ""
        cross += ", ping-pong math warpgroups (whole tiles in turn)" if self.pingpong else ""
        lines = [f"scheduler {self.scheduler.value}, B scales {self.b_scale_mode}{splits}, {self.k_steps} main-loop "
                 f"steps per tile (unrolled by {self.unroll}){cross}"]
        # The SFB region exists for the promoting recipes only (the other kernels' IR text stays as it was).
        lines.append("smem " + ", ".join(f"{f.name}={getattr(self.smem, f.name)}" for f in fields(self.smem)
                                         if self.smem.sfb_stage_bytes or not f.name.startswith("sfb_")))
        b = self.barriers
        lines.append(f"barriers at {b.offset}: full x{b.stages} ({b.full_arrivals} arrival + {b.stage_tx_bytes} tx "
                     f"bytes), empty x{b.stages} ({b.empty_arrivals} arrivals)")
        for m in self.maps:
            lines.append(f"tma {m.param}: {m.operand} {m.dtype} dims {{{m.dims[0]}, {m.dims[1]}}} row stride "
                         f"{m.row_stride} B, box {{{m.box[0]}, {m.box[1]}}}, swizzle {m.swizzle or 'none'}")
        d = self.d_store
        lines.append(f"d store: {d.atoms} x {d.atom_cols}-column boxes of {d.elem_bytes}-byte elements, row predicate "
                     f"{d.row_predicate}{', reduce-add into D' if d.reduce_add else ''}"
                     f"{', each math warpgroup storing its own rows' if d.per_warpgroup else ''}"
                     f"{', SwiGLU of the gate and up halves' if d.swiglu else ''}"
                     f"{', e4m3 with 1x128 scales computed' if d.fp8_scales else ''}")
        lines.append("params " + ", ".join(f"{p.name}:{p.kind.value}({p.source})" for p in self.params))
        la = self.launch
        if la.k_splits > 1 and la.partial_floats:
            lines.append(f"split-K: {la.k_splits} CTAs per tile, partials ({la.partial_floats * 4} B each) added in "
                         "split order from a global workspace by the last to arrive")
        elif la.k_splits > 1:
            lines.append(f"split-K: {la.k_splits} cluster ranks per tile, partials reduced by rank 0 through DSMEM "
                         f"({self.smem.red_bytes} B each)")
        lines.append(f"launch {la.threads} threads, {la.dynamic_smem} B dynamic smem, cluster {la.cluster}, "
                     f"<= {la.max_ctas} CTAs" + (", balanced rounds" if la.balanced else ""))
        return lines
