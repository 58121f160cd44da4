"""One cost model for every candidate: `estimate(kernel, coefficients) -> (seconds, terms)`.

A kernel's time is its fixed cost (launch, prologue, the last epilogue) plus its rounds of work units (tiles x K
splits over the grid) times the slower of two per-unit times: the tensor cores' (the unit's wgmma FLOPs at the
target's sustained rate, plus the CUDA cores' promotion where one accumulator set makes it wait, plus a per-k-block
issue cost), and the memory's (the unit's share of the problem's bytes at the streaming rate, or the ring's round
trips where too few stages are in flight to cover the latency). K splits add their hand-over. Coefficients are
per-target data (tuning/targets/<target>.json); `fitted: false` there means first estimates, not yet fitted to
measurements (bench/fit_cost.py over `gemmgen tune` runs). select_config takes the candidate it estimates least.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..ir import DType, GemmKind, Kernel, ScaleRecipe, Target, ceil_div
from ..legality import A_SHIFT_ROWS, d_tile_cols
from .table import target_slug

TARGETS_DIR = Path(__file__).resolve().parent / "targets"


@dataclass(frozen=True)
class Coefficients:
    target: str
    fitted: bool
    sms: int
    fp8_flops: float  # sustained dense FP8 FLOP/s of the whole GPU (under its power limit)
    bf16_flops: float
    stream_bytes_per_s: float  # HBM read rate a streaming kernel reaches
    ring_round_trip_s: float  # a k-block load's latency under load: S stages retire a k-block every latency / S
    l2_bytes_per_s: float  # L2 -> SM rate of the whole GPU: every tile loads its A and B rows from L2
    launch_s: float  # fixed: launch, prologue, first loads, last epilogue
    split_handover_s: float  # per extra K split of a 64 x 64 partial tile (scaled by the tile's area)
    promotion_elements_per_s_per_sm: float  # accumulator elements promoted (scaled and added) per second per SM
    kblock_overhead_s: float  # per k-block of a unit: barriers, descriptors, scale loads
    tile_s: float  # per round of tiles: the epilogue and tile switch the next tile's loads do not hide
    wgmma_knee_n: float  # a wgmma narrower than this waits on shared memory: its time x (knee / 2N + 1/2)
    overlap_loss: float  # the share of the shorter of compute and memory that does not overlap the longer
    epilogue_bytes_per_s_per_sm: float  # D staged through shared memory per SM at a 128-byte swizzle (narrower: slower)
    ring_bytes_in_flight: int  # weights in flight over the grid that saturate HBM: select_config trims rings to it
    # the features (select_features estimates each on and off):
    dirty_writeback: float  # share of the weights' bytes written back (dirty L2 lines they displace), not overlapped
    evicted_reread: float  # with evict_first: share of the weights re-read from HBM per further M block, not overlapped
    box_issue_s: float  # the TMA thread's time per box of a stage: a stage of n boxes waits n x this
    gather_thread_s: float  # per k-block per producer thread gathering SA (the full barrier's extra arrivals)
    per_wg_hidden: float  # share of the epilogue hidden by an epilogue per math warpgroup
    per_wg_contention: float  # with a main-loop body of one k-block: share of the epilogue it adds instead
    idle_sm_gain: float  # a balanced grid's compute time x (1 - this x its idle SMs' share): the power cap's headroom
    contiguous_switch_s: float  # per tile of the contiguous scheduler: the expert lookup and padding skip
    cross_tile_wait_s: float  # per tile with cross-tile issue (which hides the switch): the slot wait it moves
    oob_row_s: float  # per k-block per A row of a box past M (TMA's zero fill)
    late_column_scales_s: float  # per k-block of a unit whose column B scales are loaded after the wgmma wait
    pingpong_exposed: float  # ping-pong: share of a tile's epilogue the other warpgroup's main loop does not hide


@cache
def coefficients(target: Target) -> Coefficients:
    """The target's coefficients (the H200's where there is no file for it)."""
    path = TARGETS_DIR / f"{target_slug(target)}.json"
    if not path.is_file():
        path = TARGETS_DIR / "h200.json"
    return from_json(json.loads(path.read_text()))


def from_json(raw: dict) -> Coefficients:
    fields = Coefficients.__dataclass_fields__
    return Coefficients(**{k: raw[k] for k in fields})


def estimate(kernel: Kernel, coeffs: Coefficients) -> tuple[float, dict[str, float]]:
    """Seconds for one launch of a finished kernel on its problem's expected rows, and the terms that made them."""
    p, c, plan = kernel.problem, kernel.config, kernel.plan
    assert c is not None and plan is not None and c.block_m is not None and c.block_n is not None
    la = plan.launch
    m = max(p.m, 1)
    tiles = la.tiles(m, p.groups)
    units = tiles * la.k_splits
    grid = max(la.grid(m, p.groups), 1)
    rounds = ceil_div(units, grid)
    kb = p.k_blocks // la.k_splits  # k-blocks per unit
    rate = (coeffs.bf16_flops if p.a_dtype is DType.BF16 else coeffs.fp8_flops) / coeffs.sms
    unit_flops = 2.0 * c.block_m * c.block_n * kb * p.k_block  # a tile computes all its rows and columns
    # a narrow wgmma reads its A rows from shared memory as often as a wide one: below the knee it waits on them
    mma = unit_flops / rate * max(1.0, coeffs.wgmma_knee_n / (2 * c.wgmma_n) + 0.5)
    promote = 0.0
    if p.scales.promotes:
        # a second accumulator set, or a second math warpgroup, runs wgmma while one promotes: a share is hidden
        # (not a ping-pong one: it waits for its turn while this one's main loop runs)
        hidden = (c.acc_sets or 1) * (1 if c.pingpong else c.math_warpgroups)
        promote = c.block_m * c.block_n * kb / coeffs.promotion_elements_per_s_per_sm / hidden
    gather = kb * coeffs.gather_thread_s * c.sa_rows / 4 if c.sa_gather else 0.0
    late = kb * coeffs.late_column_scales_s if plan.b_scale_mode == "column" and not plan.early_column_scales else 0.0
    compute = mma + promote + kb * coeffs.kblock_overhead_s + gather + late
    if la.balanced:  # the same rounds on fewer SMs than the default grid: the power cap lets them clock higher
        compute *= 1 - coeffs.idle_sm_gain * max(la.default_grid(m, p.groups) - grid, 0) / coeffs.sms
    # memory: the problem's bytes spread over the rounds, each round's share streamed by its CTAs; a ring of S
    # stages keeps at most S k-blocks in flight, so a unit needs at least kb round trips / S; and every unit loads
    # its A and B rows from L2 (the shared operand once per cluster pair: multicast)
    a_bytes = p.total_rows * p.k * p.a_dtype.bytes
    b_bytes = p.n * p.k * p.b_dtype.bytes * (p.groups if p.kind.is_grouped and p.kind is not GemmKind.K_GROUPED else 1)
    d_bytes = p.total_rows * p.out_n * p.out_dtype.bytes * (2 if p.accumulate else 1)
    # the weights' L2 policy: by default their stream displaces L2 lines, a share dirty (written back over HBM);
    # evict_first spares those, but its lines go first, so M blocks after the first re-read a share from HBM. Either
    # is HBM time the loads wait on whatever bounds the unit, so it adds to the kernel's time (not inside max(compute,
    # memory)): evict_first measured x1.03-1.18 at one or two M blocks where the stream is not the bound
    # (bench/NOTES.md v0.41)
    group_rows = p.m // p.groups if p.kind is GemmKind.M_GROUPED_CONTIGUOUS else p.m
    m_blocks = 1 if c.swap_ab else ceil_div(max(group_rows, 1), c.block_m)
    policy_share = coeffs.evicted_reread * (m_blocks - 1) if c.evict_first else coeffs.dirty_writeback
    policy = policy_share * b_bytes / coeffs.stream_bytes_per_s
    stream = (a_bytes + b_bytes + d_bytes) / rounds / coeffs.stream_bytes_per_s
    row_bytes = p.k_block * p.a_dtype.bytes
    a_rows = c.weight_rows if c.swap_ab else c.load_rows
    b_rows = c.sa_rows if c.swap_ab else c.block_n
    pair = c.cluster or 1
    a_rows, b_rows = (a_rows, b_rows / pair) if c.multicast_b else (a_rows / pair, b_rows)
    l2 = kb * row_bytes * (a_rows + b_rows) * min(grid, units) / coeffs.l2_bytes_per_s
    latency = kb * coeffs.ring_round_trip_s / max(c.stages or 1, 1)
    boxes = 2 + (p.scales.promotes and not c.sa_gather) + (p.scales is ScaleRecipe.A1x128_B1x128)
    memory = max(stream, latency, l2, kb * boxes * coeffs.box_issue_s)
    unit = max(compute, memory) + coeffs.overlap_loss * min(compute, memory)
    split_area = c.block_m * c.block_n / (64 * 64)
    handover = (la.k_splits - 1) * coeffs.split_handover_s * split_area
    # the epilogue stages D through shared memory: a narrower swizzle (block_n not a multiple of 64) conflicts on banks
    swizzle = (c.swizzle_d or 16) / 128
    epilogue = c.block_m * d_tile_cols(c.block_n, p.swiglu) * p.out_dtype.bytes / (coeffs.epilogue_bytes_per_s_per_sm
                                                                                  * swizzle)
    full_epilogue = epilogue
    # ping-pong: a warpgroup's epilogue runs beside the other's main loop, but the CTA's last one beside nothing
    if c.pingpong:
        epilogue *= coeffs.pingpong_exposed
    elif c.epilogue_per_wg:
        # beside a one-k-block body (k-grouped) the other warpgroup's scale loads wait on its D stores (NOTES v0.42)
        one_kblock_body = p.scales.promotes and plan.unroll // c.waves == 1
        epilogue *= 1 + coeffs.per_wg_contention if one_kblock_body else 1 - coeffs.per_wg_hidden
    switch = coeffs.contiguous_switch_s if p.kind is GemmKind.M_GROUPED_CONTIGUOUS else 0.0
    tile = coeffs.tile_s + epilogue + (coeffs.cross_tile_wait_s if c.cross_tile else switch)
    # the last M block's A box past M (zero-filled by TMA), once: its round waits for it
    last_rows = group_rows - (m_blocks - 1) * c.block_m
    oob = 0 if c.swap_ab or p.kind.is_grouped else max(c.load_rows - last_rows, 0)
    oob = min(oob, A_SHIFT_ROWS - 1) if c.a_shift else oob
    seconds = coeffs.launch_s + rounds * (unit + tile) + handover + kb * oob * coeffs.oob_row_s + policy
    seconds += (1 - coeffs.pingpong_exposed) * full_epilogue if c.pingpong else 0.0
    terms = {"rounds": float(rounds), "units": float(units), "grid": float(grid), "mma": rounds * mma,
             "promote": rounds * promote, "compute": rounds * compute, "stream": rounds * stream,
             "latency": rounds * latency, "l2": rounds * l2, "handover": handover, "fixed": coeffs.launch_s,
             "tiles": rounds * tile, "l2_policy": policy}
    return seconds, terms


def describe(seconds: float, terms: dict[str, float]) -> str:
    """One line: the estimate and its largest terms."""
    main = sorted((k for k in ("compute", "stream", "latency", "l2", "handover", "tiles", "l2_policy") if terms[k] > 0),
                  key=lambda k: -terms[k])
    parts = ", ".join(f"{k} {terms[k] * 1e6:.1f}" for k in main[:3])
    return f"estimate {seconds * 1e6:.1f} us ({int(terms['rounds'])} round(s) of {int(terms['units'])} units: {parts})"
