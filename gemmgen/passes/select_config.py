"""select_config: decide the schedule — the user's pins, then a tuned table row, then the cost model's best candidate.

Reads: the problem, the draft config (the user's pins and a tuned table's row are already decided in it:
stages.decide), the target. Decides: the tile (block_m, block_n), cluster and the operand it shares, K splits, A and
B swapped, the ping-pong consumer, and what follows from them (ring stages, A-slot rows, column waves, grid,
block_k); appends its reason to `Kernel.reasons`. Runs first.

Where the draft leaves a dimension of the candidate space open (tuning/space.py), every legal candidate agreeing with
the draft is estimated (tuning/cost.py, the target's fitted coefficients) and the least estimate wins; where the draft
fixes them all (pins, a table row, or a candidate being built), only the derived fields are completed here (`complete`).
Measured exceptions to the model are rows of the shipped tables (tuning/tables/<target>.json), not rules here.
"""

from __future__ import annotations

from functools import lru_cache

from ..ir import CONFIG_FIELDS, FEATURES, GemmConfig, GemmProblem, Kernel, ScaleRecipe, Target, ceil_div
from ..ir.problem import SWIZZLE_ROW_BYTES
from ..legality import COLUMN_WAVE_N, check, smem_bytes

TILE_FIELDS = ("block_m", "block_n", "cluster", "k_splits", "swap_ab")  # a candidate fixes all of these
MAX_STAGES = 16  # deeper rings measured no faster at any M (bench/NOTES.md v0.1, v0.14)
FEATURE_FINALISTS = 4  # tiles re-ranked with their features: the best of 2/4/8 on the tune runs (NOTES v0.42)
MIN_STAGES = 8  # the ring-budget trim stops here: shallower measured slower (bench/NOTES.md v0.25)
A_ROWS = (8, 16, 32)  # a one-M-block tile's A slot: the fewest of these that hold M, then M rounded up to 8 rows
A_ROWS_STEP = 8


def wave_n_for(problem: GemmProblem, bm: int, bn: int) -> int:
    """The wgmma N of a (bm, bn) tile: bn, except the block recipe's tiles wider than COLUMN_WAVE_N with one m64
    wave per warpgroup, which run as m64n128 column waves sharing one accumulator set (an m64n256 accumulator and
    its fp32 result need ~296 registers per thread)."""
    if problem.scales is ScaleRecipe.A1x128_B128x128 and bm <= 128 and bn > COLUMN_WAVE_N and bn % COLUMN_WAVE_N == 0:
        return COLUMN_WAVE_N
    return bn


def stream_a_rows(m: int) -> int:
    """Token rows a slot holds for M rows: the fewest of A_ROWS, else M rounded up to whole 8-row swizzle atoms."""
    return next((rows for rows in A_ROWS if m <= rows), ceil_div(m, A_ROWS_STEP) * A_ROWS_STEP)


def _ring(problem: GemmProblem, cfg: GemmConfig, target: Target, in_flight: int) -> GemmConfig | None:
    """cfg with the deepest legal ring up to MAX_STAGES, trimmed to about `in_flight` bytes of weights over the CTAs
    reading them (not below MIN_STAGES): past that HBM is saturated and a deeper ring only queues."""
    assert cfg.num_sms is not None
    readers = min(problem.n_blocks(cfg.weight_rows) * (cfg.k_splits or 1) * problem.groups, cfg.num_sms)
    budget = round(in_flight / (readers * cfg.weight_rows * SWIZZLE_ROW_BYTES))
    depth = min(MAX_STAGES, max(MIN_STAGES, budget))  # legality only ever gets shallower rings through
    args = (problem.out_dtype.bytes, problem.scales, problem.a_dtype.bytes, problem.swiglu)
    three, per_stage = smem_bytes(cfg.replace(stages=3), *args), smem_bytes(cfg.replace(stages=4), *args)
    per_stage -= three  # shared memory is linear in the stages: start at the deepest ring that fits it
    fits = 3 + (target.smem_per_block - three) // per_stage if per_stage > 0 else depth
    rings = (cfg.replace(stages=s) for s in range(min(depth, fits), 2, -1))
    return next((ring for ring in rings if not check(problem, ring, target)), None)


def complete(problem: GemmProblem, draft: GemmConfig, target: Target, in_flight: int) -> GemmConfig:
    """A draft whose TILE_FIELDS are decided, with the fields that follow from them decided too (a pinned one kept):
    block_k, the grid (every SM), the cooperative consumer unless ping-pong is given, column waves, A-slot rows (only
    the rows M has, where the tile is M's one block of a dense problem and that is legal) and the ring (_ring). Illegal
    pins stay for the verifier to report."""
    assert draft.block_m is not None and draft.block_n is not None
    bm, bn = draft.block_m, draft.block_n
    swapped = bool(draft.swap_ab)
    cfg = draft.decide(block_k=problem.k_block, num_sms=target.num_sms, pingpong=0, multicast_b=0,
                       wave_n=bn if swapped else wave_n_for(problem, bm, bn))
    if cfg.a_rows is None and not swapped and not problem.kind.is_grouped and problem.m < bm:
        trial = cfg.decide(a_rows=min(bm, stream_a_rows(problem.m)))  # legal only with a ring deep enough for it
        ring = _ring(problem, trial, target, in_flight) if trial.stages is None else trial
        cfg = ring if ring is not None and not check(problem, ring, target) else cfg
    cfg = cfg.decide(a_rows=bm)
    if cfg.stages is None:
        cfg = _ring(problem, cfg, target, in_flight) or cfg.decide(stages=3)
    return cfg


def _with_features(problem: GemmProblem, draft: GemmConfig, cfg: GemmConfig | None, target: Target,
                   coeffs: object) -> tuple[float, dict[str, float]]:
    """The estimate of a candidate's tile with its open features decided (select_features.decide)."""
    from .select_features import decide, estimate_config

    assert cfg is not None
    featured, _notes = decide(problem, cfg.replace(**{f: getattr(draft, f) for f in FEATURES}), target)
    return estimate_config(problem, featured, target, coeffs)


@lru_cache(maxsize=4096)
def _search(problem: GemmProblem, draft: GemmConfig, target: Target) -> tuple[GemmConfig, str] | None:
    """The candidate agreeing with the draft that has the least estimate, and the reason; None if none is legal."""
    from ..tuning import cost, space

    pins = {f: v for f in CONFIG_FIELDS if (v := getattr(draft, f)) is not None}  # each candidate carries them
    coeffs = cost.coefficients(target)
    # tiles are ranked with the open features off (~3x less work than with every feature combination); the best
    # FEATURE_FINALISTS are re-ranked with their features decided as select_features will (evict_first, say, saves
    # the weights' write-back only where the tile is M's one block, so it can reorder tiles of one and two M blocks)
    legal = space.candidates(problem, target, {**dict.fromkeys(FEATURES, 0), **pins})
    ranked = sorted(((cost.estimate(c.kernel, coeffs), c) for c in legal), key=lambda t: t[0][0])
    if not ranked:
        return None
    finalists = sorted(((_with_features(problem, draft, c.kernel.config, target, coeffs), c)
                        for _e, c in ranked[:FEATURE_FINALISTS]), key=lambda t: t[0][0])
    ((seconds, terms), best), rest = finalists[0], finalists[1:]
    why = f"least {cost.describe(seconds, terms)} of {len(ranked)} candidates"
    if rest:
        (next_s, _t), runner = rest[0]
        why += f"; next {space.label(runner)} {next_s * 1e6:.1f} us"
    assert best.kernel.config is not None
    chosen = best.kernel.config
    return draft.decide(**{f: getattr(chosen, f) for f in (*TILE_FIELDS, "split_global", "pingpong", "multicast_b",
                                                            "stages", "a_rows", "num_sms", "wave_n", "block_k")}), why


def run(kernel: Kernel, target: Target) -> Kernel:
    from ..tuning import cost

    problem, draft = kernel.problem, kernel.config
    assert draft is not None, "select_config runs on the pipeline's draft config"
    in_flight = cost.coefficients(target).ring_bytes_in_flight
    if all(getattr(draft, f) is not None for f in TILE_FIELDS):
        cfg = complete(problem, draft, target, in_flight)
        why = f"the tile is given (pinned, a table row or a candidate); {cfg.stages} stages"
    else:
        found = _search(problem, draft.decide(pdl=0), target)
        if found is None:  # nothing legal: a 3-stage ring, so that the verifier lists the rules the pins break
            swapped = bool(draft.swap_ab)
            tile = draft.decide(block_m=64 if swapped else 128, block_n=stream_a_rows(problem.m) if swapped else 128)
            cfg = complete(problem, tile.decide(cluster=1, k_splits=1, swap_ab=0, stages=3), target, in_flight)
            why = "no legal candidate: the verifier lists the rules"
        else:
            cfg, why = found
    return kernel.replace(config=cfg.decide(pdl=0, swap_ab=0, cluster=1, k_splits=1)).because("select_config", why)
