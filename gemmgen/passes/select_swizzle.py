"""select_swizzle: decide the TMA/wgmma swizzle of the A/B tiles and of the staged D tile.

Reads: block_n, block_k. Decides: swizzle_ab, swizzle_d. Runs after select_config.
A/B: a K-major e4m3 stage row is block_k = 128 bytes, so the 128-byte swizzle (bank-conflict-free wgmma reads).
D: the widest of 128/64/32-byte swizzles that divides a D row of block_n bf16; the epilogue then stores
bf16 pairs with no bank conflicts and TMA writes block_n / (swizzle / 2) column boxes. 0 = unswizzled.
"""

from __future__ import annotations

from ..ir import Kernel, Target


def d_swizzle_for(block_n: int) -> int:
    row_bytes = block_n * 2
    return next((s for s in (128, 64, 32) if row_bytes % s == 0), 0)


def run(kernel: Kernel, target: Target) -> Kernel:
    cfg = kernel.config
    assert cfg is not None and cfg.block_n is not None and cfg.block_k is not None, \
        "select_swizzle runs after select_config"
    return kernel.replace(config=cfg.decide(swizzle_ab=cfg.block_k, swizzle_d=d_swizzle_for(cfg.block_n)))
