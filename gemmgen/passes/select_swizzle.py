"""select_swizzle: decide the TMA/wgmma swizzle of the A/B tiles and of the staged D tile.

Reads: block_n, block_k. Decides: swizzle_ab, swizzle_d. Runs after select_config.
A/B: the widest swizzle that holds one K-major stage row (block_k bytes of e4m3): a TMA box's inner extent may
not exceed the swizzle span (cuTensorMapEncodeTiled), and the widest swizzle gives bank-conflict-free wgmma reads.
With block_k = 128 that is the 128-byte swizzle; the tensor maps and the wgmma descriptors (SWIZZLE_AB) read it.
D: the widest of 128/64/32-byte swizzles that divides a D row of block_n bf16; the epilogue then stores
bf16 pairs with no bank conflicts and TMA writes block_n / (swizzle / 2) column boxes. 0 = unswizzled.
"""

from __future__ import annotations

from ..ir import Kernel, Target
from ..legality import d_tile_cols


def d_swizzle_for(block_n: int, out_bytes: int = 2) -> int:
    row_bytes = block_n * out_bytes
    return next((s for s in (128, 64, 32) if row_bytes % s == 0), 0)


def ab_swizzle_for(block_k: int, elem_bytes: int = 1) -> int:
    row_bytes = block_k * elem_bytes
    return next((s for s in (128, 64, 32) if row_bytes % s == 0 and row_bytes <= s), 0)


def run(kernel: Kernel, target: Target) -> Kernel:
    cfg = kernel.config
    assert cfg is not None and cfg.block_n is not None and cfg.block_k is not None, \
        "select_swizzle runs after select_config"
    out = kernel.problem.out_dtype
    ab_bytes = kernel.problem.a_dtype.bytes
    d_cols = d_tile_cols(cfg.block_n, kernel.problem.swiglu)  # SwiGLU stores half the tile's columns
    # A and B swapped: the D tile is staged transposed (token rows of block_m weights) and stored unswizzled
    decided = cfg.decide(swizzle_ab=ab_swizzle_for(cfg.block_k, ab_bytes),
                         swizzle_d=0 if cfg.swap_ab else d_swizzle_for(d_cols, out.bytes))
    d_why = ("none: the transposed tile (A and B swapped) is stored unswizzled" if cfg.swap_ab else
             f"{decided.swizzle_d or 'none'}: the widest that divides a {d_cols * out.bytes}-byte {out.value} row")
    why = (f"A/B {decided.swizzle_ab} B: the widest swizzle holding a {cfg.block_k * ab_bytes}-byte K-major row; D "
           + d_why)
    return kernel.replace(config=decided).because("select_swizzle", why)
