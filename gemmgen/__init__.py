"""gemmgen: a generator of Hopper (sm_90a) FP8 block-scaled GEMM kernels, dense and MoE grouped.

    import gemmgen
    a, sa = gemmgen.per_token_cast_to_fp8(x)        # x [M, K]
    b, sb = gemmgen.per_block_cast_to_fp8(w)        # w [N, K]
    gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)      # out [M, N] bf16 = x @ w.T
    # weight gradient (1x128 scales on both): dw [N_out, K_in] fp32 += dy^T @ x, K = tokens
    gemmgen.fp8_gemm_nt_wgrad(gemmgen.per_token_cast_to_fp8(dy_t), gemmgen.per_token_cast_to_fp8(x_t), dw)

The names that need torch (the calls, the casts, the layout helper) are imported on first use, so building and
inspecting kernels (`gemmgen build`, `gemmgen.build`) never imports torch.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

__version__ = "0.2.0"

from .errors import CompileError, GemmgenError, IllegalConfigError, NoGpuError  # noqa: E402
from .ir import H100_SXM, H200_SXM, GemmConfig, GemmKind, GemmProblem, Target  # noqa: E402
from .legality import check, smem_bytes  # noqa: E402
from .stages import BuiltKernel, build, export  # noqa: E402
from .tuning.table import TableError, load_tuned  # noqa: E402

# name -> module, imported on first attribute access (PEP 562): these modules import torch.
_LAZY = {
    "fp8_gemm_nt": ".api", "bf16_gemm_nt": ".api", "fp8_gemm_nt_wgrad": ".api",
    "k_grouped_fp8_gemm_nt_wgrad": ".api", "get_kernel": ".api",
    "m_grouped_fp8_gemm_nt_contiguous": ".api", "m_grouped_fp8_gemm_nt_masked": ".api", "get_num_sms": ".api",
    "m_grouped_bf16_gemm_nt_contiguous": ".api",
    "m_grouped_bf16_gemm_nt_masked": ".api",
    "set_num_sms": ".api", "num_sms": ".api", "set_pdl": ".api", "pdl": ".api",
    "calc_diff": ".quant", "per_block_cast_to_fp8": ".quant", "per_token_cast_to_fp8": ".quant",
    "tma_aligned_scales": ".quant", "per_tensor_cast_to_fp8": ".quant", "per_channel_cast_to_fp8": ".quant",
    "empty_per_token_fp8": ".quant",
    "ContiguousLayout": ".layout", "contiguous_layout": ".layout", "get_m_alignment_for_contiguous_layout": ".layout",
    "precompile": ".warmup", "problems_for_m_range": ".warmup", "api": ".api", "compat": ".compat", "ops": ".ops",
    "moe": ".moe",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gemmgen' has no attribute {name!r}")
    try:
        loaded = importlib.import_module(module, __name__)
    except ModuleNotFoundError as exc:
        if exc.name != "torch":
            raise
        raise ImportError(f"gemmgen.{name} needs torch, which is not installed: pip install torch (a CPU-only build "
                          "for tests: pip install torch --index-url https://download.pytorch.org/whl/cpu); building "
                          "kernels (gemmgen build, gemmgen.build) does not") from exc
    value = loaded if module == f".{name}" else getattr(loaded, name)
    globals()[name] = value
    return value


# `import torch, gemmgen`: torch.ops.gemmgen.* exist at once (the CLI path never imports torch, so it skips this)
if sys.modules.get("torch") is not None:
    importlib.import_module(".ops", __name__)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "BuiltKernel", "CompileError",
    "bf16_gemm_nt", "k_grouped_fp8_gemm_nt_wgrad",
    "ContiguousLayout", "GemmConfig", "GemmKind", "GemmProblem", "GemmgenError",
    "H100_SXM", "H200_SXM", "IllegalConfigError", "NoGpuError", "TableError", "Target", "build", "calc_diff",
    "check",
    "contiguous_layout", "empty_per_token_fp8", "export", "fp8_gemm_nt", "fp8_gemm_nt_wgrad", "get_kernel",
    "get_m_alignment_for_contiguous_layout",
    "get_num_sms", "load_tuned", "m_grouped_bf16_gemm_nt_contiguous", "m_grouped_bf16_gemm_nt_masked",
    "m_grouped_fp8_gemm_nt_contiguous", "m_grouped_fp8_gemm_nt_masked", "num_sms",
    "pdl", "per_block_cast_to_fp8", "per_channel_cast_to_fp8", "per_tensor_cast_to_fp8", "per_token_cast_to_fp8",
    "precompile", "problems_for_m_range", "set_num_sms", "set_pdl",
    "smem_bytes",
    "tma_aligned_scales",
]
