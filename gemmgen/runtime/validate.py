"""Input checks for the public GEMM call: every error names the argument, what was expected and what was given."""

from __future__ import annotations

import torch

from ..ir import ceil_div
from . import driver

TMA_ADDRESS_ALIGN = 16  # bytes (CUDA driver API, cuTensorMapEncodeTiled: globalAddress alignment)


def tensor(x: object, name: str, dtype: torch.dtype, shape: tuple[int, ...] | None = None,
           ndim: int = 2) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.dtype != dtype:
        raise TypeError(f"{name}: expected dtype {dtype}, got {x.dtype}")
    if x.dim() != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D tensor, got shape {tuple(x.shape)}")
    if shape is not None and tuple(x.shape) != shape:
        raise ValueError(f"{name}: expected shape {shape}, got {tuple(x.shape)}")
    return x


def cuda_row_major(x: torch.Tensor, name: str, device: torch.device) -> None:
    if x.device != device:
        raise ValueError(f"{name}: expected a tensor on {device} (where a is), got {x.device}")
    if not x.is_contiguous():
        raise ValueError(f"{name}: expected a contiguous row-major tensor, got strides {x.stride()}")
    if x.data_ptr() % TMA_ADDRESS_ALIGN:
        raise ValueError(f"{name}: TMA needs a {TMA_ADDRESS_ALIGN}-byte aligned data pointer, got "
                         f"0x{x.data_ptr():x} (storage offset {x.storage_offset()})")


def gemm_operands(pair: object, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise TypeError(f"{name}: expected a (fp8 tensor, fp32 scales) pair, got {type(pair).__name__}")
    return pair[0], pair[1]


def check_gemm(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor, out: torch.Tensor) -> None:
    """Validate fp8_gemm_nt's arguments (see its docstring for the contract)."""
    tensor(a, "a", torch.float8_e4m3fn)
    m, k = a.shape
    tensor(b, "b", torch.float8_e4m3fn)
    n = b.shape[0]
    if b.shape[1] != k:
        raise ValueError(f"b: expected shape (N, {k}) to match a's K={k}, got {tuple(b.shape)}")
    if k % 16 or k == 0:
        raise ValueError(f"a: K must be a positive multiple of 16 (TMA 16-byte row strides), got K={k}")
    if n % 8 or n == 0:
        raise ValueError(f"b: N must be a positive multiple of 8 (TMA 16-byte rows of bf16 out), got N={n}")
    tensor(out, "out", torch.bfloat16, (m, n))
    tensor(sa, "sa", torch.float32, (m, ceil_div(k, 128)))
    tensor(sb, "sb", torch.float32, (ceil_div(n, 128), ceil_div(k, 128)))
    driver.require_gpu()  # before device checks: on a machine with no GPU, say so rather than "not CUDA"
    if a.device.type != "cuda":
        raise ValueError(f"a: expected a CUDA tensor, got device {a.device}")
    for x, name in ((a, "a"), (b, "b"), (out, "out")):
        cuda_row_major(x, name, a.device)
    for x, name in ((sa, "sa"), (sb, "sb")):
        if x.device != a.device:
            raise ValueError(f"{name}: expected a tensor on {a.device} (where a is), got {x.device}")
    if not sb.is_contiguous():
        raise ValueError(f"sb: expected a contiguous row-major tensor, got strides {sb.stride()}")

