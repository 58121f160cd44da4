"""gemmgen: a generator of Hopper (sm_90a) FP8 block-scaled GEMM kernels.

    import gemmgen
    a, sa = gemmgen.per_token_cast_to_fp8(x)        # x [M, K]
    b, sb = gemmgen.per_block_cast_to_fp8(w)        # w [N, K]
    gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)      # out [M, N] bf16 = x @ w.T
"""

__version__ = "0.1.0"

from .api import fp8_gemm_nt, get_kernel  # noqa: E402
from .errors import CompileError, GemmgenError, IllegalConfigError, NoGpuError  # noqa: E402
from .ir import H100_SXM, H200_SXM, GemmConfig, GemmProblem, Target  # noqa: E402
from .legality import check, smem_bytes  # noqa: E402
from .quant import calc_diff, per_block_cast_to_fp8, per_token_cast_to_fp8, tma_aligned_scales  # noqa: E402
from .stages import BuiltKernel, build, export  # noqa: E402

__all__ = [
    "BuiltKernel", "CompileError", "GemmConfig", "GemmProblem", "GemmgenError", "H100_SXM", "H200_SXM",
    "IllegalConfigError", "NoGpuError", "Target", "build", "calc_diff", "check", "export", "fp8_gemm_nt",
    "get_kernel", "per_block_cast_to_fp8", "per_token_cast_to_fp8", "smem_bytes", "tma_aligned_scales",
]
