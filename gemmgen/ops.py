"""The GEMM calls as torch custom ops: `torch.ops.gemmgen.fp8_gemm_nt`, `.bf16_gemm_nt`, `.fp8_gemm_nt_wgrad`,
`.m_grouped_fp8_gemm_nt_contiguous`, `.m_grouped_bf16_gemm_nt_contiguous`, `.m_grouped_fp8_gemm_nt_masked`,
`.m_grouped_bf16_gemm_nt_masked`
(registered with torch.library when gemmgen's torch API is first used, or by `import gemmgen.ops`).

They write into `out` (declared mutated, as the Python calls do) and return nothing; their fake implementations
return nothing either, so `torch.compile(fullgraph=True)` traces a model calling them without a graph break.
"""

from __future__ import annotations

import torch
from torch.library import custom_op


@custom_op("gemmgen::fp8_gemm_nt", mutates_args=("out",))
def fp8_gemm_nt(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor, out: torch.Tensor,
                recipe: str | None = None, accumulate: bool = False) -> None:
    """out (+)= (a * sa) @ (b * sb)^T: gemmgen.fp8_gemm_nt as an op (recipe None: inferred from the scale shapes)."""
    from . import api

    api.fp8_gemm_nt((a, sa), (b, sb), out, recipe=recipe, accumulate=accumulate)


@fp8_gemm_nt.register_fake
def _fp8_gemm_nt_fake(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor, out: torch.Tensor,
                      recipe: str | None = None, accumulate: bool = False) -> None:
    return None


@custom_op("gemmgen::bf16_gemm_nt", mutates_args=("out",))
def bf16_gemm_nt(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, accumulate: bool = False) -> None:
    """out (+)= a @ b^T: gemmgen.bf16_gemm_nt as an op."""
    from . import api

    api.bf16_gemm_nt(a, b, out, accumulate=accumulate)


@bf16_gemm_nt.register_fake
def _bf16_gemm_nt_fake(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, accumulate: bool = False) -> None:
    return None


@custom_op("gemmgen::fp8_gemm_nt_wgrad", mutates_args=("out",))
def fp8_gemm_nt_wgrad(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor, out: torch.Tensor,
                      accumulate: bool) -> None:
    """gemmgen.fp8_gemm_nt_wgrad as an op. `accumulate` has no default here: the Python call's is True (out +=), an
    op caller says which."""
    from . import api

    api.fp8_gemm_nt_wgrad((a, sa), (b, sb), out, accumulate=accumulate)


@fp8_gemm_nt_wgrad.register_fake
def _wgrad_fake(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor, out: torch.Tensor,
                accumulate: bool) -> None:
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


@custom_op("gemmgen::m_grouped_bf16_gemm_nt_contiguous", mutates_args=("out",))
def m_grouped_bf16_gemm_nt_contiguous(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor,
                                      m_indices: torch.Tensor) -> None:
    """gemmgen.m_grouped_bf16_gemm_nt_contiguous as an op."""
    from . import api

    api.m_grouped_bf16_gemm_nt_contiguous(a, b, out, m_indices)


@m_grouped_bf16_gemm_nt_contiguous.register_fake
def _bf16_contiguous_fake(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, m_indices: torch.Tensor) -> None:
    return None


@custom_op("gemmgen::m_grouped_bf16_gemm_nt_masked", mutates_args=("out",))
def m_grouped_bf16_gemm_nt_masked(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, masked_m: torch.Tensor,
                                  expected_m: int) -> None:
    """gemmgen.m_grouped_bf16_gemm_nt_masked as an op."""
    from . import api

    api.m_grouped_bf16_gemm_nt_masked(a, b, out, masked_m, expected_m)


@m_grouped_bf16_gemm_nt_masked.register_fake
def _bf16_masked_fake(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, masked_m: torch.Tensor,
                      expected_m: int) -> None:
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
