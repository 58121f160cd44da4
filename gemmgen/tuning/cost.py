"""One cost model for every candidate: `estimate(kernel, coefficients) -> (seconds, terms)`.

A kernel's time is its fixed cost (launch, prologue, the last epilogue) plus its rounds of work units (tiles x K
splits over the grid) times the slower of two per-unit times: the tensor cores' (the unit's wgmma FLOPs at the
target's sustained rate, plus the CUDA cores' promotion where one accumulator set makes it wait, plus a per-k-block
issue cost), and the memory's (the unit's share of the problem's bytes at the streaming rate, or the ring's round
trips where too few stages are in flight to cover the latency). K splits add their hand-over. Coefficients are
per-target data (tuning/targets/<target>.json); `fitted: false` there means first estimates, not yet fitted to
measurements. The model ranks candidates for `gemmgen tune`; selection does not read it yet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..ir import DType, GemmKind, Kernel, Target, ceil_div
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
    l2_round_trip_s: float  # the same where the operands are re-read by several M blocks (mostly L2 hits)
    launch_s: float  # fixed: launch, prologue, first loads, last epilogue
    split_handover_s: float  # per extra K split of a 64-row tile
    promotion_elements_per_s_per_sm: float  # accumulator elements promoted (scaled and added) per second per SM
    kblock_overhead_s: float  # per k-block of a unit: barriers, descriptors, scale loads


@cache
def coefficients(target: Target) -> Coefficients:
    """The target's coefficients (the H200's where there is no file for it)."""
    path = TARGETS_DIR / f"{target_slug(target)}.json"
    if not path.is_file():
        path = TARGETS_DIR / "h200.json"
    raw = json.loads(path.read_text())
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
    mma = unit_flops / rate
    promote = 0.0
    if p.scales.promotes and (c.acc_sets or 1) == 1 and c.math_warpgroups == 1:
        # a second accumulator set, or a second math warpgroup, runs wgmma while one promotes
        promote = c.block_m * c.block_n * kb / coeffs.promotion_elements_per_s_per_sm
    compute = mma + promote + kb * coeffs.kblock_overhead_s
    # memory: the problem's bytes spread over the rounds, each round's share streamed by its CTAs; a ring of S
    # stages keeps at most S k-blocks in flight, so a unit needs at least kb round trips / S
    a_bytes = p.total_rows * p.k * p.a_dtype.bytes
    b_bytes = p.n * p.k * p.b_dtype.bytes * (p.groups if p.kind.is_grouped and p.kind is not GemmKind.K_GROUPED else 1)
    d_bytes = p.total_rows * p.n * p.out_dtype.bytes * (2 if p.accumulate else 1)
    stream = (a_bytes + b_bytes + d_bytes) / rounds / coeffs.stream_bytes_per_s
    # B read by one M block streams from DRAM; re-read by several it mostly comes from L2, sooner
    trip = coeffs.ring_round_trip_s if p.m_blocks(c.block_m) <= p.groups else coeffs.l2_round_trip_s
    latency = kb * trip / max(c.stages or 1, 1)
    memory = max(stream, latency)
    handover = (la.k_splits - 1) * coeffs.split_handover_s * c.block_m / 64
    seconds = coeffs.launch_s + rounds * max(compute, memory) + handover
    terms = {"rounds": float(rounds), "units": float(units), "grid": float(grid), "mma": rounds * mma,
             "promote": rounds * promote, "compute": rounds * compute, "stream": rounds * stream,
             "latency": rounds * latency, "handover": handover, "fixed": coeffs.launch_s}
    return seconds, terms


def describe(seconds: float, terms: dict[str, float]) -> str:
    """One line: the estimate and its largest terms."""
    main = sorted((k for k in ("compute", "stream", "latency", "handover") if terms[k] > 0),
                  key=lambda k: -terms[k])
    parts = ", ".join(f"{k} {terms[k] * 1e6:.1f}" for k in main[:3])
    return f"estimate {seconds * 1e6:.1f} us ({int(terms['rounds'])} round(s) of {int(terms['units'])} units: {parts})"
