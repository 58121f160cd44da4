"""The GEMM calls as torch custom ops: `torch.ops.gemmgen.fp8_gemm_nt`, `.m_grouped_fp8_gemm_nt_contiguous`,
`.m_grouped_fp8_gemm_nt_masked` (registered with torch.library when gemmgen's torch API is first used, or by
`import gemmgen.ops`).

They write into `out` (declared mutated, as the Python calls do) and return nothing; their fake implementations
return nothing either, so `torch.compile(fullgraph=True)` traces a model calling them without a graph break.
"""

from __future__ import annotations

import torch
from torch.library import custom_op


@custom_op("gemmgen::fp8_gemm_nt", mutates_args=("out",))
def fp8_gemm_nt(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor, out: torch.Tensor) -> None:
    """out = (a * sa) @ (b * sb)^T: gemmgen.fp8_gemm_nt as an op."""
    from . import api

    api.fp8_gemm_nt((a, sa), (b, sb), out)


@fp8_gemm_nt.register_fake
def _fp8_gemm_nt_fake(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor,
                      out: torch.Tensor) -> None:
    return None


@custom_op("gemmgen::m_grouped_fp8_gemm_nt_contiguous", mutates_args=("out",))
def m_grouped_fp8_gemm_nt_contiguous(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor,
                                     out: torch.Tensor, m_indices: torch.Tensor) -> None:
    """gemmgen.m_grouped_fp8_gemm_nt_contiguous as an op."""
    from . import api

    api.m_grouped_fp8_gemm_nt_contiguous((a, sa), (b, sb), out, m_indices)


@m_grouped_fp8_gemm_nt_contiguous.register_fake
def _contiguous_fake(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor, out: torch.Tensor,
                     m_indices: torch.Tensor) -> None:
    return None


@custom_op("gemmgen::m_grouped_fp8_gemm_nt_masked", mutates_args=("out",))
def m_grouped_fp8_gemm_nt_masked(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor,
                                 out: torch.Tensor, masked_m: torch.Tensor, expected_m: int) -> None:
    """gemmgen.m_grouped_fp8_gemm_nt_masked as an op."""
    from . import api

    api.m_grouped_fp8_gemm_nt_masked((a, sa), (b, sb), out, masked_m, expected_m)


@m_grouped_fp8_gemm_nt_masked.register_fake
def _masked_fake(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor, out: torch.Tensor,
                 masked_m: torch.Tensor, expected_m: int) -> None:
    return None
