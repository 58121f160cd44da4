"""The shape sets every test and benchmark draws from (one place, so they stay in step)."""

from __future__ import annotations

# (N, K) pairs of the DeepSeek-V3 dense GEMMs (DeepGEMM's test set), and the M values to cross them with.
NK_PAIRS = [(2112, 7168), (576, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]
M_VALUES = [1, 64, 128, 4096]
# Edge cases: tiny, partial M/N tiles, N not a multiple of 16, K not a multiple of 128, large square.
EXTRA_SHAPES = [(7, 24, 16), (129, 136, 1280), (4097, 4104, 7296), (6144, 6144, 1280), (8192, 8192, 8192)]

GPU_SHAPES = [(m, n, k) for m in M_VALUES for n, k in NK_PAIRS] + EXTRA_SHAPES

# The NVRTC compile matrix (CPU): every distinct kernel the GPU set builds.
COMPILE_SHAPES = GPU_SHAPES

# Benchmark rows: ../shared/TARGETS.md's dense table.
BENCH_SHAPES = [(m, n, k) for m in (64, 128, 4096) for n, k in
                [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]]
BENCH_SHAPES.append((8192, 8192, 8192))
