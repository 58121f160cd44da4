"""The public Python API: the dense (forward and weight-gradient) and MoE grouped GEMM calls (FP8, and BF16) on torch
tensors, and `get_kernel`."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch

from .ir import (
    DType,
    GemmConfig,
    GemmKind,
    GemmProblem,
    ScaleRecipe,
    Target,
    as_target,
    check_overrides,
    is_int,
    preset,
)
from .runtime import driver, validate
from .settings import Settings
from .stages import BuiltKernel, build, forced_fields
from .tuning.table import TABLES

if TYPE_CHECKING:
    from .runtime.launch import DenseCall

_KERNELS: dict[tuple[Any, ...], BuiltKernel] = {}
# Many M values share one kernel (rows are a run-time argument): share its BuiltKernel, so its module loads once.
_BY_FOLDER: dict[Any, BuiltKernel] = {}
_LOCK = threading.Lock()
_TARGETS: dict[int, Target] = {}

Config = dict[str, int] | GemmConfig | None
_NUM_SMS: int | None = None  # set_num_sms: the persistent grid cap for calls that do not pin num_sms themselves
_PDL = False  # set_pdl: launch with programmatic dependent launch unless a call pins pdl itself


def set_num_sms(num_sms: int | None) -> None:
    """Cap the SMs gemmgen's kernels use (their persistent grid), leaving the rest free for e.g. communication
    kernels; None restores the whole device. A capped grid is another kernel (its name ends in _g<n>), built on
    first use; a call's own `config={"num_sms": ...}` wins."""
    global _NUM_SMS
    if num_sms is not None and (not is_int(num_sms) or num_sms < 1):
        raise ValueError(f"num_sms: expected a positive integer or None, got {num_sms!r}")
    _NUM_SMS = num_sms


def get_num_sms() -> int:
    """The SMs gemmgen's kernels use: the cap set by set_num_sms, or the current device's SM count."""
    if _NUM_SMS is not None:
        return _NUM_SMS
    driver.require_gpu()
    return device_target(torch.cuda.current_device()).num_sms


@contextlib.contextmanager
def num_sms(n: int | None) -> Iterator[None]:
    """`with gemmgen.num_sms(n):` set_num_sms(n) for the block, then restore the previous cap."""
    previous = _NUM_SMS
    set_num_sms(n)
    try:
        yield
    finally:
        set_num_sms(previous)


def set_pdl(enabled: bool) -> None:
    """Launch every later gemmgen kernel with programmatic dependent launch (PDL; the DeepGEMM / FlashInfer
    `enable_pdl` idea): each kernel may start while the previous kernel in the stream still runs, sets up its
    barriers and tensor maps meanwhile, and waits for that kernel to finish before it reads or writes any tensor,
    so results are the same as without it. It saves the gap between back-to-back kernels (a decode step's GEMMs,
    replayed in a CUDA graph too); an isolated call gains nothing. A PDL kernel is another kernel (its name ends in
    _pdl), built on first use; a call's own `config={"pdl": ...}` wins. Process-wide, as set_num_sms: `pdl()` blocks
    on several threads at once may leave either setting."""
    global _PDL
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled: expected a bool, got {type(enabled).__name__}")
    _PDL = enabled


@contextlib.contextmanager
def pdl(enabled: bool = True) -> Iterator[None]:
    """`with gemmgen.pdl():` set_pdl(enabled) for the block, then restore the previous setting."""
    previous = _PDL
    set_pdl(enabled)
    try:
        yield
    finally:
        set_pdl(previous)


def device_target(device_index: int) -> Target:
    """The device's preset (H100 by its name, else H200) with the SM count read from it (a partial GPU gets its own
    grid); the preset names the tuned tables selection reads (tuning/table.py)."""
    if device_index not in _TARGETS:
        base = preset("h100" if "H100" in driver.device_name(device_index) else "h200")
        sms = driver.device_sm_count(device_index)
        _TARGETS[device_index] = Target(base.name, base.arch, sms, base.smem_per_block, base.regs_per_sm,
                                        base.max_regs_per_thread, base.max_cluster)
    return _TARGETS[device_index]


def get_kernel(m: int, n: int, k: int, target: Target, config: dict[str, int] | None = None,
               settings: Settings | None = None, *, kind: GemmKind = GemmKind.NORMAL, groups: int = 1,
               out_dtype: DType = DType.BF16, accumulate: bool = False, a_dtype: DType = DType.E4M3,
               b_dtype: DType = DType.E4M3, scales: ScaleRecipe = ScaleRecipe.A1x128_B128x128,
               swiglu: bool = False) -> BuiltKernel:
    """The kernel for a call: built once per process (the disk cache makes later processes fast). `m` is what
    config selection sees (see GemmProblem.m: M, M_total, or the expected rows per group)."""
    target = as_target(target)
    key = (kind, m, n, k, groups, out_dtype, accumulate, a_dtype, b_dtype, scales, swiglu, target,
           forced_fields(config))
    hit = _KERNELS.get(key)
    if hit is None:
        with _LOCK:
            hit = _KERNELS.get(key)
            if hit is None:
                problem = GemmProblem(m, n, k, kind=kind, groups=groups, out_dtype=out_dtype, accumulate=accumulate,
                                      a_dtype=a_dtype, b_dtype=b_dtype, scales=scales, swiglu=swiglu)
                built = build(problem, config, target, settings=settings)
                hit = _BY_FOLDER.setdefault(built.folder, built)
                _KERNELS[key] = hit
    return hit


def _forget_choices() -> None:
    """A tuned table was loaded (gemmgen.load_tuned): every kernel choice of this process is made again."""
    with _LOCK:
        for chosen in (_KERNELS, _DEFAULT_KERNELS, _FAST_CALLS, _FAST_CALLS_PDL):
            chosen.clear()


TABLES.on_load.append(_forget_choices)


_CURRENT = object()  # _overrides' default: the SM cap set_num_sms holds now


def _overrides(config: Config, cap: Any = _CURRENT, with_pdl: Any = _CURRENT) -> dict[str, int] | None:
    if config is None or isinstance(config, GemmConfig):
        fields = dict(forced_fields(config))
    elif isinstance(config, dict):
        fields = check_overrides(config)
    else:
        raise TypeError(f"config: expected a dict of schedule fields or a GemmConfig, got {type(config).__name__}")
    if cap is _CURRENT:
        cap = _NUM_SMS
    if cap is not None:
        fields.setdefault("num_sms", cap)
    if (_PDL if with_pdl is _CURRENT else with_pdl) and "pdl" not in fields:
        fields["pdl"] = 1
    return fields or None


# The calls with no config and no SM cap: (kind, selection M, N, K, groups, device, ..., pdl) -> kernel, one dict
# lookup on the per-call path (get_kernel's key sorts the config and hashes the target).
_DEFAULT_KERNELS: dict[tuple[Any, ...], BuiltKernel] = {}


# fp8_gemm_nt's common call (e4m3, block scales, bf16 out, no config or SM cap): (M, N, K, device) -> its kernel's
# DenseCall (runtime/launch.py: a parameter block of its own, written in place); one dict per set_pdl setting.
_FAST_CALLS: dict[tuple[int, int, int, int], DenseCall] = {}
_FAST_CALLS_PDL: dict[tuple[int, int, int, int], DenseCall] = {}
_FAST_CALLS_MAX = 1024


def _fast_call(m: int, n: int, k: int, device: int, with_pdl: bool) -> DenseCall:
    from .runtime.launch import DenseCall  # as stages.py: the launcher's modules load with the first launch

    calls = _FAST_CALLS_PDL if with_pdl else _FAST_CALLS
    kernel = get_kernel(m, n, k, device_target(device), {"pdl": 1} if with_pdl else None)
    if len(calls) >= _FAST_CALLS_MAX:  # a few KB each; M varies per call in a serving loop
        calls.clear()
    return calls.setdefault((m, n, k, device), DenseCall(kernel.launcher, m, device))

_OUT_DTYPES = {t: d for d, t in validate.TORCH_OUT_DTYPES.items()}
_IN_DTYPES = {t: d for d, t in validate.TORCH_DTYPES.items()}  # the input tensors' dtypes pick the kernel


def _launch(kind: GemmKind, selection_m: int, tensors: dict[str, torch.Tensor], env: dict[str, int],
            config: Config, accumulate: bool = False,
            scales: ScaleRecipe = ScaleRecipe.A1x128_B128x128, selection_k: int | None = None,
            swiglu: bool = False) -> torch.Tensor:
    if env["m"] == 0 or env["g"] == 0:
        return tensors["out"]
    b = tensors["b"]
    device = b.get_device()
    cap, with_pdl = _NUM_SMS, _PDL  # read once: a block on another thread must not split this call's view of them
    fast = config is None and cap is None
    out_dtype = _OUT_DTYPES[tensors["out"].dtype]
    a_dtype, b_dtype = _IN_DTYPES[tensors["a"].dtype], _IN_DTYPES[b.dtype]
    k = selection_k if selection_k is not None else b.shape[-1]  # k-grouped: the expected K per group
    key = (kind, selection_m, b.shape[-2], k, env["g"], device, out_dtype, accumulate, a_dtype, b_dtype,
           scales, with_pdl, swiglu)
    kernel = _DEFAULT_KERNELS.get(key) if fast else None
    if kernel is None:
        kernel = get_kernel(selection_m, b.shape[-2], k, device_target(device),
                            _overrides(config, cap, with_pdl), kind=kind, groups=env["g"], out_dtype=out_dtype,
                            accumulate=accumulate, a_dtype=a_dtype, b_dtype=b_dtype, scales=scales, swiglu=swiglu)
        if fast:
            _DEFAULT_KERNELS[key] = kernel
    return kernel.launcher.launch(tensors, env)  # checked by the caller, once


def _arguments(out: torch.Tensor | None, accumulate: object, config: Config) -> None:
    """The checks that need no GPU, made before the operands' device checks (a call can be validated on a CPU box)."""
    if not isinstance(accumulate, bool):
        raise TypeError(f"accumulate: expected a bool, got {type(accumulate).__name__}")
    if accumulate and isinstance(out, torch.Tensor) and out.dtype != torch.float32:
        raise ValueError(f"accumulate: out += A.B^T needs out float32, got {out.dtype} (bf16 sums would round "
                         "at every call)")
    _overrides(config, None, False)  # unknown fields, non-integers, a config that is not a mapping


def fp8_gemm_nt(a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor], out: torch.Tensor,
                *, recipe: str | None = None, accumulate: bool = False, config: Config = None,
                out_scales: torch.Tensor | None = None, swiglu: bool = False) -> torch.Tensor:
    """out[M, N] (bf16 or fp32) = (A * SA) @ (B * SB)^T with FP8 scaling, on a Hopper GPU; returns `out`.
    With `accumulate=True` (out float32 only): out += (A * SA) @ (B * SB)^T, added by the TMA store.
    Fused epilogues (docs/API.md, "Fused epilogues"): out float8_e4m3fn with `out_scales` [M, ceil(N_out/128)]
    float32 (any strides): the kernel quantizes each row's 128 columns and writes their scale, bit for bit
    `per_token_cast_to_fp8` of the bf16 result; `swiglu=True`: B holds gate and up rows in alternating 128-row
    blocks (`moe.interleave_gate_up`) and out [M, N / 2] = SiLU(gate) * up (bf16 or e4m3).

    The scale recipe is named by `recipe` or, if None, inferred from the shapes of SA and SB:
    - "1x128/128x128" (the default below, DeepGEMM's): per 128-wide k-block, promoted into FP32 registers;
    - "tensor" (torch._scaled_mm's tensorwise): SA and SB one float32 each (shape (), (1,) or (1, 1));
    - "channel" (torch._scaled_mm's rowwise): SA [M] (or [M, 1]), SB [N] (or [1, N] or [N, 1]), contiguous.
    The tensor and channel recipes accumulate the whole K in wgmma (as cuBLASLt's fast accumulate does; no
    per-block promotion) and scale once in the epilogue.

    a = (A, SA): A [M, K] float8_e4m3fn or float8_e5m2 (A and B each either) K-major; SA [M, ceil(K/128)]
        float32, one scale per row per 128 columns of K, in any layout: M-major with the M stride rounded up
        to 4 (what `per_token_cast_to_fp8` returns) is loaded by TMA; any other (row-major, strided) is
        gathered by the kernel's producer warps through its strides. Either way one kernel, no conversion copy.
    b = (B, SB): B [N, K] float8_e4m3fn K-major; SB [ceil(N/128), ceil(K/128)] float32 row-major,
        one scale per 128x128 block (`per_block_cast_to_fp8`).
    out: [M, N] bfloat16 or float32, written (or, accumulating, added to) in place.
    A, B and out may be strided views (a padded K, a slice of a wider output): last stride 1, a row stride of at
    least the row that is a multiple of 16 bytes (docs/API.md, "Strided operands"); so in every call below.
    M may be any size >= 0 (0 returns at once); N must be a multiple of 8 and K of 16 (TMA row strides).
    A partial last 128-wide K block is zero-filled by TMA and still scaled by its scale. Data pointers must be
    16-byte aligned.
    `config`: optional schedule fields to pin (as `gemmgen build --config`), checked by the legality rules.
    """
    if recipe is None and accumulate is False and config is None and _NUM_SMS is None and out_scales is None \
            and swiglu is False:
        fast = validate.fast_dense(a, b, out)  # the common call in one flat pass; anything else: the full checks
        if fast is not None:
            with_pdl = _PDL
            call = (_FAST_CALLS_PDL if with_pdl else _FAST_CALLS).get(fast[:4])
            if call is None:
                call = _fast_call(*fast[:4], with_pdl)
            return call(fast, a, b, out)
    a_t, sa = validate.gemm_operands(a, "a")
    b_t, sb = validate.gemm_operands(b, "b")
    _arguments(out, accumulate, config)
    tensors, env, scales = validate.check_dense_scaled(a_t, sa, b_t, sb, out, recipe, out_scales, swiglu)
    return _launch(GemmKind.NORMAL, env["m"], tensors, env, config, accumulate, scales, swiglu=swiglu)


def bf16_gemm_nt(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, *, accumulate: bool = False,
                 config: Config = None) -> torch.Tensor:
    """out[M, N] (bf16 or fp32) = A @ B^T with bf16 inputs and FP32 accumulation, on a Hopper GPU; returns `out`.
    With `accumulate=True` (out float32 only): out += A @ B^T.

    A [M, K] and B [N, K] bfloat16, K-major; out [M, N] bfloat16 or float32 (strided rows: fp8_gemm_nt). M >= 0, N a
    multiple of 8, K of 8 (TMA 16-byte rows); data pointers 16-byte aligned. The same generator and kernel plan as
    the FP8 calls: 64-wide k-blocks (one 128-byte swizzled row), wgmma m64nNk16, whole-K accumulation.
    """
    _arguments(out, accumulate, config)
    tensors, env = validate.check_bf16(a, b, out)
    return _launch(GemmKind.NORMAL, env["m"], tensors, env, config, accumulate, ScaleRecipe.NONE)


def m_grouped_bf16_gemm_nt_contiguous(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, m_indices: torch.Tensor,
                                      *, config: Config = None) -> torch.Tensor:
    """MoE grouped BF16 GEMM, contiguous layout: out[r] = A[r] @ B[e]^T with e = m_indices[r], bf16 inputs and FP32
    accumulation (whole K in wgmma, as bf16_gemm_nt); returns `out`.

    A [M_total, K] bfloat16 row-major: the rows of all experts concatenated, each expert's segment starting at a
    multiple of `get_m_alignment_for_contiguous_layout()` (128) rows (`contiguous_layout(counts)` builds the layout
    and its `m_indices`). B [G, N, K] bfloat16, one matrix per expert. out: [M_total, N] bfloat16 (only: partial
    tiles are stored row by row as bf16 pairs). m_indices: [M_total] int32 on the GPU, each row's expert; -1 marks
    padding rows, which are left untouched (never written). As for m_grouped_fp8_gemm_nt_contiguous, the kernel
    reads m_indices on the GPU: a 128-row segment whose first index is outside [0, G) is skipped, and inside a
    computed segment only the rows whose index equals the segment's expert are written. Experts with zero rows are
    legal. N a multiple of 8, K of 8 (TMA 16-byte rows); data pointers 16-byte aligned.
    `config`: optional schedule fields to pin (block_m 64 or 128), checked by the legality rules.
    """
    _arguments(None, False, config)
    tensors, env = validate.check_bf16_contiguous(a, b, out, m_indices)
    return _launch(GemmKind.M_GROUPED_CONTIGUOUS, env["m"], tensors, env, config, scales=ScaleRecipe.NONE)


def m_grouped_bf16_gemm_nt_masked(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, masked_m: torch.Tensor,
                                  expected_m: int, *, config: Config = None) -> torch.Tensor:
    """MoE grouped BF16 GEMM, masked layout (CUDA-graph decoding): for each group g, out[g, :masked_m[g]] =
    A[g, :masked_m[g]] @ B[g]^T, bf16 inputs and FP32 accumulation (whole K in wgmma, as bf16_gemm_nt); returns `out`.

    A [G, M_max, K] and B [G, N, K] bfloat16 row-major; out [G, M_max, N] bfloat16 (rows at and past masked_m[g]
    are left untouched); masked_m [G] int32 on the GPU, never read by the host (capturable; each value clamped to
    [0, M_max] by the kernel). N a multiple of 8, K of 8 (TMA 16-byte rows); data pointers 16-byte aligned.
    expected_m: the typical rows per group; it only steers config selection (not correctness).
    """
    _expected_m(expected_m)
    _arguments(None, False, config)
    tensors, env = validate.check_bf16_masked(a, b, out, masked_m)
    return _launch(GemmKind.M_GROUPED_MASKED, expected_m, tensors, env, config, scales=ScaleRecipe.NONE)


def _expected_m(expected_m: object) -> None:
    if not is_int(expected_m) or expected_m < 1:  # type: ignore[operator]
        raise ValueError(f"expected_m: expected an integer >= 1 (the typical rows per group), got {expected_m!r}")


def fp8_gemm_nt_wgrad(a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor], out: torch.Tensor,
                      *, accumulate: bool = True, config: Config = None) -> torch.Tensor:
    """The weight-gradient GEMM (DeepGEMM's `wgrad_gemm_fp8_fp8_fp32_nt`, scale recipe 1x128/1x128) on a Hopper
    GPU: out[M, N] float32 += (A * SA) @ (B * SB)^T (`accumulate=True`, the default: gradients sum over calls), or
    = with `accumulate=False`; returns `out`.

    a = (A, SA): A [M, K] float8_e4m3fn or float8_e5m2 (A and B each either), row-major (K, the token count, is
        contiguous); SA [M, ceil(K/128)] float32, one scale per row per 128 columns of K, in any layout (as for
        fp8_gemm_nt: M-major with the M stride rounded up to 4 goes by TMA, any other is gathered by the kernel).
    b = (B, SB): B [N, K] FP8 row-major; SB [N, ceil(K/128)] float32, also one scale per row per 128 columns of K
        (`per_token_cast_to_fp8(w)`), in any layout: N-major (what `per_token_cast_to_fp8` returns) is loaded by
        TMA, any other (row-major, strided) is gathered by the producer warps through its strides. No conversion
        copy either way.
    out: [M, N] float32, row-major, added to (or overwritten) in place by the TMA store.
    M may be any size >= 0 (0 returns at once); N must be a multiple of 8 and K of 16 (TMA row strides); a
    partial last 128-wide K block is zero-filled by TMA and scaled by its scales. Data pointers must be 16-byte
    aligned. `config`: optional schedule fields to pin, checked by the legality rules (split-K is not implemented
    for this recipe).
    """
    a_t, sa = validate.gemm_operands(a, "a")
    b_t, sb = validate.gemm_operands(b, "b")
    _arguments(None, accumulate, config)
    tensors, env = validate.check_wgrad(a_t, sa, b_t, sb, out)
    return _launch(GemmKind.NORMAL, env["m"], tensors, env, config, accumulate, ScaleRecipe.A1x128_B1x128)


def k_grouped_fp8_gemm_nt_wgrad(a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor],
                                out: torch.Tensor, ks: list[int], *, accumulate: bool = True,
                                config: Config = None) -> torch.Tensor:
    """The per-expert weight gradients of an MoE layer in one launch (DeepGEMM's
    `k_grouped_wgrad_gemm_fp8_fp8_fp32_nt`): for each group g, out[g] (+)= (A_g * SA_g) @ (B_g * SB_g)^T, where the
    G groups are concatenated along K with sizes `ks`; returns `out`.

    a = (A, SA): A [M, sum(ks)] FP8 (e4m3 or e5m2), row-major; SA [M, sum(ks)/128] float32, one scale per row per
        128 columns of K (`per_token_cast_to_fp8`), any layout (M-major goes by TMA, others are gathered).
    b = (B, SB): B [N, sum(ks)] FP8 row-major; SB [N, sum(ks)/128] float32, any layout (N-major by TMA).
    out: [G, M, N] float32; `accumulate=True` (the default) adds, False overwrites (a group with K = 0 then gets 0).
    ks: G ints, each a multiple of 128, zero legal. M must be a multiple of 64, N of 8. The group sizes go to the
    GPU once per distinct `ks` (cached), and the kernel reads them there.
    """
    a_t, sa = validate.gemm_operands(a, "a")
    b_t, sb = validate.gemm_operands(b, "b")
    _arguments(None, accumulate, config)
    tensors, env = validate.check_k_grouped(a_t, sa, b_t, sb, out, ks)
    if env["m"] == 0 or env["g"] == 0:
        return out
    empty = validate.k_grouped_without_k(out, env, accumulate)
    if empty is not None:  # no kernel is built for it either
        return empty
    expected_k = max(128, round(env["k"] / env["g"] / 128) * 128)  # steers config selection only
    return _launch(GemmKind.K_GROUPED, env["m"], tensors, env, config, accumulate, ScaleRecipe.A1x128_B1x128,
                   selection_k=expected_k)


def m_grouped_fp8_gemm_nt_contiguous(a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor],
                                     out: torch.Tensor, m_indices: torch.Tensor, *, config: Config = None,
                                     out_scales: torch.Tensor | None = None, swiglu: bool = False) -> torch.Tensor:
    """MoE grouped GEMM, contiguous layout: out[r] = (A[r] * SA[r]) @ (B[e] * SB[e])^T with e = m_indices[r].

    a = (A, SA): A [M_total, K] e4m3, the rows of all experts concatenated, each expert's segment starting at a
        multiple of `get_m_alignment_for_contiguous_layout()` (128) rows; SA [M_total, ceil(K/128)] fp32 (as for
        fp8_gemm_nt). `contiguous_layout(counts)` builds the layout and its `m_indices` from rows per expert.
    b = (B, SB): B [G, N, K] e4m3, one matrix per expert; SB [G, ceil(N/128), ceil(K/128)] fp32.
    out: [M_total, N] bf16. m_indices: [M_total] int32 on the GPU, each row's expert; -1 marks padding rows.
    Padding rows of `out` are left untouched (never written). The kernel reads m_indices on the GPU (the host never
    does): a 128-row segment whose first index is outside [0, G) is skipped (nothing computed or written); inside a
    computed segment only the rows whose index equals the segment's expert (its first row's) are written, so a
    stray index is never computed with another expert's weights. Experts with zero rows are legal.
    Fused epilogues as fp8_gemm_nt's: out float8_e4m3fn with out_scales [M_total, ceil(N_out/128)] (padding rows'
    scales untouched), and/or swiglu=True (out [M_total, N / 2]): a MoE expert's gate+up GEMM in one kernel.
    """
    a_t, sa = validate.gemm_operands(a, "a")
    b_t, sb = validate.gemm_operands(b, "b")
    _arguments(None, False, config)
    tensors, env = validate.check_contiguous(a_t, sa, b_t, sb, out, m_indices, out_scales, swiglu)
    return _launch(GemmKind.M_GROUPED_CONTIGUOUS, env["m"], tensors, env, config, swiglu=swiglu)


def m_grouped_fp8_gemm_nt_masked(a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor],
                                 out: torch.Tensor, masked_m: torch.Tensor, expected_m: int, *, config: Config = None,
                                 out_scales: torch.Tensor | None = None, swiglu: bool = False) -> torch.Tensor:
    """MoE grouped GEMM, masked layout (CUDA-graph decoding): for each group g, out[g, :masked_m[g]] =
    (A[g] * SA[g])[:masked_m[g]] @ (B[g] * SB[g])^T.

    a = (A, SA): A [G, M_max, K] e4m3; SA [G, M_max, ceil(K/128)] fp32 (`per_token_cast_to_fp8` of a 3-D tensor
        returns the kernel's layout). b = (B, SB): B [G, N, K] e4m3; SB [G, ceil(N/128), ceil(K/128)] fp32.
    out: [G, M_max, N] bf16; rows at and past masked_m[g] are left untouched. masked_m: [G] int32 on the GPU. The
    host never reads it, so the call is CUDA-graph capturable and a replay uses the values masked_m holds then. The
    kernel clamps each value to [0, M_max]: it never writes outside group g's rows of `out`.
    expected_m: the typical rows per group; it only steers config selection (not correctness).
    Fused epilogues as fp8_gemm_nt's: out float8_e4m3fn with out_scales [G, M_max, ceil(N_out/128)] (rows past
    masked_m untouched), and/or swiglu=True (out [G, M_max, N / 2]).
    """
    _expected_m(expected_m)
    a_t, sa = validate.gemm_operands(a, "a")
    b_t, sb = validate.gemm_operands(b, "b")
    _arguments(None, False, config)
    tensors, env = validate.check_masked(a_t, sa, b_t, sb, out, masked_m, out_scales, swiglu)
    return _launch(GemmKind.M_GROUPED_MASKED, expected_m, tensors, env, config, swiglu=swiglu)


from . import ops as _ops  # noqa: E402,F401 - registers torch.ops.gemmgen.* once the torch API is in use
