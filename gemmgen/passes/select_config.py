"""select_config: decide block_m, block_n, stages, cluster, block_k, k_splits, a_rows and the grid cap; record why.
Programmatic dependent launch (`pdl`) stays off unless pinned: whether the previous kernel may overlap is the
caller's to say.

Reads: the problem (kind, expected rows, groups, K blocks), the draft config (fields the user pinned stay as they
are), the target. Decides: the fields above, and appends its reason to `Kernel.reasons`. Runs first.

Two regimes (docs/KERNEL_DESIGN.md, "Config selection"; measurements in bench/NOTES.md):
- Enough tiles to fill the SMs (prefill): DeepGEMM's generation-1/2 rule — fewest waves of tiles over the SMs
  (a B-scale split fixed per main loop first: `_wave_key`),
  then the fullest last wave, then the least padded block_n (N = 16 took 64x192 tiles before), then the larger;
  the deepest ring of stages that fits shared memory; 2-CTA A-multicast for large M when the N blocks pair up (a
  contiguous layout only at >= CONTIGUOUS_PAIR_MIN_ROWS rows per expert; not dense block-recipe 256x128 tiles over
  K <= 2048, measured faster unpaired: UNPAIRED_BLOCK_M); a dense 64-row tile over M <= 16 loads
  only M's rows of A per stage (`_small_m_a_rows`). Grouped problems count tiles over the
  expected rows of every group; a contiguous layout's tile must divide the expert alignment.
- Masked layout (any expected rows per group): the rows each group has are on the device, so tiles are
  ranked by their expected cost over group sizes drawn about expected_m (masked_model.py).
- One M block and too few N tiles to fill the SMs (decode, M <= 128 dense): the time is a latency-bound stream of
  B, so each CTA wants wide k-blocks (block_n) and the SMs want to all be streaming. Measured on the H200
  (bench/NOTES.md, v0.3): a wider tile on fewer SMs beats a narrow tile on every SM (1x7168x16384: 64x128 on 56 SMs
  44 us, 64x56 on 128 SMs 60 us), and the K splits of one tile then fill the idle SMs, reduced through
  distributed shared memory inside the cluster (k_splits). Picked by a time model fitted to a sweep
  (`stream_seconds`). A ring slot holds only M's rows of A (a_rows: STREAM_A_ROWS up to M = 32, then M rounded up
  to 8 rows for the block recipe; `one_block_a_rows`). From M = 104 a 128-row tile's 2 K splits become 2 M blocks
  of 64 rows (`_m_split`).
- 1x128/1x128 (wgrad): the prefill rule over tiles with at least COLUMN_MIN_STAGES stages (see below); at M <= 128
  with few N tiles the decode rule as for the other recipes.
Every candidate is filtered through `legality.check`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..ir import LEGAL_N, DType, GemmConfig, GemmKind, GemmProblem, Kernel, ScaleRecipe, Target, ceil_div
from ..ir.problem import SWIZZLE_ROW_BYTES
from ..legality import COLUMN_WAVE_N, b_scale_mode, b_scale_splits, check
from . import masked_model

K = TypeVar("K", bound=tuple)  # a tile ranking's key (tuples compare element by element)

MAX_AUTO_STAGES = 8  # prefill: deeper rings measured no faster (bench/NOTES.md v0.1)
# decode: more B in flight per SM was the lever up to 16 stages (1x2112x7168, 64x16: 8 -> 16 stages 22 -> 16 us);
# deeper rings (up to 32, with the small A slots below) measured no faster (bench/results/2026-11-30-f416dca).
MAX_STREAM_STAGES = 16
# ...but once the grid's B in flight saturates HBM, a deeper ring only lengthens the queue: the stream tile's ring is
# trimmed to about STREAM_B_IN_FLIGHT bytes of B read from DRAM over the grid (_stream_depth). Swept against the
# deepest ring, same tile, interleaved, 5 rounds (bench/results/2026-12-01-f041a76-stream-depth): 64x64 tiles on 112
# CTAs at K = 16384 best at 12 / 11 / 10 stages (M = 1 / 32 / 64, x1.014 / x1.032 / x1.048), 1x4096x7168 (128 CTAs)
# at 8 (x1.021); 64x32 tiles (4 KB of B per stage) lost with fewer than 14 stages. At K = 2048 (16 k-blocks a tile)
# only 8 stages gained (x1.017-1.019; 9-14 x0.995-1.006), a depth that lost at K = 16384 (STREAM_SHORT_KB below).
# As shipped (ab_versions against the deepest ring, 7 rounds): 1 / 8 / 32 / 64 x 7168 x 16384 at 10 stages x1.006 /
# x1.015 / x1.039 / x1.040, 1 / 8 x 4096 x 7168 at 9 x1.020 / x1.022, 1 / 8 / 32 / 64 x 7168 x 2048 at 8 x1.010-1.022.
# Two 64-row M blocks over one B (_m_split) read it once from DRAM: counting both M blocks' CTAs trimmed 128x4096x7168
# to 9 stages, x0.958 (13 stages, untrimmed, was the best measured).
STREAM_B_IN_FLIGHT = 9 * 1024 * 1024
# A split of at most STREAM_SHORT_KB k-blocks (2 KB of each B row: K = 2048 in e4m3, 1024 in bf16) asks for its whole K
# at once from a deep ring; at K = 2048 (e4m3) 8 stages gained x1.017-1.019 where 9-14 measured x0.995-1.006 (64x64 on
# 112 CTAs, M = 1 / 32 / 64): ~7 MiB there.
STREAM_SHORT_KB = 16
STREAM_B_IN_FLIGHT_SHORT = 7 * 1024 * 1024
STREAM_MIN_DEPTH = 8  # the shallowest ring the trim leaves (fewer measured slower or were not measured)
# The stream tiles the trim was measured on: 64 rows, 64-128 columns (8-16 KB of B per stage), unsplit or 2 K splits.
# 64x32 tiles, 128-row tiles and 3-4 way splits keep the deepest ring (not measured trimmed).
STREAM_TRIM_BLOCK_N = (64, 128)
STREAM_TRIM_MAX_SPLITS = 2
# Decode tiles load only the A rows M has (GemmConfig.a_rows): (64 - a_rows) x 128 B of zero-filled A per stage
# (7, 6 or 4 KB) become B stages.
STREAM_A_ROWS = (8, 16, 32)
SMALL_M_A_ROWS_MAX_M = 16  # the same for the prefill rule's 64-row tiles up to this M (_small_m_a_rows)
# Up to M = 128 the problem is still one M block streaming B: one 128-row tile (two math warpgroups) reads each B
# byte once where two 64-row tiles read it twice (128x7168x16384: 42.7 us against 47.6 for the wave rule's 64x112,
# bench/results/2026-11-30-626df3c/sweep_m128.json).
STREAM_MAX_M = 128
M_SPLIT_MIN_M = 104  # from here a 128-row decode tile's 2 K splits run as 2 M blocks of 64 rows (_m_split)
# Above STREAM_A_ROWS, a decode slot holds M rounded up to whole 128-byte swizzle atoms of 8 rows (one_block_a_rows),
# for the recipes measured (the 1x128/1x128 one loads A alike but was not)
A_ROWS_STEP = 8
ONE_BLOCK_A_ROWS_RECIPES = (ScaleRecipe.A1x128_B128x128, ScaleRecipe.TENSOR, ScaleRecipe.CHANNEL, ScaleRecipe.NONE)
SHORT_K_BLOCKS = 4  # _short_k: one tile's k-blocks (K = 385..512), a ring of that depth holding the tile
SHORT_K_MAX_M = 32  # on any 64-row tile the wave rule picks
# and above, on the tiles the wave rule picks at 32768 x 512, over the rows measured (bench/results/2026-12-01-aaaf793)
SHORT_K_WIDE_TILES = {(64, 128): (33, 64), (128, 128): (65, 128)}  # tile: the rows it was measured over
MULTICAST_MIN_M = 1024  # below this the A tile is small and a cluster only constrains the schedule
# Dense 256x128 tiles (block recipe, e4m3) over a short K run unpaired. Against the A-multicast pair, interleaved,
# bitwise equal: 9 rounds (bench/results/2026-12-01-b6df05f-cluster/ab_cluster.json) 2048 / 4096 / 8192 x 32768 x 512
# x1.049 / x1.019 / x1.001, 4096 x 7168 x 1024 / 2048 x1.013 / x1.010, 4096x24576x1536 x1.001; as shipped at dfb7fbc
# (7 rounds, bench/results/2026-12-01-dfb7fbc) x1.052 / x1.022 (2048 / 4096 x 32768 x 512), x1.008, x1.000. A
# short tile ends in its epilogue every few k-blocks, and both CTAs of a pair wait for each other's slots before
# A is multicast. Over a long K the pair stays: 4096x7168x16384 x1.015 then x0.993, 8192^3 x0.992 then x0.966,
# 4096x4096x7168 x1.007 / x1.005. Those run under the 700 W cap (rounds spread 5-8%), where the L2 traffic the pair
# saves is energy. 128-row tiles and the grouped layouts keep the rules below (not measured).
# A 64x192 tile has one math warpgroup and, by registers, one accumulator set (its promotion waits for each wgmma); the
# 128x96 tile of the same area has two warpgroups of two sets each and loads 28 KB per k-block against 32. Where both
# give the same waves (the 128-row tile's last wave at least TWO_WG_MIN_LAST_WAVE as full), dense, block recipe into
# bf16, no cluster, measured (ab_configs, 5 rounds, bitwise equal; bench/results/2026-12-01-98ea892-two-wg):
# 384x4096x7168 x1.049, 768x2112x7168 x1.044, 512x3072x1536 x1.053, 640x2112x7168 x1.048. Not taken with an
# A-multicast pair (1024x1536x7168 x0.988) nor for 64x160 -> 128x80 (x0.964-1.049 over four shapes).
TWO_WG_TILES = {(64, 192): (128, 96)}
TWO_WG_MIN_LAST_WAVE = 0.97
UNPAIRED_BLOCK_M = 256
UNPAIRED_BLOCK_N = 128
UNPAIRED_MIN_M = 2048
UNPAIRED_K_BLOCKS = (4, 16)  # K = 385..2048
# Contiguous grouped: pair only when the experts average this many rows (M_total / groups). Interleaved A/B of
# unpaired below 2048 rows against pairing everywhere (bench/results/2026-12-01-b9eb4c7/ab_contig.json, 7 rounds):
# 32 x 256 x1.023 / x1.018 (N x K 4096x7168 / 7168x2048), 16 x 512 x1.003 / x0.994, 8 x 1024 x0.988 / x0.993; the
# single-shot sweeps before it (2026-11-30-717cde7-masked) had the pair at -1.4% to +7.8% at 4096-8192 rows. An
# expert's two or three M blocks give a pair little A to share and constrain which N blocks run together.
CONTIGUOUS_PAIR_MIN_ROWS = 512
STREAM_BLOCK_N = (32, 64, 96, 128, 160, 192)  # decode tile widths tried (registers cap a one-wave 64xN at 192)
# The decode time model, fitted to the H200 sweep of every (block_n, k_splits) over the 21 decode shapes
# (bench/results/2026-11-30-decode-sweep/sweep_decode.json), refitted with the small A slots
# (bench/results/2026-11-30-f416dca/sweep_decode.json, M = 1 and 32), then BW with the M = 64 sweep of the current
# kernel (2026-11-30-sweep-m64): over the 18 shapes of those sweeps (and 2026-11-30-626df3c's M = 128) that take this
# rule, its pick averages 1.001x the best measured (at most 1.02x; 3.4 TB/s: 1.008x, at most 1.075x at 32 and 64 x
# 4096 x 7168, which 3.0 moves from 64x64 split in 2 to 64x32 unsplit: measured x1.065 and x1.076 on the current
# kernel, 2026-11-30-decode-4096x7168).
#   time = T0 + waves x max(bytes / BW, k-blocks per split x LATENCY / stages) + (k_splits - 1) x SPLIT_COST x
#          block_m / 64
STREAM_T0 = 4e-6  # launch, prologue, first loads and epilogue
STREAM_BW = 3.0e12  # B/s: the HBM read rate the streaming kernels reach (1x7168x16384: 3.02-3.05 TB/s measured)
STREAM_LATENCY = 3e-6  # s per ring round trip under load: a CTA with S stages retires a k-block every LATENCY / S
STREAM_SPLIT_COST = 0.6e-6  # per extra K split: the DSMEM hand-over, and a cluster waits for all its ranks
# CTAs that run at once per cluster size (fitted: clusters of 4 lost from ~104 CTAs on; 7 and 8 never won, 17
# clusters of 7 ran as two waves), so larger splits are not tried.
STREAM_CTA_CAP = {1: 1.0, 2: 1.0, 3: 0.9, 4: 0.79}  # x num_sms
MIN_KB_PER_SPLIT = 4  # a K split shorter than this spends its time filling and draining the ring
# 1x128/1x128: a slot is handed back only after its promotion has read the slot's B scales (one stage fewer in
# flight than the block recipe's early release), and the fp32 D tile leaves 3 stages to block_n >= 160; so tiles
# keep >= 4 stages where any legal one does (block_n <= 152 at block_m 128). A design rule, not yet measured.
COLUMN_MIN_STAGES = 4


def _selects_split(problem: GemmProblem, bn: int) -> bool:
    """The tile's B-scale split moves with the tile over more places than get a main loop each, so every k-block's
    promotion selects the split at run time (legality.b_scale_splits)."""
    return b_scale_mode(bn, problem.scales) == "runtime" and not b_scale_splits(bn, problem.scales)


def _wave_key(problem: GemmProblem, bm: int, bn: int, num_sms: int) -> tuple[int, bool, int, int, int]:
    blocks = problem.m_blocks(bm) * ceil_div(problem.n, bn)
    waves = ceil_div(blocks, num_sms)
    last_util = blocks - (waves - 1) * num_sms
    # Within a wave count, a tile whose promotion selects the B-scale split at run time loses to one with a fixed
    # split even with a fuller last wave: 4096x2112x7168, 256x88 (run-time select, last wave 120 of 132 tiles)
    # 1128 TFLOPS against 128x192 (two fixed places, last wave 88) 1275 (bench/results/2026-11-30-8195b0c).
    # Then the least padded width: N = 16 took 64x192 tiles (12x the wgmma work, the config miss) because
    # every block_n >= 16 gives the same tiles and the widest won. Measured against the widest (ab_versions,
    # bench/results/2026-12-01-87da85e/ab_cand.json): 4096x16x7168 x2.36, 8192x64x7168 x1.72, 4096x32x7168 x1.04.
    padded = ceil_div(problem.n, bn) * bn
    return waves, _selects_split(problem, bn), -last_util, padded, -bn  # smaller is better


def _block_m_candidates(problem: GemmProblem) -> list[int]:
    if problem.kind is GemmKind.M_GROUPED_CONTIGUOUS:
        return [64, 128]  # must divide the 128-row expert alignment
    if problem.kind is GemmKind.M_GROUPED_MASKED:
        return [64] if problem.m <= 64 else [64, 128]  # DeepGEMM's masked set: a group's tail tile stays small
    if not problem.scales.promotes:
        # Whole-K accumulation (tensor, channel, bf16): a 256-row tile's two m64 waves share one accumulator set and
        # lose the group in flight; measured 2-20% slower than 128-row tiles on every shape swept
        # (bench/results/2026-11-30-4298e04/sweep_family.json).
        return [64] if problem.m <= 64 else [64, 128]
    return [64] if problem.m <= 64 else [64, 128, 256]


def wave_n_for(problem: GemmProblem, bm: int, bn: int) -> int:
    """The wgmma N of a (bm, bn) tile: bn, except that the block recipe's 256-wide tiles with one m64 row wave per
    warpgroup run as two m64n128 column waves sharing one accumulator set (an m64n256 accumulator and its fp32
    result need ~296 registers per thread; two waves of 64 + the result's 128 fit in 232, as a 256x128 tile's
    two m64 row waves do)."""
    if problem.scales is ScaleRecipe.A1x128_B128x128 and bm <= 128 and bn > COLUMN_WAVE_N and bn % COLUMN_WAVE_N == 0:
        return COLUMN_WAVE_N
    return bn


def _candidates(problem: GemmProblem, draft: GemmConfig) -> list[tuple[int, int]]:
    bms = [draft.block_m] if draft.block_m is not None else _block_m_candidates(problem)
    bns = [draft.block_n] if draft.block_n is not None else [n for n in LEGAL_N if n >= 16]
    pairs = [(bm, bn) for bm in bms for bn in bns]
    if draft.block_n is None and draft.wave_n is None and not _few_rows_per_expert(problem):
        # Column-wave tiles in the wave key only where they measured faster: a contiguous layout with few rows per
        # expert, whose 128-row alignment rules out 256x128 (interleaved against 128x192,
        # bench/results/2026-12-01-da6cf28-waves: 32 x 256 x1.049 / x1.005 at N x K 4096x7168 / 7168x2048). With
        # more rows per expert they replace the wave rule's pick where they save its N padding (_column_wave_tile);
        # dense 128x256 lost x0.984-0.998 to 256x128 on five shapes, and masked_model ranks them behind.
        pairs = [(bm, bn) for bm, bn in pairs if wave_n_for(problem, bm, bn) == bn]
    return pairs


def _deepest_stages(problem: GemmProblem, base: GemmConfig, target: Target, cap: int) -> GemmConfig | None:
    for stages in range(cap, 2, -1):
        cfg = base.replace(stages=stages)
        if not check(problem, cfg, target):
            return cfg
    return None


def _legal(problem: GemmProblem, base: GemmConfig, target: Target, cap: int) -> GemmConfig | None:
    """A candidate with its ring as deep as shared memory allows (up to cap; pinned stages kept), or None if
    illegal."""
    cfg = base if base.stages is not None else _deepest_stages(problem, base, target, cap)
    return None if cfg is None or check(problem, cfg, target) else cfg


def _legal_tile(problem: GemmProblem, draft: GemmConfig, target: Target, bm: int, bn: int, splits: int, rows: int,
                cap: int) -> GemmConfig | None:
    """The (bm, bn) candidate with A slots of `rows` rows, its ring as deep as allowed (_legal); where those rows
    are illegal (e.g. a pinned ring too shallow for the slot's over-read), with whole-tile slots; None if neither."""
    cfg = _legal(problem, _tile(draft, bm, bn, problem, target, splits, rows), target, cap)
    if cfg is None and rows != bm:
        cfg = _legal(problem, _tile(draft, bm, bn, problem, target, splits, bm), target, cap)
    return cfg


def _unpaired_tile(problem: GemmProblem, bm: int, bn: int) -> bool:
    """A dense 256x128 tile over a short K, e4m3 with the block recipe into bf16, at the M measured: faster without
    the A-multicast pair (UNPAIRED_BLOCK_M, UNPAIRED_BLOCK_N, UNPAIRED_MIN_M, UNPAIRED_K_BLOCKS)."""
    return (bm == UNPAIRED_BLOCK_M and bn == UNPAIRED_BLOCK_N and problem.m >= UNPAIRED_MIN_M
            and UNPAIRED_K_BLOCKS[0] <= problem.k_blocks <= UNPAIRED_K_BLOCKS[1] and problem.e4m3_block_into_bf16)


def _pairs_up(problem: GemmProblem, bn: int, target: Target) -> bool:
    """Enough rows for the A-multicast pair, and the N blocks (and SMs) pair up."""
    return (problem.total_rows >= MULTICAST_MIN_M and ceil_div(problem.n, bn) % 2 == 0
            and target.num_sms % 2 == 0)


def _cluster_rule(problem: GemmProblem, bm: int, bn: int, target: Target) -> tuple[int, str]:
    """The cluster a (bm, bn) tile gets, and why (the reason's text; empty where nothing needs saying)."""
    if _few_rows_per_expert(problem):
        return 1, f" (unpaired: fewer than {CONTIGUOUS_PAIR_MIN_ROWS} rows per expert)"
    if not problem.scales.promotes:  # whole-K: the pair measured 0-3% slower (same sweep as above)
        return 1, ""
    if problem.kind is GemmKind.M_GROUPED_MASKED:
        # Measured: the pair lost 3-4% to the same tile unpaired in every one of 5 (tile, case) pairs of the masked
        # sweep (bench/results/2026-11-30-511d8dd/sweep_masked.json): a masked group's tail M block is mostly empty
        # rows, and both CTAs of a pair must walk the same M blocks.
        return 1, ""
    if _unpaired_tile(problem, bm, bn):
        return 1, (f" (unpaired: dense {UNPAIRED_BLOCK_M}x{UNPAIRED_BLOCK_N} tiles over K <= "
                   f"{UNPAIRED_K_BLOCKS[1] * 128} measured faster without the A-multicast pair)"
                   if _pairs_up(problem, bn, target) else "")
    if not _pairs_up(problem, bn, target):
        return 1, ""
    per_expert = (f", >= {CONTIGUOUS_PAIR_MIN_ROWS} rows per expert"
                  if problem.kind is GemmKind.M_GROUPED_CONTIGUOUS else "")
    return 2, f" (A multicast: M >= {MULTICAST_MIN_M}, not masked, N blocks pair up{per_expert})"


def _tile(draft: GemmConfig, bm: int, bn: int, problem: GemmProblem, target: Target, splits: int = 1,
          a_rows: int | None = None) -> GemmConfig:
    """The draft with this pass's fields decided for one candidate; stages still undecided unless pinned."""
    cluster = 1 if splits > 1 else _cluster_rule(problem, bm, bn, target)[0]
    return draft.decide(block_m=bm, block_n=bn, cluster=cluster, block_k=problem.k_block, num_sms=target.num_sms,
                        k_splits=splits, wave_n=wave_n_for(problem, bm, bn), a_rows=a_rows or bm)


def stream_a_rows(m: int) -> int:
    """Decode: the rows of A a slot loads, the fewest of STREAM_A_ROWS that hold M (64: the whole tile)."""
    return next((rows for rows in STREAM_A_ROWS if m <= rows), 64)


def one_block_a_rows(problem: GemmProblem, bm: int) -> int:
    """The rows of A a decode slot loads, the tile being the one M block: up to M = 32 the fewest of STREAM_A_ROWS
    that hold M (every recipe, as measured); above, for ONE_BLOCK_A_ROWS_RECIPES, M rounded up to whole swizzle atoms
    (A_ROWS_STEP), so that A's TMA box ends at most 7 rows past M. Boxes mostly past M's last row made decode tiles
    slow, where A's box is most of a stage: the same 128x32 kernel (2 K splits) ran 65x2112x7168 in 15.5 us,
    96x2112x7168 in 14.8 and 128x2112x7168 in 11.9; with a 72-row box 65x2112x7168 ran in 11.0 (interleaved,
    bitwise-equal; bench/results/2026-12-01-b4f1004-partial-m). As shipped against e179e4b: M = 65..100 x1.04-1.44,
    M = 33 and 40 x1.06, 48 and 56 x1.00. bf16 inputs (whole-K accumulation): M = 65..100 x1.245-1.700, M = 33 and 40
    x1.00-1.02; the per-tensor recipe: M = 65..100 x1.05-1.59, M = 33 and 40 x1.08-1.17 (bench/results/
    2026-12-01-a95d328-recipes); per-channel: M = 65..100 x1.15-1.36, 40 x1.007, 120 x0.995
    (2026-12-01-c34bd07-channel). The wave rule's wide tiles (N = 24576, 32768) measured x0.979-1.002 with such boxes
    and keep whole-tile slots above M = 16 (_small_m_a_rows)."""
    if bm == 64 and problem.m <= STREAM_A_ROWS[-1]:
        return stream_a_rows(problem.m)
    if problem.m <= bm and problem.scales in ONE_BLOCK_A_ROWS_RECIPES:
        return min(bm, ceil_div(problem.m, A_ROWS_STEP) * A_ROWS_STEP)
    return bm


def _prefill(problem: GemmProblem, draft: GemmConfig, target: Target) -> tuple[GemmConfig, str] | None:
    if problem.scales is ScaleRecipe.A1x128_B1x128 and draft.stages is None:
        deep = _prefill_from(problem, draft, target, COLUMN_MIN_STAGES)
        if deep is not None:
            return deep[0], deep[1] + f"; 1x128/1x128: tiles with >= {COLUMN_MIN_STAGES} stages only"
    return _prefill_from(problem, draft, target, 3)


def _best_tile(problem: GemmProblem, draft: GemmConfig, target: Target, key: Callable[[int, int, int], K],
               min_stages: int) -> tuple[K, GemmConfig] | None:
    """The legal candidate tile (deepest ring of stages, >= min_stages) with the least key(bm, bn, num_sms)."""
    best: tuple[K, GemmConfig] | None = None
    for bm, bn in _candidates(problem, draft):
        cfg = _legal_tile(problem, draft, target, bm, bn, draft.k_splits or 1, _small_m_a_rows(problem, bm),
                          MAX_AUTO_STAGES)
        if cfg is None or (cfg.stages or 0) < min_stages:
            continue
        assert cfg.num_sms is not None
        k = key(bm, bn, cfg.num_sms)
        if best is None or k < best[0]:
            best = (k, cfg)
    return best


def _small_m_a_rows(problem: GemmProblem, bm: int) -> int:
    """A dense 64-row tile over M <= 16 rows that the prefill rule picks (N too wide for the decode rule) loads only
    M's rows of A and of its scales per stage, as decode tiles do. Measured against the whole 64-row slot
    (interleaved, 7 rounds, bench/results/2026-12-01-e066b97-probes/ab_n24576.json, ab_n32768.json): 1x24576x1536
    x1.037, 8x24576x1536 x1.016, 1x32768x512 x1.017, 8x32768x512 x1.030; at M = 32 x0.994-1.002, so up to
    M = SMALL_M_A_ROWS_MAX_M only, and for the block recipe only (the one measured)."""
    small = (problem.kind is GemmKind.NORMAL and problem.scales is ScaleRecipe.A1x128_B128x128 and bm == 64
             and problem.m <= SMALL_M_A_ROWS_MAX_M)
    return stream_a_rows(problem.m) if small else bm


def _short_k(problem: GemmProblem, draft: GemmConfig, target: Target, cfg: GemmConfig) -> GemmConfig | None:
    """A few-row tile over a short K (one tile's k-blocks fit a shallow ring) in two or more rounds of the grid:
    its ring holds one tile (stages = the k-blocks) and the grid is the fewest CTAs that keep the rounds, as
    DeepGEMM runs 1x32768x512 (64x128, 4 stages, 128 CTAs; ncu: its SMs active 80% of the elapsed cycles against
    67% with 8 stages on 132 CTAs). Measured against the default (interleaved, 7 rounds, bench/results/
    2026-12-01-b00adc7-short-k): 1x32768x512 x1.016, 8x32768x512 x1.021, 32x32768x512 x1.009; 4 stages alone
    x1.006-1.014, 128 CTAs alone x1.004-1.009. A K of 2048 lost x0.81-0.83 with 4 or 8 stages (1x7168x2048). Above
    32 rows (bench/results/2026-12-01-aaaf793/ab_short_k.json, 7 rounds): 48 / 64 x 32768 x 512 on 64x128 x1.006 /
    x1.003 (4 stages alone x1.012 / x1.006), 96 / 128 on 128x128 x1.021 / x1.011. So only what was measured: tiles of
    SHORT_K_BLOCKS k-blocks (K = 385..512), M <= SHORT_K_MAX_M on a 64-row tile or SHORT_K_WIDE_TILES over the
    rows each was measured at, e4m3 inputs, the block recipe into bf16 (no accumulate), one K split, no cluster."""
    assert cfg.block_m is not None and cfg.block_n is not None and cfg.num_sms is not None
    k_blocks = problem.k_blocks
    lo, hi = SHORT_K_WIDE_TILES.get((cfg.block_m, cfg.block_n), (0, -1))
    measured_tile = (problem.m <= SHORT_K_MAX_M and cfg.block_m == 64) or lo <= problem.m <= hi
    if not (problem.e4m3_block_into_bf16 and measured_tile and k_blocks == SHORT_K_BLOCKS
            and cfg.cluster == 1 and cfg.k_splits == 1 and draft.stages is None
            and draft.num_sms is None and (cfg.stages or 0) > k_blocks):
        return None
    tiles = problem.m_blocks(cfg.block_m) * problem.n_blocks(cfg.block_n)
    rounds = ceil_div(tiles, cfg.num_sms)
    if rounds < 2:
        return None
    short = cfg.replace(stages=k_blocks, num_sms=ceil_div(tiles, rounds))
    return None if check(problem, short, target) else short


def _two_warpgroups(problem: GemmProblem, draft: GemmConfig, target: Target, cfg: GemmConfig) -> GemmConfig | None:
    """The wave rule's one-warpgroup pick as the 128-row tile of half its width (TWO_WG_TILES), where that gives the
    same waves and a last wave nearly as full, for the kind and cluster measured."""
    assert cfg.block_m is not None and cfg.block_n is not None and cfg.num_sms is not None
    to = TWO_WG_TILES.get((cfg.block_m, cfg.block_n))
    if (to is None or not problem.e4m3_block_into_bf16 or cfg.cluster != 1 or cfg.k_splits != 1
            or any(getattr(draft, f) is not None
                   for f in ("block_m", "block_n", "acc_sets", "wave_n", "num_sms", "cluster", "stages", "k_splits"))):
        return None
    two = _legal_tile(problem, draft, target, *to, 1, to[0], MAX_AUTO_STAGES)
    if two is None or two.cluster != 1:
        return None
    waves, _, neg_last, _, _ = _wave_key(problem, cfg.block_m, cfg.block_n, cfg.num_sms)
    two_waves, _, two_neg_last, _, _ = _wave_key(problem, *to, cfg.num_sms)
    if two_waves != waves or -two_neg_last < TWO_WG_MIN_LAST_WAVE * -neg_last:
        return None
    return two


def _rounds_area(problem: GemmProblem, cfg: GemmConfig) -> int:
    """Rounds of tiles over the grid times a tile's area: the compute-bound time of a tile choice, up to a constant."""
    assert cfg.block_m is not None and cfg.block_n is not None and cfg.num_sms is not None
    return _wave_key(problem, cfg.block_m, cfg.block_n, cfg.num_sms)[0] * cfg.block_m * cfg.block_n


COLUMN_WAVE_TILE = (128, 256)  # the column-wave tile measured on contiguous layouts (two m64n128 waves)
COLUMN_WAVE_MIN_PAD_SAVED = 0.025  # of N: 128x192 pads N = 4096 by 3.1% (128x256 measured faster), 7168 by 1.8% (level)
COLUMN_WAVE_MIN_K_BLOCKS = 16  # K >= 2048: measured at K = 7168 only (7168x2048 did not pad enough to take it)


def _padding(n: int, bn: int) -> float:
    """The fraction of N a tile width computes past N."""
    return ceil_div(n, bn) * bn / n - 1


def _column_wave_tile(problem: GemmProblem, draft: GemmConfig, target: Target, cfg: GemmConfig,
                      min_stages: int) -> GemmConfig | None:
    """A contiguous layout's 128x256 column-wave tile (two m64n128 waves, wave_n_for) for the wave rule's pick where
    it saves at least COLUMN_WAVE_MIN_PAD_SAVED of N in padding at no more waves x area. The experts' 128-row
    alignment rules out the dense prefill's 256x128, and the wave rule's 128x192 pads N = 4096 to 4224. Measured
    against the paired 128x192 (ab_grouped_configs, 7 rounds, a 1 s idle pause before each timing, bitwise equal;
    bench/results/2026-12-01-06d03ea-contig): N x K = 4096x7168 at the bench's 4 x 8192 and 8 x 4096 draws
    x1.015 / x1.038 and at full experts x1.048 / x1.022 unpaired (as this rule runs it; paired x0.997 /
    x1.042 / x1.034 / x1.016); 7168x2048 (1.8% padding) x0.994 / x0.994 unpaired, x0.998 / x1.003 paired.
    Unsettled A/Bs of these ~1.5 ms kernels under the power cap had spread rounds by up to 14% (x0.983-1.008 at
    full experts, bench/results/2026-12-01-da6cf28-waves). With few rows per expert the wave key ranks column-wave
    tiles itself (_candidates). Reach: e4m3 inputs, K >= 2048 (COLUMN_WAVE_MIN_K_BLOCKS), any N whose padding
    qualifies (512-4864 among the widths the review swept, e.g. 2048 and 4096); timed at N x K = 4096 x 7168 only."""
    assert cfg.block_n is not None
    if (problem.kind is not GemmKind.M_GROUPED_CONTIGUOUS or _few_rows_per_expert(problem)
            or problem.a_dtype is not DType.E4M3 or problem.b_dtype is not DType.E4M3
            or problem.k_blocks < COLUMN_WAVE_MIN_K_BLOCKS
            or any(getattr(draft, f) is not None for f in ("block_m", "block_n", "wave_n"))):
        return None
    bm, bn = COLUMN_WAVE_TILE
    if _padding(problem.n, cfg.block_n) - _padding(problem.n, bn) < COLUMN_WAVE_MIN_PAD_SAVED:
        return None
    # Unpaired unless pinned: at 4096x7168 the pair against none, 9 settled rounds (bench/results/
    # 2026-12-01-223f074-contig): unpaired x1.025 / x1.022 at the bench's draws, x1.012 / x1.020 at full experts.
    # (At 7168x2048, where this rule does not fire, the pair was x1.004 / x1.009 ahead: 2026-12-01-06d03ea-contig.)
    col = _legal_tile(problem, draft.decide(cluster=1), target, bm, bn, draft.k_splits or 1, bm, MAX_AUTO_STAGES)
    if col is None or (col.stages or 0) < min_stages or col.wgmma_n == bn:
        return None
    return col if _rounds_area(problem, col) <= _rounds_area(problem, cfg) else None


def _prefill_from(problem: GemmProblem, draft: GemmConfig, target: Target,
                  min_stages: int) -> tuple[GemmConfig, str] | None:
    best = _best_tile(problem, draft, target, lambda bm, bn, sms: _wave_key(problem, bm, bn, sms), min_stages)
    if best is None:
        return None
    (waves, _, neg_last, _, _), cfg = best
    col = _column_wave_tile(problem, draft, target, cfg, min_stages)
    if col is not None:
        assert col.block_m is not None and col.block_n is not None and col.num_sms is not None and cfg.block_n
        col_waves, _, col_neg_last, _, _ = _wave_key(problem, col.block_m, col.block_n, col.num_sms)
        pinned = " (pinned)" if draft.cluster is not None else (
            " (unpaired: measured faster for this tile)" if _pairs_up(problem, col.block_n, target) else "")
        return col, (f"{col_waves} wave(s) of {problem.m_blocks(col.block_m)}x{problem.n_blocks(col.block_n)} tiles "
                     f"over {col.num_sms} SMs, last wave {-col_neg_last} tiles: {col.block_m}x{col.block_n} as "
                     f"{col.waves_n} column waves of {col.wgmma_n} for the wave rule's {cfg.block_m}x{cfg.block_n} "
                     f"({waves} waves), which pads N by {_padding(problem.n, cfg.block_n):.1%} (no more rounds x "
                     f"area; measured gain); {col.stages} stages fill shared memory; cluster {col.cluster}" + pinned)
    two = _two_warpgroups(problem, draft, target, cfg)
    if two is not None:
        assert two.block_m is not None and two.block_n is not None and two.num_sms is not None
        two_last = -_wave_key(problem, two.block_m, two.block_n, two.num_sms)[2]
        return two, (f"{waves} wave(s) of {problem.m_blocks(two.block_m)}x{problem.n_blocks(two.block_n)} tiles over "
                     f"{two.num_sms} SMs, last wave {two_last} tiles: "
                     f"{two.block_m}x{two.block_n} (two math warpgroups of two accumulator sets) for the wave rule's "
                     f"{cfg.block_m}x{cfg.block_n} (one warpgroup, one set; last wave {-neg_last} tiles), the same "
                     f"waves (measured gain); {two.stages} stages fill shared memory; cluster 1")
    short = _short_k(problem, draft, target, cfg)
    ring = (f"{cfg.stages} stages fill shared memory" if short is None else
            f"a ring of one tile's {short.stages} k-blocks on {short.num_sms} CTAs, the fewest that keep "
            f"{waves} rounds (short K: measured gain)")
    sms = cfg.num_sms  # what the waves were counted over
    cfg = short or cfg
    return cfg, (f"{waves} wave(s) of {problem.m_blocks(cfg.block_m or 64)}x{problem.n_blocks(cfg.block_n or 8)} "
                 f"tiles over {sms} SMs, last wave {-neg_last} tiles; block_n {cfg.block_n} is the least "
                 f"padded, then the widest, with that (a B-scale split fixed per main loop first); {ring}; "
                 f"cluster {cfg.cluster}"
                 + _pair_reason(problem, draft, cfg, target))


def _few_rows_per_expert(problem: GemmProblem) -> bool:
    """A contiguous layout whose experts average fewer than CONTIGUOUS_PAIR_MIN_ROWS rows: left unpaired."""
    return (problem.kind is GemmKind.M_GROUPED_CONTIGUOUS
            and problem.m < CONTIGUOUS_PAIR_MIN_ROWS * problem.groups)


def _pair_reason(problem: GemmProblem, draft: GemmConfig, cfg: GemmConfig, target: Target) -> str:
    """Why the cluster is what it is: pinned, or the rule of _cluster_rule that decided it."""
    assert cfg.block_m is not None and cfg.block_n is not None
    if draft.cluster is not None:
        return " (pinned)"
    cluster, why = _cluster_rule(problem, cfg.block_m, cfg.block_n, target)
    return why if cluster == cfg.cluster else ""


def _masked(problem: GemmProblem, draft: GemmConfig, target: Target) -> tuple[GemmConfig, str] | None:
    """Masked layout: the legal tile with the least masked_model.masked_cost (a fixed B-scale split first)."""
    best = _best_tile(problem, draft, target, lambda bm, bn, sms: (
        _selects_split(problem, bn), masked_model.masked_cost(problem, bm, bn, sms)), min_stages=0)
    if best is None:
        return None
    (_, cost), cfg = best
    assert cfg.block_m is not None and cfg.block_n is not None
    lo, hi = masked_model.SPREAD
    waves = cost / masked_model.tile_weight(cfg.block_m, cfg.block_n)
    split = "; a B-scale split fixed per main loop first" if problem.scales.promotes else ""
    return cfg, (f"masked: group sizes taken as int(expected_m x uniform({lo}, {hi})), expected_m = {problem.m}; "
                 f"{waves:.2f} expected wave(s) of {cfg.block_m}x{cfg.block_n} tiles over {cfg.num_sms} SMs, the least "
                 f"expected waves x block_m x (block_n + {masked_model.TILE_FIXED_COLUMNS}) (x "
                 f"{masked_model.ROWS_64_COST} at 64 rows{split}); {cfg.stages} "
                 f"stages fill shared memory; cluster {cfg.cluster}")


def stream_block_m(m: int) -> int:
    """The one M block of a streamed problem: 64 rows up to M = 64, else 128 (two math warpgroups)."""
    return 64 if m <= 64 else 128


def _is_stream(problem: GemmProblem, draft: GemmConfig, target: Target) -> bool:
    """Decode regime: one dense M block (M <= 128) and N so narrow that 128-wide tiles fill at most half the SMs."""
    if problem.kind is not GemmKind.NORMAL or problem.m > STREAM_MAX_M or draft.cluster not in (None, 1):
        return False
    return draft.block_m in (None, stream_block_m(problem.m)) and problem.n_blocks(128) * 2 <= target.num_sms


def stream_seconds(problem: GemmProblem, block_n: int, splits: int, stages: int, num_sms: int,
                   block_m: int = 64) -> float | None:
    """The decode time model (constants above); None where the split is not tried. A split's hand-over moves a
    block_m x block_n partial tile, so its cost scales with block_m (fitted: x2 at 128 rows picks the best measured
    tile on the four M = 128 shapes of the regime, bench/results/2026-11-30-626df3c/sweep_m128.json)."""
    if splits not in STREAM_CTA_CAP:
        return None
    cap = int(STREAM_CTA_CAP[splits] * num_sms) // splits * splits
    if cap == 0:  # fewer SMs than one cluster of `splits` (legality rejects it too)
        return None
    ctas = problem.n_blocks(block_n) * splits
    waves = ceil_div(ctas, cap)
    k_blocks = problem.k_blocks // splits
    total = problem.m * problem.k + problem.n * problem.k + 2 * problem.m * problem.n
    per_wave = max(total / waves / STREAM_BW, k_blocks * STREAM_LATENCY / stages)
    return STREAM_T0 + waves * per_wave + (splits - 1) * STREAM_SPLIT_COST * block_m / 64


# 65..128 rows over a long K: 128-row tiles whose K splits, meeting in the global workspace (select_split_reduce),
# stream on the most CTAs the grid holds. The decode model's split terms were fitted to cluster hand-overs (a 0.6 us
# split, co-residency caps) and pick fewer splits or 64-row halves there. Measured, pinned, against the defaults of
# the time (ab_configs, 5-7 rounds, bench/results/2026-12-01-e14aa4c-model and -7c5f167-model128), then as this rule
# against the tree before it (ab_versions, 7 rounds, bench/results/2026-12-01-wide-splits, calls 1-2):
# - >= 56 k-blocks, ahead at all 22 shapes measured: 128x64 in 4 at 65 / 80 / 96 / 112 / 128 x 2112 x 7168 x1.016 /
#   x1.016 / x1.012 / x1.076 / x1.046 (96 again: x1.008), 65 / 96 / 112 / 128 x 2048 x 7168 x1.022 / x1.028 / x1.093
#   / x1.066, 96 x 2048 x 16384 x1.227, 65 / 96 / 112 x 1536 x 7168 x1.103 / x1.109 / x1.163; 128x64 in 2 at 65 / 80 /
#   112 / 128 x 4096 x 7168 x1.137 / x1.130 / x1.084 / x1.074, 128 x 4096 x 16384 x1.281, 128 x 3072 / 2560 x 7168
#   x1.146 / x1.176 (these also where the pick before ran as many CTAs unsplit); 128x32 in 4 at 96 / 128 x 1024 x
#   7168 x1.305 / x1.165;
# - 32 k-blocks: ahead where it doubles the CTAs (128x32 in 4 on 128 CTAs against 64: 65 / 80 / 96 / 112 / 128 x
#   1024 x 4096 x1.097 / x1.080 / x1.059 / x1.040 / x1.028, 65 x 512 x 4096 x1.205), else level or behind (4096 x 4096
#   at 65 / 112 / 128 x1.008 / x0.947 / x0.932, 3072 x 4096 at 65 / 128 x1.044 / x0.985: the same CTAs);
# - shorter K lost (24-28 k-blocks: x0.76-0.93 at 96 / 128 x 2112 x 3072, 2048 x 3072, 4096 x 3584; 12-16: x0.69-0.81);
# - a narrower tile for the same CTAs lost (96 x 2112 x 7168 and 128 x 1536 x 7168 as 128x32 in 2: x0.982 / x0.934),
#   as did a wider one (112 x 4096 x 7168 128x128 in 4: x0.900) and twice the CTAs (128x32 in 2 there, 256: x0.783).
# So: 128x32 or 128x64 tiles in 2 or 4 splits (3 was not measured) of >= 8 k-blocks, the most CTAs <= the grid, on
# ties the wider tile (half the A reads from L2, in twice the splits); under WIDE_SPLIT_LONG_K_BLOCKS only where that
# at least doubles the CTAs of the model's pick (measured at 32 k-blocks; 33..55 are taken on the same terms). The
# splits must divide the k-blocks, so a K of a prime count of k-blocks keeps the model's pick.
WIDE_SPLIT_MIN_K_BLOCKS = 32
WIDE_SPLIT_LONG_K_BLOCKS = 56
WIDE_SPLIT_SHORT_GAIN = 2
WIDE_SPLIT_MIN_KB_PER_SPLIT = 8
WIDE_SPLIT_BLOCK_N = (32, 64)
WIDE_SPLIT_SPLITS = (2, 4)
WIDE_SPLIT_MIN_CTAS = 64
# Few weight tiles (N <= 512: the choices above leave over half the grid idle): 8 splits of 128x32 tiles (>= 7
# k-blocks each), or of 64x32 tiles in two M blocks (>= 4), the most CTAs <= the grid (ties: 128 rows). Pinned,
# against the picks before (128x32 in 4 splits; ab_configs, 7 rounds, bench/results/2026-12-01-p-splits-swap, call 1):
# 64x32 in 8 at 65 / 96 / 128 x 256 x 7168 (128 CTAs) x1.290 / x1.304 / x1.286 (128x32 in 8 there, 64 CTAs: x1.087 /
# x1.152 / x1.129); 128x32 in 8 at 96 / 128 x 384 x 7168 (96 CTAs) x1.056 / x1.077, 80 / 128 x 512 x 7168 (128)
# x1.028 / x1.044, 128 x 256 x 16384 x1.318, 128 x 256 x 4096 (4 k-blocks a split) x1.032. The rule's kernels against
# the tree before (ab_versions, 7 rounds, calls 2-3): 65 / 128 x 256 x 7168 x1.272 / x1.252, 96 / 128 x 256 x 16384
# x1.593 / x1.570, 128 x 256 x 4096 x1.157, 65 x 128 x 7168 x1.350, 128 x 128 x 4096 x1.207, 96 x 384 x 7168 x1.055,
# 128 x 512 x 7168 x1.025, 72 x 320 x 7168 x1.118, 100 x 448 x 7168 x1.008, 65 x 384 x 16384 x1.365; 128-row tiles
# in splits of 4 k-blocks level (96 x 512 x 4096 x0.990), so those keep 7.
WIDE_SPLIT_FEW_SPLITS = 8
WIDE_SPLIT_FEW_MIN_KB_PER_SPLIT = {128: 7, 64: 4}  # by block_m; the order is the tie-break (128 rows first)


def _wide_splits_kind(problem: GemmProblem, draft: GemmConfig) -> bool:
    """The problems and pins _wide_splits was measured for: M = 65..128, >= WIDE_SPLIT_MIN_K_BLOCKS k-blocks, the
    block recipe e4m3 into bf16, and nothing pinned that it decides."""
    return (stream_block_m(problem.m) == 128 and problem.k_blocks >= WIDE_SPLIT_MIN_K_BLOCKS
            and problem.e4m3_block_into_bf16 and draft.block_n is None and draft.k_splits is None
            and draft.split_global in (None, 1) and draft.block_m in (None, 128))


def _grid_ctas(problem: GemmProblem, cfg: GemmConfig) -> int:
    """The CTAs a stream pick's tiles and K splits make (before the persistent grid caps them)."""
    assert cfg.block_m is not None and cfg.block_n is not None
    return ceil_div(problem.m, cfg.block_m) * problem.n_blocks(cfg.block_n) * (cfg.k_splits or 1)


def _wide_splits(problem: GemmProblem, draft: GemmConfig, target: Target,
                 model_ctas: int) -> tuple[GemmConfig, str] | None:
    """The 128-row tile and K splits of the rule above: the legal choice with the most CTAs (then the wider tile), or
    None where the rule does not apply (_wide_splits_kind), no legal choice gives WIDE_SPLIT_MIN_CTAS CTAs, or under
    WIDE_SPLIT_LONG_K_BLOCKS it does not give WIDE_SPLIT_SHORT_GAIN x the decode model pick's model_ctas. The ring is
    sized before select_split_reduce, with room for a cluster hand-over's partial tile, so 1-2 stages shallower than
    the workspace needs: the depth measured. Sized for the workspace (pinned split_global=1 gives it) it measured
    level to behind (ab_configs, 7 rounds, bench/results/2026-12-01-6f73bb4-ring-depth: x0.992-1.013 at five shapes,
    128 x 2112 x 7168 x0.972)."""
    if not _wide_splits_kind(problem, draft):
        return None
    ctas = draft.num_sms or target.num_sms
    choices = _wide_choices(problem, draft, ctas)
    long_k = problem.k_blocks >= WIDE_SPLIT_LONG_K_BLOCKS
    for fill, bm, bn, s in choices:
        if not long_k and fill < WIDE_SPLIT_SHORT_GAIN * model_ctas:
            return None
        cfg = _legal_tile(problem, draft, target, bm, bn, s, one_block_a_rows(problem, bm), MAX_STREAM_STAGES)
        if cfg is None:
            continue
        why = (f">= {WIDE_SPLIT_LONG_K_BLOCKS} k-blocks" if long_k else
               f"{problem.k_blocks} k-blocks and {fill} CTAs against the decode model's {model_ctas}")
        few = s == WIDE_SPLIT_FEW_SPLITS
        min_kb = WIDE_SPLIT_FEW_MIN_KB_PER_SPLIT[bm] if few else WIDE_SPLIT_MIN_KB_PER_SPLIT
        blocks = f"{ceil_div(problem.m, bm)} M blocks of " if bm < 128 else ""
        return cfg, (f"decode, {problem.m} rows: {blocks}{bm}x{bn} tiles in {s} K splits = {fill} CTAs of {ctas}, "
                     f"{cfg.stages} stages each: the most CTAs the grid holds with splits of >= {min_kb} k-blocks"
                     + (" (few weight tiles: 2 or 4 splits leave over half the grid idle)" if few else "")
                     + f", meeting in the workspace, as {why} (_wide_splits: x1.008-1.593 measured over the picks "
                     "before it)")
    return None


def _wide_choices(problem: GemmProblem, draft: GemmConfig, ctas: int) -> list[tuple[int, int, int, int]]:
    """_wide_splits' (CTAs, block_m, block_n, splits) candidates, best first: 128-row tiles in 2 or 4 splits; where
    none of those fills half the grid, the few-tile choices in WIDE_SPLIT_FEW_SPLITS splits instead (of a pinned
    block_m only)."""
    kb = problem.k_blocks
    splits = [s for s in WIDE_SPLIT_SPLITS if kb % s == 0 and kb // s >= WIDE_SPLIT_MIN_KB_PER_SPLIT]
    fills = [(problem.n_blocks(bn) * s, 128, bn, s) for bn in WIDE_SPLIT_BLOCK_N for s in splits]
    fitting = [c for c in fills if c[0] <= ctas]
    if 2 * max((c[0] for c in fitting), default=0) < ctas:
        s, bn = WIDE_SPLIT_FEW_SPLITS, WIDE_SPLIT_BLOCK_N[0]
        few = [(ceil_div(problem.m, bm) * problem.n_blocks(bn) * s, bm, bn, s)
               for bm, min_kb in WIDE_SPLIT_FEW_MIN_KB_PER_SPLIT.items()
               if kb % s == 0 and kb // s >= min_kb and draft.block_m in (None, bm)]
        few = [c for c in few if WIDE_SPLIT_MIN_CTAS <= c[0] <= ctas]
        if few:  # else the choices above stand
            fitting = few
    return sorted((c for c in fitting if c[0] >= WIDE_SPLIT_MIN_CTAS), reverse=True)


def _stream(problem: GemmProblem, draft: GemmConfig, target: Target) -> tuple[GemmConfig, str] | None:
    """Decode: the (block_n, k_splits) with the least modelled time, each split keeping >= MIN_KB_PER_SPLIT k-blocks;
    or, where _wide_splits applies, its 128-row tiles in workspace K splits instead."""
    bns = [draft.block_n] if draft.block_n is not None else list(STREAM_BLOCK_N)
    splits = [draft.k_splits] if draft.k_splits is not None else sorted(STREAM_CTA_CAP)
    best: tuple[float, GemmConfig] | None = None
    for bn in bns:
        for s in splits:
            if problem.k_blocks % s or (s > 1 and problem.k_blocks // s < MIN_KB_PER_SPLIT):
                continue
            bm = stream_block_m(problem.m)
            cfg = _legal_tile(problem, draft, target, bm, bn, s, one_block_a_rows(problem, bm), MAX_STREAM_STAGES)
            if cfg is None:
                continue
            assert cfg.stages is not None and cfg.num_sms is not None
            est = stream_seconds(problem, bn, s, cfg.stages, cfg.num_sms, bm)
            if est is not None and (best is None or est < best[0]):
                best = (est, cfg)
    if best is None:
        return None
    est, cfg = best
    assert cfg.block_n is not None and cfg.k_splits is not None
    why = (f"decode: one M block; {problem.n_blocks(cfg.block_n)} N tiles of {cfg.block_n} x {cfg.k_splits} "
           f"K split(s) = {problem.n_blocks(cfg.block_n) * cfg.k_splits} CTAs, {cfg.stages} stages in flight "
           f"each; modelled {est * 1e6:.1f} us, the least of every legal (block_n, k_splits) "
           "(select_config.stream_seconds)")
    if cfg.load_rows < (cfg.block_m or 64):
        why += (f"; A slots of {cfg.load_rows} rows for M = {problem.m} (one_block_a_rows: less zero fill per "
                "stage; a TMA box mostly past M's last row measured slow)")
    halves = _m_split(problem, draft, target, cfg)
    if halves is not None:
        assert halves.block_n is not None
        cfg = halves
        why += (f"; then the 128-row tile's 2 K splits as 2 M blocks of 64 rows, unsplit: the same "
                f"{problem.n_blocks(halves.block_n) * 2} CTAs, {halves.stages} stages each (_m_split)")
    wide = _wide_splits(problem, draft, target, _grid_ctas(problem, cfg))
    if wide is not None:
        return wide
    trimmed = _stream_depth(problem, draft, target, cfg)
    if trimmed is not None:
        cfg, trim_why = trimmed
        why += trim_why
    return cfg, why


def _stream_b_readers(problem: GemmProblem, cfg: GemmConfig) -> int:
    """The CTAs of a stream tile's grid that read distinct B from DRAM at once: one per weight tile and K split (a
    second M block reads the same B, from L2), at most the grid's CTAs (with a capped grid the rounds are not
    counted)."""
    assert cfg.num_sms is not None
    return min(problem.n_blocks(cfg.weight_rows) * (cfg.k_splits or 1), cfg.num_sms)


# The recipes whose stream tiles were measured with the trimmed ring: the block recipe (above), and against the
# deepest ring (ab_versions, 7 rounds, bitwise equal; bench/results/2026-12-01-dc5abe3-recipes) per-tensor
# x1.006-1.014, per-channel x1.013-1.015, bf16 x0.999-1.014 on 11 of 12 decode shapes (the 12th, 1x2112x7168's
# 64x96 in 4 K splits, x1.009, is outside STREAM_TRIM_MAX_SPLITS). 1x128/1x128 hands a slot back only
# after its promotion (a different ring) and fp32 D tiles were not measured: they keep the deepest ring.
STREAM_TRIM_RECIPES = (ScaleRecipe.A1x128_B128x128, ScaleRecipe.TENSOR, ScaleRecipe.CHANNEL, ScaleRecipe.NONE)


def _stream_trim_kind(problem: GemmProblem) -> bool:
    """Dense, into bf16, not accumulated, e4m3 or bf16 operands, a recipe of STREAM_TRIM_RECIPES."""
    return (problem.kind is GemmKind.NORMAL and problem.scales in STREAM_TRIM_RECIPES
            and problem.a_dtype is problem.b_dtype and problem.a_dtype in (DType.E4M3, DType.BF16)
            and problem.out_dtype is DType.BF16 and not problem.accumulate)


def _stream_budget(problem: GemmProblem, cfg: GemmConfig) -> int:
    """Bytes of B in flight over the grid that saturate HBM: less for a split of few k-blocks."""
    short = problem.k_blocks // (cfg.k_splits or 1) <= STREAM_SHORT_KB
    return STREAM_B_IN_FLIGHT_SHORT if short else STREAM_B_IN_FLIGHT


def _budget_ring(problem: GemmProblem, cfg: GemmConfig, target: Target) -> GemmConfig | None:
    """cfg with its ring holding ~_stream_budget bytes of weights over the CTAs reading them (not below
    STREAM_MIN_DEPTH); None where that is not shallower than cfg's ring or is illegal. Each k-block row of B is
    SWIZZLE_ROW_BYTES (128 e4m3 or 64 bf16)."""
    assert cfg.stages is not None
    stage_bytes = cfg.weight_rows * SWIZZLE_ROW_BYTES
    depth = max(STREAM_MIN_DEPTH, round(_stream_budget(problem, cfg) / (_stream_b_readers(problem, cfg) * stage_bytes)))
    trimmed = cfg.replace(stages=depth)
    return None if depth >= cfg.stages or check(problem, trimmed, target) else trimmed


def _stream_depth(problem: GemmProblem, draft: GemmConfig, target: Target,
                  cfg: GemmConfig) -> tuple[GemmConfig, str] | None:
    """The stream tile with its ring trimmed to ~STREAM_B_IN_FLIGHT bytes of B from DRAM over the grid (not below
    STREAM_MIN_DEPTH, never deeper than shared memory gave it), and the reason; None where nothing changes, the
    stages were pinned, the problem or the tile is not a kind measured (_stream_trim_kind, STREAM_TRIM_BLOCK_N,
    STREAM_TRIM_MAX_SPLITS) or the shallower ring is illegal. Each k-block row of B is SWIZZLE_ROW_BYTES (128 e4m3 or
    64 bf16)."""
    if draft.stages is not None or not _stream_trim_kind(problem):
        return None
    assert cfg.stages is not None and cfg.block_n is not None
    lo, hi = STREAM_TRIM_BLOCK_N
    if cfg.block_m != 64 or not lo <= cfg.block_n <= hi or (cfg.k_splits or 1) > STREAM_TRIM_MAX_SPLITS:
        return None
    trimmed = _budget_ring(problem, cfg, target)
    if trimmed is None:
        return None
    assert trimmed.stages is not None
    readers, depth, budget = _stream_b_readers(problem, cfg), trimmed.stages, _stream_budget(problem, cfg)
    stage_bytes = cfg.block_n * SWIZZLE_ROW_BYTES
    in_flight = readers * depth * stage_bytes / 2**20
    return trimmed, (f"; then the ring trimmed from {cfg.stages} to {depth} stages: {readers} CTAs reading B x "
                     f"{depth} x {stage_bytes // 1024} KB = {in_flight:.1f} MiB of B in flight (aim ~{budget >> 20} "
                     "MiB): past that HBM is saturated and a deeper ring only queues (measured; _stream_depth)")


def _m_split(problem: GemmProblem, draft: GemmConfig, target: Target, cfg: GemmConfig) -> GemmConfig | None:
    """A 128-row decode tile split 2 ways along K, as two 64-row M blocks instead: the same CTAs and DRAM bytes (the
    second M block's B comes from L2), no DSMEM hand-over, one math warpgroup per CTA and a ring twice as deep (64-row
    A slots); a 64x32 tile also gathers SA (select_sa_load). Measured against the K split (ab_configs, 7 interleaved
    rounds, bench/results/2026-12-01-80b467c-m128): 128x2112x7168 64x32 16 stages x1.068 (8 stages: x0.989),
    128x4096x7168 64x64 13 stages x1.061. As shipped against the K split (ab_versions, 7 rounds,
    bench/results/2026-12-01-4a26e63): M = 128 x1.064 / x1.041 (N = 2112 / 4096), M = 96 x1.082 / x1.032, but
    65x2112x7168 x0.969 (the second M block holds one row). Once the 128-row tile's A box ends inside M
    (one_block_a_rows), the K split with that box against this (ab_configs, 5 rounds,
    bench/results/2026-12-01-b4f1004-partial-m): M = 96 x1.230 / x1.026, M = 104 x1.018 / x0.982, M = 112 x0.956
    (N = 2112), M = 120 x0.945 / x0.966, M = 128 x0.937; so from M_SPLIT_MIN_M = 104 rows. Splits of 3 or 4
    (N = 576) and the other scale recipes were not measured and stay."""
    if not (problem.m >= M_SPLIT_MIN_M and problem.scales is ScaleRecipe.A1x128_B128x128
            and cfg.block_m == 128 and cfg.k_splits == 2
            and draft.block_m is None and draft.k_splits is None):
        return None
    assert cfg.block_n is not None
    return _legal(problem, _tile(draft, 64, cfg.block_n, problem, target, 1), target, MAX_STREAM_STAGES)


SWAP_BLOCK_M = 64  # the swapped decode tile's weight rows: one math warpgroup, one m64 wave
# Where select_config swaps A and B unasked (_swap_pays): M fits 16 token columns and N gives at least this many
# 64-row weight tiles. Measured against the unswapped pick (ab_configs, 7 interleaved rounds, bitwise equal where
# neither splits K; bench/results/2026-12-01-f5e7e9d-swap, -29be4c9-swap-ks, -3d87144-swap), 16 stages: M = 1 / 8 at
# N x K = 24576 x 1536 (384 tiles) x1.057-1.109, 4096 x 7168 (64) x1.086-1.092, 7168 x 2048 (112) x1.014-1.025,
# 7168 x 16384 (112) x0.997-1.010, 32768 x 512 (512) x0.999-1.000; M = 16 x1.059 / x1.077 / x1.012 / x0.988 (at 12
# stages x1.014); lost at 2112 x 7168 (33 tiles, x0.80) and 576 x 7168 (9, x0.60). At M = 32 (32 columns) it lost
# at 6 of 8 (x0.73-0.985; 24576 x 1536 x1.02-1.05, 7168 x 16384 at 12 stages x1.007).
SWAP_MAX_M = 16
SWAP_MIN_TILES = 64
# Over more than one round of CTAs, the share of the rounds' CTA slots the tiles fill. Measured against swap_ab=0 at
# M = 1 / 8 / 16 (7 rounds, bench/results/2026-12-01-69dc8a9-waves): fill 0.61 (10240 x 7168) x0.835, 0.73 (18432 x
# 7168, 12288 x 7168) x0.92-0.93, (18432 x 2048) x1.001; 0.87 (36864 x 1536) x1.030; 0.97 (16384 x 7168, 24576 x
# 1536, 32768 x 512) x0.997-1.09. One round (64-132 tiles: 4096, 7168 and 8192 wide) is not limited (x1.01-1.09).
SWAP_MIN_FILL = 0.85
# Tile fields a swapped pick decides itself: pinning any of them keeps the unswapped kernel, except at the value the
# swapped kernel takes anyway (SWAP_TAKES: GemmConfig's own defaults for cluster and k_splits, so a config object
# with only other fields set still swaps).
SWAP_DECIDES = ("block_m", "block_n", "cluster", "k_splits", "wave_n", "a_rows", "sa_gather", "stages", "acc_sets")
SWAP_TAKES = {"cluster": 1, "k_splits": 1, "sa_gather": 0}
SWAP_MIN_K_BLOCKS = 4  # the shortest K timed (32768 x 512: level); shorter K keeps the unswapped kernel


# Where 64-row tiles fill their rounds unevenly, 128-row tiles (two math warpgroups, one m64 wave each) in one round
# instead. Measured against the default (then unswapped) and the 64-row swap (ab_configs, 7 rounds,
# bench/results/2026-12-01-b846b4e-swap128): 8 / 16 x 10240 x 7168 (80 tiles) x1.028 / x1.016, 1 x 12288 x 7168 (96)
# x1.018; where 64 rows fill their rounds it lost to them (24576 x 1536 x0.966, 7168 x 16384 x0.994, 7168 x 2048
# x0.985, 4096 x 7168 x0.94: 32 tiles), and at 18432 x 7168 (144 tiles in two rounds, fill 0.55) x0.915. The rule's
# 128-row picks against swap_ab=0 / the 64-row swap (-0748556-swap128-rule): 8 x 8704 x 2048 (68 tiles) x1.062 /
# x1.210, 1 x 14336 x 7168 x1.015 / x1.024, 8 x 11264 x 512 x1.042 / x1.061, 16 x 13312 x 1536 x1.026 / x1.010,
# 8 x 9216 x 7168 x1.032 / x1.319.
SWAP_BLOCK_MS = (SWAP_BLOCK_M, 128)


def _fills_rounds(tiles: int, ctas: int, min_fill: float = SWAP_MIN_FILL) -> bool:
    rounds = ceil_div(tiles, ctas)
    return tiles >= SWAP_MIN_TILES and (rounds == 1 or tiles / (rounds * ctas) >= min_fill)


# Pinned fields under which only 64-row swapped tiles are considered: a ring depth, A-slot rows or register split
# sized for one math warpgroup may not hold for two (shared memory, the a_rows rule, 65536 registers), and a K split
# multiplies the CTAs the fill was measured without.
SWAP_HEIGHT_KEEPS = ("stages", "a_rows", "math_regs", "producer_regs")


def _swap_height(problem: GemmProblem, draft: GemmConfig, target: Target) -> int | None:
    """The first of SWAP_BLOCK_MS whose ceil(N / rows) weight tiles fill their rounds of CTAs; None if none does.
    128 rows only where measured (M <= SWAP_MAX_M, one K split) and no field of SWAP_HEIGHT_KEEPS is pinned."""
    ctas = draft.num_sms or target.num_sms
    free = (problem.m <= SWAP_MAX_M and draft.k_splits in (None, 1)
            and all(getattr(draft, name) is None for name in SWAP_HEIGHT_KEEPS))
    heights = SWAP_BLOCK_MS if free else (SWAP_BLOCK_M,)
    return next((bm for bm in heights if _fills_rounds(ceil_div(problem.n, bm), ctas)), None)


# Fewer than SWAP_MIN_TILES weight tiles: swapped all the same where K splits, meeting in a global workspace
# (GemmConfig.split_global, select_split_reduce), make the tiles' splits stream on at least SWAP_FEW_MIN_CTAS CTAs:
# the most splits (<= SWAP_FEW_MAX_SPLITS, dividing the k-blocks, >= SWAP_FEW_MIN_KB_PER_SPLIT each) whose CTAs fit
# the grid. Through distributed shared memory such splits lost (8 x 2112 x 7168 in 4: x0.61, clusters of 4 not all
# co-resident); in the workspace, against the then default (unswapped 64x32, its K split in cluster ranks; ab_configs,
# 7 rounds, bench/results/2026-12-01-347e055-split-global): 1 / 8 x 2112 x 7168 (33 tiles x 4 = 132 CTAs)
# x1.101 / x1.113, 1 / 8 x 576 x 7168 (9 tiles x 8 = 72, 7 k-blocks each) x1.280 / x1.304, each also ahead of the
# unswapped tile with its splits in the workspace (x1.045 / x1.047 / x1.074 / x1.070).
SWAP_FEW_MAX_SPLITS = 8
SWAP_FEW_MIN_KB_PER_SPLIT = 7
SWAP_FEW_MIN_CTAS = 64


def _few_tile_splits(problem: GemmProblem, ctas: int) -> int:
    """K splits for fewer than SWAP_MIN_TILES 64-row weight tiles (constants above); 1 where none qualifies."""
    tiles = ceil_div(problem.n, SWAP_BLOCK_M)
    if tiles >= SWAP_MIN_TILES:
        return 1
    for splits in range(SWAP_FEW_MAX_SPLITS, 1, -1):
        if (problem.k_blocks % splits == 0 and problem.k_blocks // splits >= SWAP_FEW_MIN_KB_PER_SPLIT
                and tiles * splits <= ctas):
            return splits if tiles * splits >= SWAP_FEW_MIN_CTAS else 1
    return 1


# 17..32 rows (token columns): swapped only over several rounds of 64-row weight tiles filled to SWAP_WIDE_MIN_FILL,
# K >= SWAP_WIDE_MIN_K_BLOCKS, e4m3 with the block recipe into bf16. Measured against the unswapped default with the
# weights evict_first (ab_configs, 7 rounds, bitwise equal; bench/results/2026-12-01-p-splits-swap, call 2): 17 / 24
# / 32 x 24576 x 1536 (384 tiles, fill 0.97) x1.052 / x1.137 / x1.130, 32 x 24576 x 2048 / 7168 x1.082 / x1.031,
# 24 / 32 x 16384 x 7168 (256 tiles) x1.027 / x1.026; lost or mixed under a 0.9 fill (36864 x 1536 / 7168 at 0.87:
# x1.039 / x0.982; 18432 x 1536 at 0.73: x0.983; 10240 x 7168 at 0.61: x0.776), over one round (64 tiles, 4096 x
# 7168: x0.81-0.885; 112-128 tiles, 7168 x 16384 / 2048, 8192 x 7168: x1.003-1.012, level), at K = 512 (512 tiles:
# x0.978-0.987) and over few tiles (2112 / 576 x 7168: x0.41-0.63; the K splits are measured at M <= 16 only). The
# rule's picks off those shapes against the tree before (ab_versions, 7 rounds, call 3): 32 x 32768 x 2048 / 7168
# x1.052 / x1.017, 17 x 16384 x 1536 x1.009, 24 x 24576 x 16384 x1.007. (v0.24 section 5 lost at 6 of 7 such shapes
# before the weights loaded evict_first.)
SWAP_WIDE_MAX_M = 32
SWAP_WIDE_MIN_K_BLOCKS = 12
SWAP_WIDE_MIN_FILL = 0.9


def _swap_pays(problem: GemmProblem, draft: GemmConfig, target: Target) -> bool:
    """Whether decode runs with A and B swapped unasked (constants above): the weights fill wgmma's M, the few tokens
    its N, so no tensor-core work or promotion is spent on the 48+ rows of an m64 tile past M. Not where no tile
    height of SWAP_BLOCK_MS fills its rounds (SWAP_MIN_FILL, _swap_height): the unswapped wave rule sizes its tiles
    to fill rounds; but over fewer than SWAP_MIN_TILES tiles where their K splits fill the grid (_few_tile_splits).
    At 17..32 rows only over several filled rounds (SWAP_WIDE_MAX_M, _swap_pays_wide)."""
    if not (draft.swap_ab is None and problem.kind is GemmKind.NORMAL and problem.k_blocks >= SWAP_MIN_K_BLOCKS
            and all(getattr(draft, name) in (None, SWAP_TAKES.get(name)) for name in SWAP_DECIDES)):
        return False
    if problem.m > SWAP_MAX_M:
        return _swap_pays_wide(problem, draft, target)
    return (_swap_height(problem, draft, target) is not None
            or (_splits_free(draft) and _few_tile_splits(problem, draft.num_sms or target.num_sms) > 1))


def _swap_pays_wide(problem: GemmProblem, draft: GemmConfig, target: Target) -> bool:
    """17..32 rows: more 64-row weight tiles than CTAs, filling their rounds, over >= SWAP_WIDE_MIN_K_BLOCKS, the
    kind measured (constants above)."""
    ctas = draft.num_sms or target.num_sms
    tiles = ceil_div(problem.n, SWAP_BLOCK_M)
    return (problem.m <= SWAP_WIDE_MAX_M and problem.k_blocks >= SWAP_WIDE_MIN_K_BLOCKS
            and problem.e4m3_block_into_bf16  # (the other kinds' swapped kernels are illegal today)
            and tiles > ctas and _fills_rounds(tiles, ctas, SWAP_WIDE_MIN_FILL))


def _splits_free(draft: GemmConfig) -> bool:
    """The few-tile swap needs its K splits, and in the workspace: not where k_splits or split_global=0 is pinned
    (33 tiles unsplit measured x0.80, in 4 cluster ranks x0.61)."""
    return draft.k_splits is None and draft.split_global in (None, 1)


# Swapped tiles that fill at most half the grid, over a long K, take 2 K splits (cluster ranks): twice the CTAs
# streaming weights. Measured with the weights loaded evict_first (ab_configs, 7 rounds,
# bench/results/2026-12-01-1bdace5-levers): 1 / 8 x 4096 x 7168 (64 tiles, 56 k-blocks) x1.035 / x1.028 over one split
# (without evict_first it lost there, 14.07 against 13.09 us: v0.24 section 2); 8 x 2112 x 7168 x1.007 (33 tiles:
# not swapped unasked). The rule's pick (-888bb7f-swap-split): 1 / 8 / 16 x 4096 x 7168 x1.028-1.048 over one split,
# x1.014-1.025 over the unswapped kernel; 8 x 4096 x 16384 x1.213 / x1.019; at 8 x 4224 x 7168 (66 tiles) x1.013 over
# one split but x0.942 against the unswapped kernel, whose 64x32 tiles fill exactly 132 CTAs (the swap rule's edge).
SWAP_SPLITS = 2
SWAP_SPLIT_MIN_K_BLOCKS = 56


def _swap_splits(problem: GemmProblem, draft: GemmConfig, target: Target, block_m: int) -> int:
    if draft.k_splits is not None:
        return draft.k_splits
    ctas = draft.num_sms or target.num_sms
    if (draft.stages, draft.a_rows) != (None, None) or problem.m > SWAP_MAX_M:  # measured at M <= 16 only
        return 1
    few = _few_tile_splits(problem, ctas) if block_m == SWAP_BLOCK_M and _splits_free(draft) else 1
    if few > 1:
        return few
    long_k = problem.k_blocks >= SWAP_SPLIT_MIN_K_BLOCKS
    return SWAP_SPLITS if long_k and ceil_div(problem.n, block_m) * SWAP_SPLITS <= ctas else 1


def _swapped(problem: GemmProblem, draft: GemmConfig, target: Target) -> tuple[GemmConfig, str]:
    """swap_ab=1: 64 weight rows per tile, or 128 where only those fill their rounds (_swap_height; ceil(N / rows)
    tiles over the persistent grid), the tokens as wgmma's N (M rounded up to 8, 16 or 32), the K splits of
    _swap_splits unless pinned, no cluster. The ring holds _stream_budget bytes of weights
    over the CTAs reading them (not below STREAM_MIN_DEPTH, not deeper than shared memory allows): against 8 / 12 /
    16 stages (ab_configs, 7 rounds, bench/results/2026-12-01-3d87144-swap) the best of the three or within 1% of it
    at M = 1 / 8 / 16 on 24576 x 1536 (8 stages), 4096 x 7168 (16), 7168 x 2048 and 32768 x 512 (8); at 7168 x 16384
    it gives 10 stages, between the measured 8 (level with 16) and 12 (x1.014-1.028)."""
    bm = draft.block_m or _swap_height(problem, draft, target) or SWAP_BLOCK_M
    bn = draft.block_n or stream_a_rows(problem.m)

    def base_of(rows: int) -> GemmConfig:
        return draft.decide(block_m=rows, block_n=bn, cluster=1, block_k=problem.k_block, num_sms=target.num_sms,
                            k_splits=_swap_splits(problem, draft, target, rows), wave_n=bn, a_rows=rows)
    base = base_of(bm)
    cfg = _legal(problem, base, target, MAX_STREAM_STAGES)
    if cfg is None and draft.block_m is None and bm != SWAP_BLOCK_M:  # 128 rows chosen, not pinned: 64 instead
        bm, base = SWAP_BLOCK_M, base_of(SWAP_BLOCK_M)
        cfg = _legal(problem, base, target, MAX_STREAM_STAGES)
    if cfg is None:  # the verifier lists the rules the pinned fields break
        cfg = base.decide(stages=3)
    elif draft.stages is None:  # the ring holds the stream budget of weights over the grid, as _stream_depth's B
        cfg = _budget_ring(problem, cfg, target) or cfg
    tiles = ceil_div(problem.n, bm)
    split = ""
    if draft.k_splits is None and tiles < SWAP_MIN_TILES and (cfg.k_splits or 1) > 1:
        split = (f" (fewer than {SWAP_MIN_TILES} tiles: the most splits whose CTAs fit the grid, >= "
                 f"{SWAP_FEW_MIN_KB_PER_SPLIT} k-blocks each: _few_tile_splits)")
    elif draft.k_splits is None and cfg.k_splits == SWAP_SPLITS:
        split = (f" (the tiles x {SWAP_SPLITS} fill at most the grid over >= {SWAP_SPLIT_MIN_K_BLOCKS} k-blocks: "
                 "_swap_splits)")
    return cfg, (f"A and B swapped: {ceil_div(problem.n, bm)} tiles of {bm} weight rows x {bn} token "
                 f"columns, {cfg.k_splits} K split(s){split}, {cfg.stages} stages")


def run(kernel: Kernel, target: Target) -> Kernel:
    problem, draft = kernel.problem, kernel.config
    assert draft is not None, "select_config runs on the pipeline's draft config"
    if draft.swap_ab:
        cfg, why = _swapped(problem, draft, target)
        return kernel.replace(config=cfg.decide(pdl=0)).because("select_config", why + " (pinned)")
    if _swap_pays(problem, draft, target):
        cfg, why = _swapped(problem, draft.decide(swap_ab=1), target)
        if not check(problem, cfg, target):  # e.g. other dtypes or recipes: the unswapped kernel
            return kernel.replace(config=cfg.decide(pdl=0)).because(
                "select_config", f"{why}: M <= {SWAP_MAX_M}, >= {SWAP_MIN_TILES} weight tiles filling their rounds of "
                f"CTAs, or fewer whose K splits fill the grid; M <= {SWAP_WIDE_MAX_M} over several filled rounds "
                "(_swap_pays)")
    draft = draft.decide(swap_ab=0)
    chosen = _stream(problem, draft, target) if _is_stream(problem, draft, target) else None
    if chosen is None and problem.kind is GemmKind.M_GROUPED_MASKED:  # every expected_m (bench/NOTES.md v0.11 §6)
        chosen = _masked(problem, draft, target)
    if chosen is None:
        chosen = _prefill(problem, draft, target)
    if chosen is not None:
        return kernel.replace(config=chosen[0].decide(pdl=0)).because("select_config", chosen[1])
    # Nothing legal: keep the first candidate (3 stages unless pinned) so the verifier reports every rule it breaks.
    bm, bn = _candidates(problem, draft)[0]
    cfg = _tile(draft, bm, bn, problem, target, draft.k_splits or 1).decide(stages=3, cluster=1, pdl=0)
    return kernel.replace(config=cfg).because("select_config", "no legal candidate: the verifier lists the rules")
