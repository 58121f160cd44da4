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
from .layout import get_m_alignment_for_contiguous_layout
from .quant import calc_diff, tma_aligned_scales

Operand = tuple[torch.Tensor, torch.Tensor]


def gemm_fp8_fp8_bf16_nt(lhs: Operand, rhs: Operand, out: torch.Tensor) -> None:
    """DeepGEMM's dense call: out = (lhs * lhs_scales) @ (rhs * rhs_scales)^T."""
    fp8_gemm_nt(lhs, rhs, out)


def wgrad_gemm_fp8_fp8_fp32_nt(lhs: Operand, rhs: Operand, out: torch.Tensor) -> None:
    """DeepGEMM's weight-gradient call (1x128 scales on both operands): out (fp32) += (lhs * sa) @ (rhs * sb)^T."""
    fp8_gemm_nt_wgrad(lhs, rhs, out, accumulate=True)


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
           "get_m_alignment_for_contiguous_layout", "get_num_sms", "m_grouped_gemm_fp8_fp8_bf16_nt_contiguous",
           "m_grouped_gemm_fp8_fp8_bf16_nt_masked", "set_num_sms", "wgrad_gemm_fp8_fp8_fp32_nt"]
