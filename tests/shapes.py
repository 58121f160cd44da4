"""The shape sets every test and benchmark draws from (one place, so they stay in step)."""

from __future__ import annotations

# (N, K) pairs of the DeepSeek-V3 dense GEMMs (DeepGEMM's test set), and the M values to cross them with.
NK_PAIRS = [(2112, 7168), (576, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]
M_VALUES = [1, 64, 128, 4096]
# Edge cases: tiny, partial M/N tiles, N not a multiple of 16, K not a multiple of 128, large square.
# (32, 4096, 7168): the decode rule's unsplit 64x32 pick with 32-row A slots; (13, 32768, 512): A and B swapped
# into 16 token columns (M = 1 above: 8); (40, 7168, 2048), (65, 2112, 7168),
# (100, 4096, 7168): decode slots of M rounded up to 8 rows, on 64- and 128-row tiles; (577, 2112, 7168),
# (321, 4096, 7168): 128x96 two-set tiles for the wave rule's 64x192 (select_config._two_warpgroups) with a partial last
# M block, and a partial last N tile. (24, 24576, 1536), (30, 24600, 2048): A and B swapped at 17..32 rows (32 token
# columns, 24 / 30 of them M's; a partial last weight tile); (72, 200, 7168), (100, 448, 7168): few weight tiles in 8
# workspace K splits, 64-row tiles in two M blocks (the second of 8 rows, a partial N tile) and 128-row tiles with a
# 104-row A box.
EXTRA_SHAPES = [(7, 24, 16), (129, 136, 1280), (4097, 4104, 7296), (6144, 6144, 1280), (8192, 8192, 8192),
                (32, 4096, 7168), (13, 32768, 512), (40, 7168, 2048), (65, 2112, 7168), (100, 4096, 7168),
                (577, 2112, 7168), (321, 4096, 7168), (24, 24576, 1536), (30, 24600, 2048), (72, 200, 7168),
                (100, 448, 7168)]

GPU_SHAPES = [(m, n, k) for m in M_VALUES for n, k in NK_PAIRS] + EXTRA_SHAPES

# The NVRTC compile matrix (CPU): every distinct kernel the GPU set builds.
COMPILE_SHAPES = GPU_SHAPES

# Benchmark rows: the dense prefill shapes of docs/BENCHMARKING.md.
BENCH_SHAPES = [(m, n, k) for m in (64, 128, 4096) for n, k in
                [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]]
BENCH_SHAPES.append((8192, 8192, 8192))

# Forced schedules the defaults above do not reach, so both code paths of each template switch run on the GPU:
# one accumulator set with one wave (acc_sets=1, block_m=64/128), two sets with an odd number of k-blocks and a
# run-time B-scale split, no multicast at large M, a 2-wave tile without multicast.
CONFIG_CASES = [
    ((64, 2112, 7168), {"acc_sets": 1}),
    ((129, 136, 1280), {"acc_sets": 1, "block_m": 128, "block_n": 64}),
    ((200, 4104, 7296), {"block_m": 64, "block_n": 112, "acc_sets": 2}),
    ((300, 1000, 2320), {"block_m": 128, "block_n": 40, "acc_sets": 2}),
    ((4096, 7168, 2048), {"cluster": 1}),
    # 256-row tiles with a run-time B-scale split and A multicast (the wave rule now prefers fixed splits)
    ((4097, 4104, 7296), {"block_m": 256, "block_n": 112}),
    ((1000, 2048, 1536), {"block_m": 256, "block_n": 64, "cluster": 1}),
    # split-K (cluster ranks along K, reduced through DSMEM): a run-time B-scale split with a partial N tile (K =
    # 57 whole k-blocks); more clusters' worth of tiles than the grid (each cluster walks several tiles: the hand-over
    # barriers change phase); two math warpgroups over two M blocks; two waves per warpgroup.
    ((33, 1000, 7296), {"block_n": 112, "k_splits": 3}),
    ((64, 4096, 2048), {"block_n": 32, "k_splits": 4}),
    ((200, 1024, 2048), {"block_m": 128, "block_n": 64, "k_splits": 2}),
    ((300, 512, 1536), {"block_m": 256, "block_n": 64, "k_splits": 3}),
    # the ping-pong consumer pinned on the block recipe (one set: the hand-over sits in its main loop): whole 128-row
    # tiles over an odd tile count per CTA, a partial last M block and a run-time B-scale split on 64-row tiles
    ((1000, 7168, 2048), {"pingpong": 1, "block_m": 128, "block_n": 128}),
    ((200, 4104, 7296), {"pingpong": 1, "block_m": 64, "block_n": 112, "num_sms": 20}),
    # B multicast to an M-neighbour: an even M-block count; an odd one (the last pair's second tile past M) with a
    # run-time B-scale split on a 20-CTA grid
    ((1000, 7168, 2048), {"cluster": 2, "multicast_b": 1, "block_m": 128, "block_n": 128}),
    ((300, 4104, 7296), {"cluster": 2, "multicast_b": 1, "block_m": 128, "block_n": 112, "num_sms": 20}),
    # decode slots of only M's rows (a_rows < block_m: wgmma's other A rows read what follows the slot): M filling the
    # slot exactly, a partial slot with split-K, a partial N tile and a run-time B-scale split (whole k-blocks, then a
    # K tail: 7232 = 56.5 x 128, the last split's last block half filled); a deep ring of narrow tiles; M = 32 in a
    # 32-row slot; the last A slot's 64-row read ending on the last byte of B's stages (8-column tiles, 7 stages).
    ((8, 2112, 7168), {"a_rows": 8}),
    ((9, 1000, 7296), {"a_rows": 16, "block_n": 112, "k_splits": 3}),
    ((9, 1000, 7232), {"a_rows": 16, "block_n": 112, "k_splits": 3}),
    ((17, 576, 7168), {"a_rows": 32, "block_n": 32, "stages": 24}),
    ((32, 4096, 2048), {"a_rows": 32, "block_n": 64}),
    ((3, 512, 1024), {"a_rows": 8, "block_n": 8, "stages": 7}),
    # the same on 128-row tiles (two math warpgroups; the second reads from the slot's row 64): split-K with a 72-row
    # slot filled exactly and SA gathered by the producer; 3 K splits with a partial N tile and a K tail; the last
    # slot's 128-row read ending on B's last byte.
    ((72, 2112, 7168), {"block_m": 128, "block_n": 32, "k_splits": 2, "a_rows": 72, "sa_gather": 1}),
    ((100, 1000, 7232), {"block_m": 128, "block_n": 112, "k_splits": 3, "a_rows": 104}),
    ((5, 512, 1024), {"block_m": 128, "block_n": 8, "stages": 15, "a_rows": 8}),
    # column waves (wave_n = 128: two m64n128 wgmma per warpgroup and k-block, one accumulator set): a partial M
    # tile, N = 2112 ending in the last tile's first wave (its second wave wholly past N, its B-scale row clamped)
    # and a K tail; a 64-row tile (one math warpgroup); A multicast.
    ((129, 2112, 1280), {"block_m": 128, "block_n": 256}),
    ((64, 4096, 7168), {"block_m": 64, "block_n": 256}),
    ((1000, 4096, 1536), {"block_m": 128, "block_n": 256, "cluster": 2}),
    # two accumulator sets with a B-scale split at one of 4 places (64x96 tiles: one main loop, the split selected at
    # run time, plan_kernel.split_loops); column halves (wave_n = block_n / 2, two sets of half the width): a partial
    # M tile, N = 1000 ending in the last tile's first half (its second wholly past N), an odd count of k-blocks with a
    # K tail (7296 = 57 x 128); two math warpgroups with 10 k-blocks; an A multicast pair.
    ((384, 2112, 7168), {"block_m": 64, "block_n": 96, "acc_sets": 2}),
    ((33, 1000, 7296), {"block_m": 64, "block_n": 192, "wave_n": 96, "acc_sets": 2}),
    ((129, 2112, 1280), {"block_m": 128, "block_n": 192, "wave_n": 96, "acc_sets": 2}),
    ((1000, 4096, 1536), {"block_m": 128, "block_n": 192, "wave_n": 96, "acc_sets": 2, "cluster": 2}),
    # SA gathered every stage though in the TMA layout (select_features may pick it for 64x32 tiles, which the shapes
    # above run): two math warpgroups' rows and an A multicast pair, each CTA gathering its own SA.
    ((1000, 4096, 1536), {"block_m": 128, "block_n": 128, "cluster": 2, "sa_gather": 1}),
    # programmatic dependent launch (griddepcontrol; a second launch attribute): beside the K splits' cluster, and
    # beside an A-multicast pair.
    ((1, 2112, 7168), {"pdl": 1}),
    ((1000, 4096, 1536), {"block_m": 128, "block_n": 128, "cluster": 2, "pdl": 1}),
    # A and B swapped (swap_ab=1: the weights in wgmma's M, 64 per tile; the tokens in its N, stored
    # transposed): M filling 8 columns exactly; M = 1 with a partial last weight tile (N = 1000 = 15 x 64 + 40) and a
    # K tail; M = 17 in 32 columns; M = 32 over 384 tiles (several per CTA: the D tile reused); one accumulator set.
    ((8, 2112, 7168), {"swap_ab": 1, "k_splits": 1}),  # one split pinned: a pinned swap of <= 66 tiles splits K in 2
    ((1, 1000, 2320), {"swap_ab": 1}),
    ((17, 576, 7168), {"swap_ab": 1}),
    ((32, 24576, 1536), {"swap_ab": 1}),
    ((16, 7168, 2048), {"swap_ab": 1, "acc_sets": 1}),
    # and K split over cluster ranks, pinned (the partials' live rows are N's: 1000 ends inside a tile)
    ((8, 2112, 7168), {"swap_ab": 1, "k_splits": 4, "split_global": 0}),
    ((17, 1000, 2304), {"swap_ab": 1, "k_splits": 3, "split_global": 0}),
    ((32, 4096, 7168), {"swap_ab": 1, "k_splits": 2, "stages": 8, "split_global": 0}),
    # K splits meeting in a global workspace (split_global=1: each split its own CTA, the last to arrive adds the
    # partials): swapped over 33 tiles in 4, over 16 partial-N tiles in 3 (M = 17), 128 weight rows in 2; unswapped
    # with N and K ending inside a tile, several M blocks (200 rows, 128-row tiles; 300 rows, 256-row tiles: two
    # waves), and 8 splits of 66 tiles (528 units on 132 CTAs: four tiles' splits per CTA, a counter per tile)
    ((8, 2112, 7168), {"swap_ab": 1, "k_splits": 4, "split_global": 1}),
    ((17, 1000, 2304), {"swap_ab": 1, "k_splits": 3, "split_global": 1}),
    ((1, 4096, 7168), {"swap_ab": 1, "block_m": 128, "k_splits": 2, "split_global": 1}),
    ((33, 1000, 7296), {"block_n": 112, "k_splits": 3, "split_global": 1}),
    ((200, 1024, 2048), {"block_m": 128, "block_n": 64, "k_splits": 2, "split_global": 1}),
    ((300, 512, 1536), {"block_m": 256, "block_n": 64, "k_splits": 3, "split_global": 1}),
    ((8, 2112, 7168), {"block_n": 32, "k_splits": 8, "split_global": 1}),
    # 128-row tiles in 4 workspace splits of 8 k-blocks (select_config._wide_splits' 1024 x 4096 pick) with a
    # 112-row A slot and N ending inside a tile
    ((112, 1000, 4096), {"block_m": 128, "block_n": 32, "k_splits": 4}),
    # and 128 weight rows per tile (two math warpgroups of one m64 wave each): one round of 80 tiles; N = 1000 ending
    # inside the last tile, split over 3 ranks; M = 1 over 32 tiles
    ((8, 10240, 7168), {"swap_ab": 1, "block_m": 128}),
    ((13, 1000, 2304), {"swap_ab": 1, "block_m": 128, "k_splits": 3}),
    ((1, 4096, 7168), {"swap_ab": 1, "block_m": 128, "k_splits": 1}),
    # swapped unasked (select_config._swap_pays: M <= 16, >= 64 weight tiles), with programmatic dependent launch;
    # 128 weight rows unasked where 64-row tiles fill their rounds unevenly (M = 5 in 8 columns, N past the last
    # whole tile); and the unswapped kernels those shapes took before (M's rows of A in 8- or 16-row slots, K split
    # in 2)
    ((1, 24576, 1536), {"pdl": 1}),
    ((5, 11000, 2048), {"pdl": 1}),
    ((1, 24576, 1536), {"swap_ab": 0}),
    ((1, 4096, 7168), {"swap_ab": 0}),
    ((1, 7168, 16384), {"swap_ab": 0}),
    ((13, 32768, 512), {"swap_ab": 0}),
    # the features (GemmConfig.FEATURES) where the old measured gates never put them: the shifted last A box on a
    # 256-row tile; cross-tile issue on a dense kernel with a partial M block; no per-warpgroup epilogue on two math
    # warpgroups; a balanced grid pinned off and on for a 128-row tile.
    ((300, 2112, 7168), {"block_m": 256, "block_n": 128, "a_shift": 1}),
    ((200, 4096, 2048), {"block_m": 128, "block_n": 128, "acc_sets": 1, "cross_tile": 1, "a_shift": 0}),
    ((136, 4096, 2048), {"block_m": 128, "block_n": 128, "k_splits": 1, "epilogue_per_wg": 0}),
    ((4096, 7168, 2048), {"balanced": 0}),
    ((2304, 2048, 1536), {"block_m": 128, "block_n": 64, "balanced": 1}),
]

# MoE grouped GEMMs. Contiguous: (groups, expected rows per group, N, K, forced config). Group sizes are drawn in
# 0.7..1.3x expected, and the GPU tests set one group to 0 rows, one to 1 row and one to 2x expected.
GROUPED_CONTIGUOUS_CASES = [
    (4, 256, 4096, 7168, None),
    (8, 96, 7168, 2048, None),
    (3, 200, 576, 1280, {"block_m": 64}),
    (5, 150, 1000, 2320, {"block_n": 112, "cluster": 1}),  # run-time B-scale split, partial N and K blocks
    (4, 256, 4096, 7168, {"pingpong": 1, "block_m": 128, "block_n": 128}),  # ping-pong pinned
    (6, 300, 4096, 1024, {"block_m": 128, "block_n": 128, "cluster": 2}),  # A multicast
    (4, 128, 2048, 1536, {"block_m": 64, "acc_sets": 2}),
    (3, 300, 2048, 1664, None),  # cross-tile issue with no head (13 k-blocks: 12 after step 0 = 3 bodies), 128x160
    # column waves (the first case's default is 128x256 too): N = 1000 ending inside the last tile's second wave, a K
    # tail; A multicast
    (5, 150, 1000, 2320, {"block_n": 256, "cluster": 1}),
    (6, 300, 4096, 1024, {"block_m": 128, "block_n": 256, "cluster": 2}),
]
# Masked: (groups, M_max, expected rows per group, N, K, forced config).
GROUPED_MASKED_CASES = [
    (2, 512, 256, 4096, 7168, None),
    (4, 384, 200, 7168, 2048, None),
    (3, 256, 100, 1000, 2320, {"block_m": 64, "block_n": 112}),
    (4, 512, 300, 4096, 1024, {"block_m": 128, "block_n": 128, "cluster": 2}),
    (4, 512, 300, 4096, 1024, {"pingpong": 1, "block_m": 128, "block_n": 128, "cluster": 2}),
    (6, 64, 40, 576, 512, None),
    (3, 320, 200, 2048, 1024, {"block_m": 256, "block_n": 64, "cluster": 1}),  # two m64 waves per warpgroup
    (4, 1024, 900, 7168, 2048, {"block_m": 128, "block_n": 128}),  # the masked default of 1 x 1024 at this N, K
    (3, 256, 100, 1000, 2320, {"block_m": 128, "block_n": 256}),  # column waves, partial N and K blocks
    (4, 384, 200, 7168, 2048, {"evict_first": 1, "epilogue_per_wg": 0}),  # features the old gates kept off
]

# FP32 output and accumulation (D += A.B^T through the TMA store's reduce-add): (shape, accumulate, forced config).
# Partial M/N tiles and a K tail; a 256-row multicast tile; decode split-K (rank 0 reduce-adds); a 64-row tile.
FP32_OUT_CASES = [
    ((129, 136, 1280), False, None),
    ((4096, 7168, 2048), False, None),
    ((300, 1000, 2320), True, {"block_m": 128, "block_n": 40}),
    ((1000, 2048, 1536), True, {"block_m": 256, "block_n": 64, "cluster": 2}),
    ((1, 7168, 16384), True, {"block_n": 128, "k_splits": 2}),
    ((64, 2112, 7168), True, None),
    ((3, 1000, 2320), True, None),  # a decode tile loading 8 rows of A, a K tail, accumulated
    ((80, 2112, 7168), True, None),  # a 128-row decode tile loading 80 rows of A (2 K splits), accumulated
]

# e5m2 inputs (A, B each e4m3 or e5m2): (shape, A dtype, B dtype). Prefill multicast, two-set small M, decode split-K.
E5M2_CASES = [
    ((4096, 7168, 2048), "e5m2", "e5m2"),
    ((129, 136, 1280), "e4m3", "e5m2"),
    ((1, 7168, 16384), "e5m2", "e4m3"),
]

# Scale recipes constant along K (whole-K wgmma accumulation, scaled in the epilogue): (shape, recipe, out dtype,
# forced config). Partial M/N tiles with a K tail; prefill multicast; two m64 waves per warpgroup; decode split-K;
# fp32 out accumulated; a 64-row tile.
RECIPE_CASES = [
    ((129, 136, 1296), "tensor", "bf16", None),
    ((129, 136, 1296), "channel", "bf16", None),
    ((4096, 7168, 2048), "tensor", "bf16", None),
    ((4096, 7168, 2048), "channel", "bf16", None),
    ((1000, 2048, 1536), "channel", "bf16", {"block_m": 256, "block_n": 128, "cluster": 2}),
    ((1, 7168, 16384), "channel", "bf16", {"block_n": 128, "k_splits": 2}),
    ((300, 1000, 2320), "tensor", "fp32", {"block_m": 128, "block_n": 40}),
    ((64, 2112, 7168), "channel", "bf16", None),
    ((80, 2112, 7168), "tensor", "bf16", None),  # a 128-row decode tile loading 80 rows of A
    ((100, 4096, 7168), "channel", "bf16", None),  # the same with 104 rows, the per-row scale clamped past M
    # the ping-pong consumer: the prefill tile; a partial last M block and multicast over 448 tiles (odd counts per
    # CTA, so one warpgroup runs one tile more); 64-row tiles of fp32 accumulated with a K tail on a 13-CTA grid
    ((4096, 7168, 2048), "tensor", "bf16", {"pingpong": 1, "block_m": 128, "block_n": 128}),
    ((1000, 7168, 1536), "channel", "bf16", {"pingpong": 1, "block_m": 128, "block_n": 128, "cluster": 2}),
    ((300, 1000, 2320), "tensor", "fp32", {"pingpong": 1, "block_m": 64, "block_n": 40, "num_sms": 13}),
    # B multicast to an M-neighbour: the prefill tile; an odd M-block count (per-row scales clamped past M)
    ((4096, 7168, 2048), "tensor", "bf16", {"cluster": 2, "multicast_b": 1, "block_m": 128, "block_n": 256}),
    ((300, 1000, 2320), "channel", "bf16", {"cluster": 2, "multicast_b": 1, "block_m": 128, "block_n": 128}),
]

# BF16 inputs (no scales, whole-K accumulation, 64-wide k-blocks): (shape, out dtype, accumulate, forced config).
# A K tail (K % 64 = 8); partial M/N tiles; prefill multicast; two m64 waves; decode split-K; fp32 accumulated.
BF16_CASES = [
    ((129, 136, 1096), "bf16", False, None),
    ((4096, 7168, 2048), "bf16", False, None),
    ((1000, 2048, 1536), "bf16", False, {"block_m": 256, "block_n": 128, "cluster": 2}),
    ((1, 7168, 16384), "bf16", False, {"block_n": 128, "k_splits": 2}),
    ((300, 1000, 2320), "fp32", True, {"block_m": 128, "block_n": 40}),
    ((64, 2112, 7168), "bf16", False, None),
    ((65, 2112, 7168), "bf16", False, None),  # 128-row decode tiles loading 72 / 104 rows of A
    ((100, 4096, 7168), "fp32", True, None),
    # the ping-pong consumer, as RECIPE_CASES runs it (a K tail of 8 on the multicast case)
    ((4096, 7168, 2048), "bf16", False, {"pingpong": 1, "block_m": 128, "block_n": 128}),
    ((1000, 7168, 1096), "bf16", False, {"pingpong": 1, "block_m": 128, "block_n": 128, "cluster": 2}),
    ((300, 1000, 2320), "fp32", True, {"pingpong": 1, "block_m": 64, "block_n": 40, "num_sms": 13}),
    # B multicast to an M-neighbour: the prefill tile; with ping-pong; accumulated over an odd M-block count (the
    # tile past M reduce-adds nothing: TMA clips its box)
    ((4096, 7168, 2048), "bf16", False, {"cluster": 2, "multicast_b": 1, "block_m": 128, "block_n": 256}),
    ((1000, 7168, 1096), "bf16", False, {"pingpong": 1, "cluster": 2, "multicast_b": 1, "block_m": 128,
                                         "block_n": 128}),
    ((300, 1000, 2320), "fp32", True, {"pingpong": 1, "cluster": 2, "multicast_b": 1, "block_m": 64, "block_n": 40,
                                       "num_sms": 12}),
]

# BF16 MoE grouped GEMMs, contiguous layout: (groups, expected rows per group, N, K, forced config), as
# GROUPED_CONTIGUOUS_CASES (the GPU tests draw group sizes the same way: one empty, one single-row, one 2x expected).
# The prefill target (multicast, 128x256 tiles); 64-row tiles; a K tail (2328 % 64 = 24) with a partial N tile and
# no multicast; many small groups.
# bf16 inputs, masked layout: (groups, M_max, expected rows per group, N, K, forced config): the default at 256
# expected rows (the spread model's 128x176), the default 64-row tile at decode sizes (64x40), and 128x96 forced
# with a partial last k-block (K 1000 is not a multiple of 64).
BF16_MASKED_CASES = [
    (4, 384, 256, 4096, 2048, None),
    (5, 64, 24, 1000, 1280, None),
    (3, 256, 160, 576, 1000, {"block_m": 128, "block_n": 96, "cluster": 1}),
    (3, 200, 150, 1024, 512, {"block_m": 128}),  # M_max not a multiple of block_m: a group's last tile ends mid-tile
    (3, 200, 150, 1024, 512, {"block_m": 128, "pingpong": 1, "num_sms": 5}),  # ping-pong, rows stored from registers
]

BF16_GROUPED_CASES = [
    (4, 1024, 4096, 7168, None),
    (3, 200, 576, 1280, {"block_m": 64}),
    (5, 150, 1000, 2328, {"block_n": 112, "cluster": 1}),
    (8, 96, 7168, 2048, None),
    (4, 1024, 4096, 7168, {"pingpong": 1, "block_m": 128, "block_n": 128}),  # ping-pong at the prefill size
    (5, 150, 1000, 2328, {"pingpong": 1, "block_m": 64, "block_n": 112, "cluster": 1, "num_sms": 10}),
]

# The weight-gradient GEMM (scale recipe 1x128/1x128, fp32 out, dW += dY^T X): for each dense layer (N_out, K_in) of
# NK_PAIRS, dW is [N_out, K_in] and K is the token count: M = N_out, N = K_in, K in (4096, 8192). Selection targets.
WGRAD_TARGETS = [(n, k, tokens) for n, k in NK_PAIRS for tokens in (4096, 8192)]
# Kernels the CPU compile matrix and the GPU tests build: (shape, accumulate, forced config, (A dtype, B dtype)).
# Partial M and N tiles (1000 = 6 x 152 + 88 columns: the last tile's SB gather threads past N copy nothing) with a
# K that is a multiple of 128; a K tail (2320 % 128 = 16, handled as the dense kernel does) on a narrow tile; the
# large selection target (multicast, 4 stages); a 2-CTA multicast cluster forced on 128x128 with e5m2 B; two
# accumulator sets on a 64-row tile (one math warpgroup); a 256-row tile (two m64 waves per warpgroup read one slot
# of B scales, released after the second wave) with e5m2 A.
WGRAD_CASES = [
    ((300, 1000, 2304), False, {"block_n": 152}, ("e4m3", "e4m3")),
    ((300, 1000, 2320), True, {"block_m": 128, "block_n": 40}, ("e4m3", "e4m3")),
    ((4096, 7168, 4096), True, None, ("e4m3", "e4m3")),
    ((1024, 2048, 4096), True, {"block_m": 128, "block_n": 128, "cluster": 2}, ("e4m3", "e5m2")),
    # B multicast to an M-neighbour (column scales per CTA): even, and odd M blocks (a tile past M, not stored)
    ((1024, 2048, 4096), True, {"block_m": 128, "block_n": 128, "cluster": 2, "multicast_b": 1}, ("e4m3", "e4m3")),
    ((300, 1000, 2320), True, {"block_m": 128, "block_n": 40, "cluster": 2, "multicast_b": 1}, ("e4m3", "e4m3")),
    ((576, 7168, 4096), False, {"block_m": 64, "block_n": 112, "acc_sets": 2}, ("e4m3", "e4m3")),
    ((512, 1536, 4096), True, {"block_m": 256, "block_n": 64, "cluster": 1}, ("e5m2", "e4m3")),
    # small M streams one M block: a 64-row tile loading 8 rows of A (whole k-blocks, then a K tail), and a 128-row
    # tile
    ((5, 1000, 2304), True, None, ("e4m3", "e4m3")),
    ((5, 1000, 2320), True, None, ("e4m3", "e4m3")),
    ((100, 2048, 4096), False, None, ("e4m3", "e4m3")),
    # features the old gates kept off for this recipe: a shifted last A box with SA gathered, a per-warpgroup fp32
    # epilogue with a balanced grid
    ((1000, 2048, 2048), True, {"block_m": 128, "block_n": 128, "a_shift": 1, "sa_gather": 1}, ("e4m3", "e4m3")),
    ((2304, 2048, 2048), False, {"block_m": 128, "block_n": 128, "epilogue_per_wg": 1, "balanced": 1},
     ("e4m3", "e4m3")),
    # ping-pong pinned: 64-row tiles per math warpgroup (column scales at the issue), a multicast pair, partial tiles
    ((1000, 2048, 4096), True, {"pingpong": 1, "block_m": 64, "block_n": 128, "cluster": 2}, ("e4m3", "e4m3")),
]

# k-grouped weight gradients (groups concatenated along K, D [G, M, N] fp32): (groups, M, N, expected K per group,
# accumulate, forced config). The default selection at a TARGETS case; a partial N tile, overwriting; two m64 waves
# per warpgroup (with the per-warpgroup epilogue it was built with: without it ptxas places one of the 8 early
# column-scale loads after the wgmma wait, bench/NOTES.md v0.42); a multicast pair. The GPU tests give the groups
# unequal sizes, one of them 0.
K_GROUPED_CASES = [
    (4, 2048, 7168, 4096, True, None),
    (3, 256, 1000, 1024, False, {"block_m": 128, "block_n": 40}),
    (2, 512, 1536, 2048, True, {"block_m": 256, "block_n": 64, "cluster": 1, "epilogue_per_wg": 1}),
    (4, 1024, 2048, 2048, True, {"block_m": 128, "block_n": 128, "cluster": 2}),
    (3, 256, 1000, 1024, True, {"pingpong": 1, "block_m": 64, "block_n": 128, "num_sms": 8}),  # ping-pong, a 0 group
]

# An fp32 D from FP8 inputs has no bf16 rounding to hide the tensor core's error: FP8 wgmma accumulates with about
# 14 bits of precision (DeepSeek-V3 technical report, arXiv 2412.19437, section 3.3.2), so even inside one promoted
# 128-wide K block an element's error reaches ~2^-11 of the output's largest magnitude. Measured: one element in
# 786k at 1.0005x a 2^-11 bound (k-grouped wgrad, a group of K = 128; bench/NOTES.md v0.19). The tests allow
# 2^-10 of that magnitude (plus one fp32 rounding of the sum): a wrong scale, block or row is off by O(1) of it.
FP8_FP32_OUT_REL = 2**-10
