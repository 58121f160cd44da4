"""select_l2_hint: decide whether the weights' TMA loads carry an L2 evict_first policy (GemmConfig.evict_first).

Reads: the problem kind, M and block_n. Decides: evict_first. Runs after select_config.
Every HBM read lands in L2 (50 MB on H100/H200) and replaces a line there; where that line is dirty (the output of
the kernel before, or the benchmark's 256 MB zeroed flush buffer) it is written back first, and the write-back
shares HBM with the read stream. A decode GEMM reads each weight byte once, or a second time from L2 by the second
64-row M block of a 65..128-row problem while it is still there: loaded evict_first (PTX ISA createpolicy, the
.L2::cache_hint operand of cp.async.bulk.tensor), those lines are the first replaced, so the stream cycles through
a part of L2 and leaves the rest (and its dirty lines) alone.
Measured against the default policy, the L2 flushed by zeroing 256 MB before each call (bench/ab_configs.py, 7
rotated rounds, bench/results/2026-12-01-5337011-evict-first; the final kernels: -dc515f0-final): M = 1 / 8 x 7168
x 16384 x1.117-1.119, 8 x 24576 x 1536 x1.134, 1 / 8 x 4096 x 7168 x1.058-1.061, 32 x 4096 x 7168 x1.125, 8 x 10240
x 7168 x1.134, 8 x 32768 x 512 x1.048, 32 x 24576 x 1536 x1.054, 1 x 2112 x 7168 x1.031, 32 / 64 x 7168 x 2048
x1.025-1.028, 128 x 4096 x 7168 x1.031, 8 x 576 x 7168 x1.002; prefill 4096 x 7168 x 2048 x0.976 (32 M blocks read
every weight tile: its lines must stay). So dense problems up to HINT_MAX_M rows; the masked layout measured
x0.967-1.066 (three cases) and grouped kinds keep the default.
Most of that gain is the flush's dirty lines: with L2 full of clean lines (a 256 MB read instead) it is level
(x0.977-1.010), and in a chain of GEMMs over distinct weights without a flush x0.979-1.053
(bench/l2_state_probe.py, bench/results/2026-12-01-421e14d-l2-state). In a model it saves the write-back of whatever
dirty lines the previous kernels left.
From 129 rows several M blocks re-read each weight tile from L2. Measured the same way (ab_configs, 5 rounds, outputs
bitwise equal; bench/results/2026-12-01-0533bfc-final/ab_evict_first_prefill.json and
-0533bfc-evict-first-prefill): up to 512 rows on tiles >= 96 wide
x1.012-1.065 at 11 of 11 shapes (160 / 256 / 384 / 512 x 4096 x 7168, 200 / 256 / 384 / 512 x 7168 x 2048, 256 / 512 x
7168 x 16384, 256 x 24576 x 1536); on 64-wide tiles (N = 2112) lost, 256 / 512 x 2112 x 7168 x0.915 / x0.965 (why
is not established: the same 4 M blocks read each tile as at 1024 x 2112 x 7168, 256x64, x1.017); from 768 rows
mixed, x0.976-1.026 (768 / 1024 x 4096 x 7168 x1.011 / x1.026, 1024 x 2112 x 7168 x1.017, 768 x 7168 x 16384
x0.997, 1024 / 2048 x 7168 x 2048 x0.983 / x0.976). So also HINT_MAX_M..HINT_WIDE_MAX_M rows on tiles of at least
HINT_WIDE_MIN_BLOCK_N columns, for the kind measured (e4m3 with the block recipe into bf16).
"""

from __future__ import annotations

from ..ir import GemmKind, Kernel, Target

HINT_MAX_M = 128  # every tile: decode, the weights read once (or twice, the second time from L2)
HINT_WIDE_MAX_M = 512  # and on tiles of >= HINT_WIDE_MIN_BLOCK_N columns up to here (x1.012-1.065 measured)
HINT_WIDE_MIN_BLOCK_N = 96
HINT_KINDS = (GemmKind.NORMAL,)


def weights_stream(kernel: Kernel) -> bool:
    """Up to HINT_MAX_M rows any dense problem; up to HINT_WIDE_MAX_M the kind measured there (e4m3, the block
    recipe, into bf16) on unswapped tiles of >= HINT_WIDE_MIN_BLOCK_N columns (a swapped tile's block_n is <= 32)."""
    p, cfg = kernel.problem, kernel.config
    if p.kind not in HINT_KINDS:
        return False
    wide = p.e4m3_block_into_bf16 and cfg is not None and (cfg.block_n or 0) >= HINT_WIDE_MIN_BLOCK_N
    return p.m <= HINT_MAX_M or (p.m <= HINT_WIDE_MAX_M and wide)


def run(kernel: Kernel, target: Target) -> Kernel:
    cfg = kernel.config
    assert cfg is not None and cfg.block_m is not None, "select_l2_hint runs after select_config"
    if cfg.evict_first is not None:
        why = "weights loaded L2 evict_first" if cfg.evict_first else "weights loaded with the default L2 policy"
        return kernel.because("select_l2_hint", why + " (forced)")
    if weights_stream(kernel):
        return kernel.replace(config=cfg.decide(evict_first=1)).because(
            "select_l2_hint", _reason(kernel))
    return kernel.replace(config=cfg.decide(evict_first=0))


def _reason(kernel: Kernel) -> str:
    m = kernel.problem.m
    if m <= HINT_MAX_M:
        return (f"weights loaded L2 evict_first: M = {m} <= {HINT_MAX_M} rows read them once (or twice, the second "
                "time from L2), so their lines replace each other rather than L2's other (and dirty) lines; "
                "x1.00-1.13 measured on decode shapes")
    return (f"weights loaded L2 evict_first: M = {m} <= {HINT_WIDE_MAX_M} rows on tiles >= {HINT_WIDE_MIN_BLOCK_N} "
            "wide, few M blocks re-reading each weight tile; x1.012-1.065 measured at 11 such shapes (64-wide tiles "
            "lost)")
