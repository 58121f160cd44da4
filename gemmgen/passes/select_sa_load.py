"""select_sa_load: decide how each stage's A scales reach the ring: by the TMA thread, or gathered by producer threads.

Reads: the problem's scale recipe and kind, block_m, block_n. Decides: sa_gather. Runs after select_config.
The TMA thread issues a stage's boxes one after another; a 64x32 tile's stage is small (A and B boxes of 4-8 KB),
and there a third box per stage (SA's, a_rows floats) is what the math warps wait for. Gathering SA with cp.async
from BLOCK_M / 4 other producer threads (the path any non-TMA SA layout takes) takes it off the TMA thread.
Measured, the same kernel with SA by TMA against SA gathered (bench/sa_gather_probe.py, interleaved, 7 rounds,
bitwise-equal outputs; bench/results/2026-12-01-e066b97-probes/sa_gather*.json):
- 64x32 tiles: 32x4096x7168 x1.081, 64x4096x7168 x1.072, 16x2112x7168 x1.029, 32x2112x7168 x1.022,
  64x2112x7168 x1.004;
- 64x64 and wider 64-row tiles: x0.978-1.005 (64x32768x512 x0.978);
- 128-row tiles: x0.894-0.991 (twice the gather threads and arrivals); prefill 256/128-row tiles x0.868-0.923.
So only the 64x32 block-recipe decode tiles of a dense problem gather (M <= 128, no cluster: a 64x32 prefill tile,
grouped layouts and the 1x128/1x128 recipe were not measured and keep TMA).
"""

from __future__ import annotations

from ..ir import GemmKind, Kernel, ScaleRecipe, Target

GATHER_TILE = (64, 32)  # (block_m, block_n) of the tiles that gather SA (measurements above)
GATHER_MAX_M = 128  # every measured gain was a decode tile (M <= 128, no cluster); a 64x32 prefill tile keeps TMA


def gathers_sa(kernel: Kernel) -> bool:
    p, c = kernel.problem, kernel.config
    assert c is not None
    return (p.scales is ScaleRecipe.A1x128_B128x128 and p.kind is GemmKind.NORMAL
            and (c.block_m, c.block_n) == GATHER_TILE and c.cluster == 1 and p.m <= GATHER_MAX_M
            and not c.swap_ab)  # a swapped 64x32 tile's SA box is the tokens' 32 scales: not what was measured


def run(kernel: Kernel, target: Target) -> Kernel:
    cfg = kernel.config
    assert cfg is not None and cfg.block_m is not None and cfg.block_n is not None, \
        "select_sa_load runs after select_config"
    if not kernel.problem.scales.promotes:
        return kernel.replace(config=cfg.decide(sa_gather=0))  # no per-stage A scales
    decided = cfg.decide(sa_gather=int(gathers_sa(kernel)))
    tile, threads = f"{cfg.block_m}x{cfg.block_n}", cfg.block_m // 4
    if cfg.sa_gather is not None:
        why = (f"SA gathered by {threads} producer threads every stage" if cfg.sa_gather else
               "SA by TMA where its layout allows (gathered otherwise)") + " (forced)"
    elif decided.sa_gather:
        why = (f"SA gathered by {threads} producer threads every stage: a {tile} decode stage is small and its SA box "
               "was what the math warps waited for (x1.00-1.08 measured)")
    else:
        why = (f"SA by TMA where its layout allows (gathered otherwise): only dense 1x128/128x128 {GATHER_TILE[0]}x"
               f"{GATHER_TILE[1]} decode tiles without a cluster gather (other tiles measured x0.87-1.005 gathering; "
               "grouped kinds and the other recipes were not measured)")
    return kernel.replace(config=decided).because("select_sa_load", why)
