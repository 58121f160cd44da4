"""The masked layout's tile cost, read by select_config: expected waves over the group sizes a caller draws.

The host knows only expected_m; masked_m (on the device, for CUDA graphs) varies about it, and a group's tail M
block costs a whole tile, so a tile count at expected_m misjudges the waves (2 x [574, 489] rows put 128x128 at 288
tiles, 2.2 waves over 132 SMs, where 2 x 512 would be 256). Each group's size is taken as DeepGEMM's tests draw it
(tests/generators.py, generate_m_grouped_masked: int(expected_m * uniform(0.7, 1.3))); the cost of a tile is

    E[ceil(all groups' M blocks x N blocks / SMs)] x block_m x (block_n + TILE_FIXED_COLUMNS)

(x ROWS_64_COST for 64-row tiles).

Fitted to 8 draws of the 6 masked bench cases x 7 tiles (bench/results/2026-11-30-717cde7-masked/masked_draws.json)
and checked on 5 cases outside the fit (bench/results/2026-11-30-7bd6d48/masked_draws.json; bench/NOTES.md v0.11 §3).
Measured on FP8 kernels with 128-row tiles of block_n 112-192 only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from ..ir import GemmProblem, ceil_div

SPREAD = (0.7, 1.3)  # a group's rows: int(expected_m x uniform(SPREAD))
# A tile's per-k-block fixed cost (scale loads, barrier waits, wgmma issue) in block_n columns: the fit above picks
# best at 16-24; the 128-row tiles' measured rates (1200 / 1250 / 1300 TFLOPS at block_n 128 / 160 / 192) say ~40;
# the picks of 24-40 differ by 0.5% on that set.
TILE_FIXED_COLUMNS = 24
# A 64-row tile (one math warpgroup) per FLOP against a 128-row tile: 915 against 1209 TFLOPS per wave-equivalent
# (bench/results/2026-11-30-717cde7-masked/sweep_masked.json).
ROWS_64_COST = 1.3
EXACT_PRODUCTS = 200_000  # the exact sum's convolution may take this many products (~groups^2 x support^2 / 2)
MAX_SUPPORT = 4096  # one group's block counts are tabulated up to this many values; beyond, only their moments
SMOOTH_WAVES = 64  # a sum spread over more waves than this: E[ceil(waves)] taken as E[waves] + 1/2


@dataclass(frozen=True)
class BlockSum:
    """The distribution of all groups' M blocks: exact (value, probability) pairs, or a normal law's moments."""

    exact: tuple[tuple[int, float], ...] | None
    mean: float
    sd: float


def blocks_per_group(expected: int, bm: int) -> dict[int, float]:
    """P(a group takes j M blocks of bm rows): its size is int(x), x uniform in SPREAD x expected, so it takes j >= 1
    blocks for x in [(j - 1) bm + 1, j bm + 1), none for x < 1."""
    lo, hi = SPREAD[0] * expected, SPREAD[1] * expected
    first = 0 if lo < 1 else ceil_div(int(lo), bm)
    last = 0 if hi < 1 else ceil_div(math.ceil(hi) - 1, bm)  # int(x) <= ceil(hi) - 1 for x < hi
    dist: dict[int, float] = {}
    for j in range(first, last + 1):
        start = (j - 1) * bm + 1 if j else -math.inf
        part = min(hi, j * bm + 1) - max(lo, start)
        if part > 0:
            dist[j] = part / (hi - lo)
    return dist


@lru_cache(maxsize=256)
def block_sum(expected: int, bm: int, groups: int, exact: bool | None = None) -> BlockSum:
    """The sum over `groups` groups: convolved exactly within EXACT_PRODUCTS (or as `exact` says), else the normal
    law of a sum of independent groups (its moments from one group's table, or in closed form past MAX_SUPPORT)."""
    lo, hi = SPREAD[0] * expected, SPREAD[1] * expected
    one = blocks_per_group(expected, bm) if (hi - lo) / bm <= MAX_SUPPORT else None
    if one is not None:
        mean = sum(j * p for j, p in one.items())
        var = sum((j - mean) ** 2 * p for j, p in one.items())
    else:  # a block count ceil(int(x) / bm) of x spread over more than MAX_SUPPORT blocks: x / bm plus ~1/2
        mean, var = (lo + hi) / (2 * bm) + 0.5, ((hi - lo) / bm) ** 2 / 12 + 1 / 6
    if exact is None:
        exact = one is not None and (groups == 1 or (groups * len(one)) ** 2 / 2 <= EXACT_PRODUCTS)
    if not exact or one is None:
        return BlockSum(None, mean * groups, math.sqrt(var * groups))
    base, probs = min(one), [0.0] * (max(one) - min(one) + 1)
    for j, p in one.items():
        probs[j - base] = p
    total = [1.0]
    for _ in range(groups):
        nxt = [0.0] * (len(total) + len(probs) - 1)
        for a, pa in enumerate(total):
            if pa:
                for b, pb in enumerate(probs):
                    nxt[a + b] += pa * pb
        total = nxt
    pairs = tuple((base * groups + i, p) for i, p in enumerate(total) if p)
    return BlockSum(pairs, mean * groups, math.sqrt(var * groups))


def expected_waves(s: BlockSum, n_blocks: int, num_sms: int) -> float:
    """E[ceil(B x n_blocks / num_sms)] for the sum B: exact, or from the normal law as sum over w >= 1 of
    P(B x n_blocks > (w - 1) num_sms) (B an integer: continuity-corrected), or E + 1/2 when spread over many waves."""
    if s.exact is not None:
        return sum(p * ceil_div(blocks * n_blocks, num_sms) for blocks, p in s.exact)
    if 12 * s.sd * n_blocks / num_sms > SMOOTH_WAVES:
        return s.mean * n_blocks / num_sms + 0.5
    if s.sd < 1e-9:
        return ceil_div(round(s.mean) * n_blocks, num_sms)
    low = max(0.0, s.mean - 7 * s.sd) * n_blocks / num_sms
    high = (s.mean + 7 * s.sd) * n_blocks / num_sms
    waves = float(math.floor(low))  # P(X > w - 1) = 1 for w <= floor(low): X >= low there (within 7 sd)
    for w in range(math.floor(low) + 1, math.ceil(high) + 2):
        below = (w - 1) * num_sms // n_blocks  # X > w - 1  <=>  B > below
        waves += 0.5 * math.erfc((below + 0.5 - s.mean) / (s.sd * math.sqrt(2)))
    return waves


def tile_weight(bm: int, bn: int) -> float:
    """One wave's cost of a bm x bn tile, relative: bm x (bn + TILE_FIXED_COLUMNS), x ROWS_64_COST at 64 rows."""
    return bm * (bn + TILE_FIXED_COLUMNS) * (ROWS_64_COST if bm == 64 else 1.0)


def masked_cost(problem: GemmProblem, bm: int, bn: int, num_sms: int) -> float:
    """The expected cost of the masked problem with bm x bn tiles (module docstring)."""
    waves = expected_waves(block_sum(problem.m, bm, problem.groups), ceil_div(problem.n, bn), num_sms)
    return waves * tile_weight(bm, bn)
