"""gemmgen: a generator of Hopper (sm_90a) FP8 block-scaled GEMM kernels, dense and MoE grouped.

    import gemmgen
    a, sa = gemmgen.per_token_cast_to_fp8(x)        # x [M, K]
    b, sb = gemmgen.per_block_cast_to_fp8(w)        # w [N, K]
    gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)      # out [M, N] bf16 = x @ w.T
"""

__version__ = "0.1.0"

from .api import (  # noqa: E402
    fp8_gemm_nt,
    get_kernel,
    m_grouped_fp8_gemm_nt_contiguous,
    m_grouped_fp8_gemm_nt_masked,
)
from .errors import CompileError, GemmgenError, IllegalConfigError, NoGpuError  # noqa: E402
from .ir import H100_SXM, H200_SXM, GemmConfig, GemmKind, GemmProblem, Target  # noqa: E402
from .layout import ContiguousLayout, contiguous_layout, get_m_alignment_for_contiguous_layout  # noqa: E402
from .legality import check, smem_bytes  # noqa: E402
from .quant import calc_diff, per_block_cast_to_fp8, per_token_cast_to_fp8, tma_aligned_scales  # noqa: E402
from .stages import BuiltKernel, build, export  # noqa: E402

__all__ = [
    "BuiltKernel", "CompileError", "ContiguousLayout", "GemmConfig", "GemmKind", "GemmProblem", "GemmgenError",
    "H100_SXM", "H200_SXM", "IllegalConfigError", "NoGpuError", "Target", "build", "calc_diff", "check",
    "contiguous_layout", "export", "fp8_gemm_nt", "get_kernel", "get_m_alignment_for_contiguous_layout",
    "m_grouped_fp8_gemm_nt_contiguous", "m_grouped_fp8_gemm_nt_masked", "per_block_cast_to_fp8",
    "per_token_cast_to_fp8", "smem_bytes", "tma_aligned_scales",
]
