"""DeepGEMM's names for gemmgen's calls, so porting is one import: `import gemmgen.compat as deep_gemm`.

The semantics are gemmgen's (docs/API.md): the same tensor layouts as DeepGEMM's FP8 1x128/128x128 calls, `m_indices`
with -1 for padding rows, `masked_m` on the GPU; padding rows and rows past masked_m are left untouched.
"""

from __future__ import annotations

import torch

from .api import (
    fp8_gemm_nt,
    fp8_gemm_nt_wgrad,
    get_num_sms,
    m_grouped_fp8_gemm_nt_contiguous,
    m_grouped_fp8_gemm_nt_masked,
    set_num_sms,
)
from .ir import ceil_div
from .layout import get_m_alignment_for_contiguous_layout
from .quant import calc_diff, tma_aligned_scales

Operand = tuple[torch.Tensor, torch.Tensor]


def gemm_fp8_fp8_bf16_nt(lhs: Operand, rhs: Operand, out: torch.Tensor) -> None:
    """DeepGEMM's dense call: out = (lhs * lhs_scales) @ (rhs * rhs_scales)^T."""
    fp8_gemm_nt(lhs, rhs, out)


def wgrad_gemm_fp8_fp8_fp32_nt(lhs: Operand, rhs: Operand, out: torch.Tensor) -> None:
    """DeepGEMM's weight-gradient call (1x128 scales on both operands): out (fp32) += (lhs * sa) @ (rhs * sb)^T."""
    fp8_gemm_nt_wgrad(lhs, rhs, out, accumulate=True)


def k_grouped_wgrad_gemm_fp8_fp8_fp32_nt(lhs: Operand, rhs: Operand, out: torch.Tensor,
                                         batch_sizes: list[int]) -> None:
    """DeepGEMM's k-grouped weight gradient, in its layout: for each group g of K = batch_sizes[g], out[g] (fp32) +=
    (A_g * SA_g) @ (B_g * SB_g)^T, where lhs = (every group's [M, k_g] A chunk flattened one after another, SA
    [sum ceil(k_g/128), M]) and rhs likewise with N. Each group's chunk and scale rows are read in place (views, no
    copy) by one weight-gradient kernel per non-empty group, as DeepGEMM's own call launches one per group; a group
    with K = 0 adds nothing. For one launch over all groups, concatenate along K and call
    `gemmgen.k_grouped_fp8_gemm_nt_wgrad`."""
    if not isinstance(out, torch.Tensor) or out.dim() != 3:
        got = f"shape {list(out.shape)}" if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"out: expected a [G, M, N] float32 tensor, got {got}")
    groups, m, n = out.shape
    if not isinstance(batch_sizes, (list, tuple)) or len(batch_sizes) != groups \
            or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in batch_sizes):
        raise ValueError(f"batch_sizes: expected {groups} non-negative ints (one K per group of out), "
                         f"got {batch_sizes!r}")
    total, blocks = sum(batch_sizes), sum(ceil_div(k, 128) for k in batch_sizes)
    views = []
    for name, (x, sx), rows in (("lhs", lhs, m), ("rhs", rhs, n)):
        if not isinstance(x, torch.Tensor) or not isinstance(sx, torch.Tensor):
            raise TypeError(f"{name}: expected a (tensor, scales) pair")
        if x.numel() != rows * total:
            raise ValueError(f"{name}: expected {rows} x sum(batch_sizes) = {rows * total} elements (the groups' "
                             f"[{rows}, k_g] chunks one after another), got {x.numel()}")
        if tuple(sx.shape) != (blocks, rows):
            raise ValueError(f"{name}[1]: expected scales [sum ceil(k_g/128), {'M' if name == 'lhs' else 'N'}] = "
                             f"[{blocks}, {rows}], got {list(sx.shape)}")
        views.append((x.reshape(-1), sx))
    (a, sa), (b, sb) = views
    offset = block = 0
    for g, k in enumerate(batch_sizes):
        kb = ceil_div(k, 128)
        if k:  # chunk g: [rows, k] row-major at rows x offset; its scales' rows block..block+kb, read M/N-major
            fp8_gemm_nt_wgrad((a[m * offset:m * (offset + k)].view(m, k), sa[block:block + kb].t()),
                              (b[n * offset:n * (offset + k)].view(n, k), sb[block:block + kb].t()), out[g],
                              accumulate=True)
        offset, block = offset + k, block + kb


def m_grouped_gemm_fp8_fp8_bf16_nt_contiguous(lhs: Operand, rhs: Operand, out: torch.Tensor,
                                               m_indices: torch.Tensor) -> None:
    m_grouped_fp8_gemm_nt_contiguous(lhs, rhs, out, m_indices)


def m_grouped_gemm_fp8_fp8_bf16_nt_masked(lhs: Operand, rhs: Operand, out: torch.Tensor, masked_m: torch.Tensor,
                                           expected_m: int) -> None:
    m_grouped_fp8_gemm_nt_masked(lhs, rhs, out, masked_m, expected_m)


def get_col_major_tma_aligned_tensor(x: torch.Tensor) -> torch.Tensor:
    """Scales [(G,) M, K/128] stored M-major with the M stride rounded up to 4 (the layout the kernels read)."""
    return tma_aligned_scales(x)


__all__ = ["calc_diff", "gemm_fp8_fp8_bf16_nt", "get_col_major_tma_aligned_tensor",
           "get_m_alignment_for_contiguous_layout", "get_num_sms", "k_grouped_wgrad_gemm_fp8_fp8_fp32_nt",
           "m_grouped_gemm_fp8_fp8_bf16_nt_contiguous",
           "m_grouped_gemm_fp8_fp8_bf16_nt_masked", "set_num_sms", "wgrad_gemm_fp8_fp8_fp32_nt"]
