"""FP8 quantisation helpers and the scale layouts the kernels read. They run on CPU and GPU tensors alike."""

from __future__ import annotations

import torch

from .ir import ceil_div

# Largest finite value of each FP8 format (OCP 8-bit floating point specification, v1.0: E4M3 448, E5M2 57344).
FP8_MAXES = {torch.float8_e4m3fn: 448.0, torch.float8_e5m2: 57344.0}
AMAX_FLOOR = 1e-4  # an all-zero block gets this amax: its scale stays finite and its values stay 0
BLOCK = 128
ROUNDINGS = ("nearest", "stochastic")


def _check_float(x: torch.Tensor, name: str, dims: tuple[int, ...] = (2, 3)) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.dim() not in dims:
        want = " or ".join(f"{d}-D" for d in dims)
        raise ValueError(f"{name}: expected a {want} tensor, got shape {tuple(x.shape)}")
    if not x.is_floating_point() or x.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        raise TypeError(f"{name}: expected a float32/bfloat16/float16 tensor, got {x.dtype}")


def _cast_options(dtype: torch.dtype, rounding: str, generator: torch.Generator | None) -> None:
    if dtype not in FP8_MAXES:
        raise TypeError(f"dtype: expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding: expected one of {ROUNDINGS}, got {rounding!r}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator: expected a torch.Generator or None, got {type(generator).__name__}")
    if generator is not None and rounding != "stochastic":
        raise ValueError("generator: only stochastic rounding draws random numbers (rounding='stochastic')")


def _stochastic_round(v: torch.Tensor, dtype: torch.dtype, generator: torch.Generator | None) -> torch.Tensor:
    """`v` (fp32, already within the format's range) rounded to one of its two neighbouring values in `dtype`, up
    with probability (|v| - lo) / (hi - lo): unbiased, E[q] = v. The neighbours come from the bit patterns: for
    non-negative values an FP8 format's codes are ordered like its values, so the next value up or down is the code
    +-1 (subnormals included; the largest finite code is never stepped past, since |v| <= max)."""
    mag = v.abs()
    near = mag.to(dtype)
    near_f = near.float()
    bits = near.view(torch.uint8).to(torch.int16)
    step = torch.where(near_f <= mag, 1, -1).to(torch.int16)
    exact = near_f == mag
    other = torch.where(exact, bits, bits + step).to(torch.uint8).view(dtype).float()
    lo, hi = torch.minimum(near_f, other), torch.maximum(near_f, other)
    gap = torch.where(hi > lo, hi - lo, 1.0)
    up = torch.rand(v.shape, generator=generator, device=v.device) < (mag - lo) / gap
    return (torch.where(up, hi, lo) * torch.sign(v)).to(dtype)


def _quantize_blocks(view: torch.Tensor, dims: tuple[int, ...], dtype: torch.dtype = torch.float8_e4m3fn,
                     rounding: str = "nearest",
                     generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Scale (amax / the format's max per block over `dims`, kept as size-1 dims) and FP8 values of fp32 blocks.

    A block holding inf or NaN gets a NaN scale and zero values: every GEMM output that reads the block is NaN and no
    other is (no host synchronisation, no silent inf scale). An all-zero block keeps a finite scale and zeros."""
    fmax = FP8_MAXES[dtype]
    finite = torch.isfinite(view).all(dim=dims[0], keepdim=True)
    for dim in dims[1:]:
        finite = finite.all(dim=dim, keepdim=True)
    clean = torch.where(finite, view, 0.0)
    scale = clean.abs().amax(dim=dims, keepdim=True).clamp(min=AMAX_FLOOR) / fmax
    scaled = (clean / scale).clamp(-fmax, fmax)
    q = scaled.to(dtype) if rounding == "nearest" else _stochastic_round(scaled, dtype, generator)
    return torch.where(finite, scale, float("nan")), q


def per_token_cast_to_fp8(x: torch.Tensor, dtype: torch.dtype = torch.float8_e4m3fn, *, rounding: str = "nearest",
                          generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """x [M, K] (or [G, M, K]) -> (FP8 like x, scales [(G,) M, ceil(K/128)] fp32) with x ~= q * scale per row
    and 128-column block.

    `dtype`: torch.float8_e4m3fn (default; the GEMM kernels' input) or torch.float8_e5m2 (scale = amax / 57344).
    `rounding`: "nearest" (round to nearest even) or "stochastic" (up or down with the probabilities that make the
    expected value exact; `generator` makes it reproducible, on x's device). x may be any strided view (a transposed
    tensor, say); q is written contiguous (K-major).

    The scales come back in the kernel's layout (see `tma_aligned_scales`): M-major with the M stride rounded up to
    4 (per group), so the GEMM calls use them without a copy. Values and shape are the plain [(G,) M, K/128] ones.
    A 128-column block holding inf or NaN gets a NaN scale (and zero values), so exactly the outputs that read it
    are NaN.
    """
    _check_float(x, "x")
    _cast_options(dtype, rounding, generator)
    lead, k = tuple(x.shape[:-1]), x.shape[-1]
    kb = ceil_div(k, BLOCK)
    padded = torch.zeros(*lead, kb * BLOCK, dtype=torch.float32, device=x.device)
    padded[..., :k] = x  # one strided copy whatever x's layout (and dtype)
    view = padded.view(*lead, kb, BLOCK)  # explicit sizes: M = 0 is legal
    scale, q = _quantize_blocks(view, (-1,), dtype, rounding, generator)
    return q.view(*lead, kb * BLOCK)[..., :k].contiguous(), tma_aligned_scales(scale.squeeze(-1))


def per_block_cast_to_fp8(w: torch.Tensor, dtype: torch.dtype = torch.float8_e4m3fn, *, rounding: str = "nearest",
                          generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """w [N, K] (or [G, N, K]) -> (FP8 like w, scales [(G,) ceil(N/128), ceil(K/128)] fp32, row-major) per
    128x128 block. A block holding inf or NaN gets a NaN scale (and zero values), so exactly the outputs that read it
    are NaN. `dtype`, `rounding` and `generator` as for `per_token_cast_to_fp8`; w may be any strided view (e.g. the
    transpose of a [K, N] weight): q is written K-major ([N, K] contiguous), what wgmma reads on sm_90."""
    _check_float(w, "w")
    _cast_options(dtype, rounding, generator)
    lead, (n, k) = tuple(w.shape[:-2]), w.shape[-2:]
    nb, kb = ceil_div(n, BLOCK), ceil_div(k, BLOCK)
    padded = torch.zeros(*lead, nb * BLOCK, kb * BLOCK, dtype=torch.float32, device=w.device)
    padded[..., :n, :k] = w  # one strided copy whatever w's layout (and dtype)
    view = padded.view(*lead, nb, BLOCK, kb, BLOCK)
    scale, q = _quantize_blocks(view, (-3, -1), dtype, rounding, generator)
    return q.view(*lead, nb * BLOCK, kb * BLOCK)[..., :n, :k].contiguous(), scale.view(*lead, nb, kb).contiguous()


def per_tensor_cast_to_fp8(x: torch.Tensor, dtype: torch.dtype = torch.float8_e4m3fn, *,
                           rounding: str = "nearest",
                           generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """x [R, K] -> (FP8 [R, K] contiguous, one fp32 scale as a 0-dim tensor) with x ~= q * scale: the "tensor"
    recipe of fp8_gemm_nt (torch._scaled_mm's tensorwise). Options as for `per_token_cast_to_fp8`."""
    _check_float(x, "x", (2,))
    _cast_options(dtype, rounding, generator)
    scale, q = _quantize_blocks(x.float().unsqueeze(0), (-2, -1), dtype, rounding, generator)
    return q[0].contiguous(), scale.reshape(())


def per_channel_cast_to_fp8(x: torch.Tensor, dtype: torch.dtype = torch.float8_e4m3fn, *,
                            rounding: str = "nearest",
                            generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """x [R, K] -> (FP8 [R, K] contiguous, fp32 scales [R], one per row) with x ~= q * scale[:, None]: the "channel"
    recipe of fp8_gemm_nt for A (rows of D) and for B (columns of D), torch._scaled_mm's rowwise. Options as for
    `per_token_cast_to_fp8`."""
    _check_float(x, "x", (2,))
    _cast_options(dtype, rounding, generator)
    scale, q = _quantize_blocks(x.float(), (-1,), dtype, rounding, generator)
    return q.contiguous(), scale.reshape(x.shape[0]).contiguous()


def tma_aligned_rows(m: int) -> int:
    """Rows of the M-major scale buffer: M rounded up to 4 floats, since TMA strides are multiples of 16 bytes."""
    return ceil_div(m, 4) * 4


def is_tma_aligned_scales(sa: torch.Tensor) -> bool:
    """SA [(G,) M, KB] is M-major with the M stride rounded up to 4 (and groups stacked), 16-byte aligned."""
    *lead, m, kb = sa.shape
    rows = tma_aligned_rows(m)
    aligned_ptr = sa.data_ptr() % 16 == 0  # TMA global addresses are 16-byte aligned
    inner = sa.stride(-2) == 1 and (kb == 1 or sa.stride(-1) == rows)
    stacked = not lead or lead[0] <= 1 or sa.stride(0) == kb * rows
    return aligned_ptr and inner and stacked


def tma_aligned_scales(sa: torch.Tensor) -> torch.Tensor:
    """sa [M, KB] or [G, M, KB] -> the same values stored M-major with the M stride rounded up to 4 (a view of a
    [(G,) KB, align(M, 4)] buffer). This is the layout the kernels' TMA reads (a masked layout's groups stacked);
    already-aligned input is returned as is."""
    if sa.dim() not in (2, 3):
        raise ValueError(f"sa: expected a 2-D or 3-D tensor, got shape {tuple(sa.shape)}")
    if is_tma_aligned_scales(sa):
        return sa
    batched = sa if sa.dim() == 3 else sa.unsqueeze(0)
    g, m, kb = batched.shape
    buf = torch.empty(g, kb, tma_aligned_rows(m), dtype=sa.dtype, device=sa.device)
    buf[:, :, :m] = batched.transpose(1, 2)
    out = buf[:, :, :m].transpose(1, 2)
    return out if sa.dim() == 3 else out[0]


def empty_per_token_fp8(*shape: int, device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Uninitialised buffers for an FP8 GEMM output with 1x128 scales (the fused epilogue's `out`, `out_scales`):
    e4m3 [(G,) M, N] and float32 scales [(G,) M, ceil(N/128)] in the TMA layout (`tma_aligned_scales`), so the
    pair feeds the next FP8 GEMM as its A without a copy."""
    if len(shape) not in (2, 3) or any(not isinstance(v, int) or isinstance(v, bool) or v < 0 for v in shape):
        raise ValueError(f"shape: expected 2 or 3 sizes >= 0 ([G,] M, N), got {shape!r}")
    *lead, m, n = shape
    g = lead[0] if lead else 1
    buf = torch.empty(g, ceil_div(n, BLOCK), tma_aligned_rows(m), dtype=torch.float32, device=device)
    scales = buf[:, :, :m].transpose(1, 2)
    return torch.empty(*shape, dtype=torch.float8_e4m3fn, device=device), scales if lead else scales[0]


def dequantize_a(q: torch.Tensor, sa: torch.Tensor) -> torch.Tensor:
    """float64 reconstruction of a per-token-quantised A [..., M, K] (the tests' reference input)."""
    k = q.shape[-1]
    return q.double() * sa.double().repeat_interleave(BLOCK, dim=-1)[..., :k]


def dequantize_b(q: torch.Tensor, sb: torch.Tensor) -> torch.Tensor:
    """float64 reconstruction of a per-block-quantised B [..., N, K]."""
    n, k = q.shape[-2:]
    full = sb.double().repeat_interleave(BLOCK, dim=-2).repeat_interleave(BLOCK, dim=-1)
    return q.double() * full[..., :n, :k]


def calc_diff(x: torch.Tensor, y: torch.Tensor) -> float:
    """DeepGEMM's similarity metric: 1 - 2 sum(xy) / sum(x^2 + y^2); ~0 when equal."""
    x, y = x.double(), y.double()
    denominator = (x * x + y * y).sum()
    if denominator == 0:
        return 0.0
    return float(1 - 2 * (x * y).sum() / denominator)
