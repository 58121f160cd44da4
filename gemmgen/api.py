"""The public Python API: `fp8_gemm_nt` on torch tensors, and `build` for ahead-of-time use."""

from __future__ import annotations

import threading
from typing import Any

import torch

from .ir import GemmConfig, GemmProblem, Target, preset
from .runtime import driver, validate
from .settings import Settings
from .stages import BuiltKernel, build, forced_fields

_KERNELS: dict[tuple[Any, ...], BuiltKernel] = {}
# Many M values share one kernel (M is a run-time argument): share its BuiltKernel, so its module loads once.
_BY_FOLDER: dict[Any, BuiltKernel] = {}
_LOCK = threading.Lock()
_TARGETS: dict[int, Target] = {}


def device_target(device_index: int) -> Target:
    """The H200/H100 preset with the SM count read from the device (a partial GPU gets its own grid)."""
    if device_index not in _TARGETS:
        base = preset("h200")
        sms = driver.device_sm_count(device_index)
        _TARGETS[device_index] = Target(base.name, base.arch, sms, base.smem_per_block, base.regs_per_sm,
                                        base.max_regs_per_thread, base.max_cluster)
    return _TARGETS[device_index]


def get_kernel(m: int, n: int, k: int, target: Target, config: dict[str, int] | None = None,
               settings: Settings | None = None) -> BuiltKernel:
    """The kernel for an (M, N, K) call: built once per process (the disk cache makes later processes fast)."""
    key = (m, n, k, target, tuple(sorted((config or {}).items())))
    hit = _KERNELS.get(key)
    if hit is None:
        with _LOCK:
            hit = _KERNELS.get(key)
            if hit is None:
                built = build(GemmProblem(m, n, k), config, target, settings=settings)
                hit = _BY_FOLDER.setdefault(built.folder, built)
                _KERNELS[key] = hit
    return hit


def fp8_gemm_nt(a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor], out: torch.Tensor,
                *, config: dict[str, int] | GemmConfig | None = None) -> torch.Tensor:
    """out[M, N] (bf16) = (A * SA) @ (B * SB)^T with FP8 block scaling, on a Hopper GPU; returns `out`.

    a = (A, SA): A [M, K] float8_e4m3fn row-major; SA [M, ceil(K/128)] float32, one scale per row per 128
        columns of K. The kernel reads SA column-major with the M stride rounded up to 4 (TMA needs 16-byte
        strides): `per_token_cast_to_fp8` returns that layout, and any other SA is converted with
        `tma_aligned_scales` (a small copy per call; convert once yourself to avoid it).
    b = (B, SB): B [N, K] float8_e4m3fn row-major (K-major); SB [ceil(N/128), ceil(K/128)] float32 row-major,
        one scale per 128x128 block (`per_block_cast_to_fp8`).
    out: [M, N] bfloat16, row-major, written in place.
    M may be any size >= 0 (0 returns at once); N must be a multiple of 8 and K of 16 (TMA row strides).
    A partial last 128-wide K block is zero-filled by TMA and still scaled by its scale. Data pointers must be
    16-byte aligned.
    `config`: optional schedule fields to pin (as `gemmgen build --config`), checked by the legality rules.
    """
    a_t, sa = validate.gemm_operands(a, "a")
    b_t, sb = validate.gemm_operands(b, "b")
    validate.check_gemm(a_t, sa, b_t, sb, out)
    m, k = a_t.shape
    if m == 0:
        return out
    target = device_target(a_t.get_device())
    overrides = config if isinstance(config, dict) or config is None else dict(forced_fields(config))
    kernel = get_kernel(m, b_t.shape[0], k, target, overrides)
    return kernel.launcher.launch(a_t, sa, b_t, sb, out)  # checked above, once
