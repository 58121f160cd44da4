"""Input checks for the public GEMM calls: every error names the argument, what was expected and what was given.

Each `check_*` returns the kernel's operands by the plan's names and the run-time values ("m" rows of the per-group
A/D view, "g" groups, SA's element strides), which is what `Launcher.launch` takes. SA may have any strides: the
kernel gathers it through them (no conversion kernel for a row-major SA).
"""

from __future__ import annotations

import functools
import itertools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch

from ..ir import CONTIGUOUS_ALIGNMENT, DType, GemmKind, GemmProblem, ScaleRecipe, ceil_div, is_int
from ..ir.problem import SWIGLU_BLOCK
from ..quant import is_tma_aligned_scales
from . import driver

TMA_ADDRESS_ALIGN = 16  # bytes (CUDA driver API, cuTensorMapEncodeTiled: globalAddress alignment)
INT32_MAX = 2**31 - 1  # TMA coordinates and the kernel's row arithmetic are 32-bit
FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)  # A and B: either format, each on its own (wgmma .e4m3/.e5m2)

Operands = tuple[dict[str, torch.Tensor], dict[str, int]]


def tensor(x: object, name: str, dtype: torch.dtype | tuple[torch.dtype, ...], shape: tuple[int, ...] | None = None,
           ndim: int = 2) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in (dtype if isinstance(dtype, tuple) else (dtype,)):
        want = " or ".join(str(d) for d in dtype) if isinstance(dtype, tuple) else str(dtype)
        raise TypeError(f"{name}: expected dtype {want}, got {x.dtype}")
    if x.dim() != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D tensor, got shape {tuple(x.shape)}")
    if shape is not None and x.shape != shape:  # torch.Size compares with a tuple directly
        raise ValueError(f"{name}: expected shape {shape}, got {tuple(x.shape)}")
    return x


TMA_STRIDE_ALIGN = 16  # bytes (cuTensorMapEncodeTiled: every globalStrides entry a multiple of 16, below 2^40)
TMA_STRIDE_LIMIT = 2**40


def _row_stride(x: torch.Tensor, name: str, elem_bytes: int) -> int:
    """The elements between rows of `x` (its last two dims) as a TMA map takes them: the last stride 1, the row
    stride a multiple of 16 bytes and at least the row (a padded K, a column slice of a wider tensor). A single row
    has no row stride of its own: the row's length stands in."""
    rows, cols = x.shape[-2], x.shape[-1]
    strides = x.stride()
    ld = strides[-2] if rows > 1 else cols
    if (strides[-1] != 1 and cols > 1) or ld < cols or (ld * elem_bytes) % TMA_STRIDE_ALIGN \
            or ld * elem_bytes >= TMA_STRIDE_LIMIT:
        raise ValueError(f"{name}: TMA reads and writes rows whose elements are adjacent (last stride 1), a row "
                         f"stride of at least the row ({cols} elements) that is a multiple of {TMA_STRIDE_ALIGN} bytes "
                         f"({TMA_STRIDE_ALIGN // elem_bytes} elements of {elem_bytes} byte(s)); got shape "
                         f"{tuple(x.shape)} with strides {tuple(strides)}")
    return ld


def operand_layout(x: torch.Tensor, name: str, elem_bytes: int, writes: bool = False) -> dict[str, int]:
    """A TMA operand's 2-D map, as run-time values named after it (plan_kernel.operand_extents): "<name>_ld" elements
    between rows and "<name>_rows" rows; a 3-D tensor [G, R, C] is seen as its groups stacked "<name>_gr" rows apart
    (its group stride over its row stride, which must divide it), so the map holds (G - 1) * gr + R rows. A written
    operand's groups must not overlap (gr >= R); a read one's may (e.g. one weight expanded over the groups)."""
    ld = _row_stride(x, name, elem_bytes)
    if x.dim() == 2:
        rows = x.shape[0]
        _int32_rows(name, rows, "rows")
        return {f"{name}_ld": ld, f"{name}_rows": rows}
    groups, rows = x.shape[0], x.shape[1]
    gs = x.stride(0) if groups > 1 else rows * ld
    if rows == 1 and groups > 1 and gs >= x.shape[2] and (gs * elem_bytes) % TMA_STRIDE_ALIGN == 0 \
            and gs * elem_bytes < TMA_STRIDE_LIMIT:
        ld = gs  # one row per group: the groups are the map's rows
    if gs % ld or (writes and gs // ld < rows):
        raise ValueError(f"{name}: a 3-D operand is read as its groups' rows stacked in one 2-D tensor map, so its "
                         f"group stride must be a multiple of its row stride ({ld} elements)"
                         + (f" and hold its {rows} rows (groups of out must not overlap)" if writes else "")
                         + f"; got shape {tuple(x.shape)} with strides {tuple(x.stride())}")
    gr = gs // ld
    _int32_rows(name, (groups - 1) * gr + rows, "(G - 1) * group stride in rows + rows")
    return {f"{name}_ld": ld, f"{name}_rows": (groups - 1) * gr + rows, f"{name}_gr": gr}


def _layouts(elem_bytes: int, out: torch.Tensor, **reads: torch.Tensor) -> dict[str, int]:
    """operand_layout of every TMA operand of a call: the read ones (elements of `elem_bytes`) and out."""
    env: dict[str, int] = {}
    for name, x in reads.items():
        env.update(operand_layout(x, name, elem_bytes))
    env.update(operand_layout(out, "out", out.element_size(), writes=True))
    return env


def cuda_tma_operand(x: torch.Tensor, name: str, device: torch.device) -> None:
    """A TMA operand's device and data pointer (its strides: operand_layout)."""
    if x.get_device() != device.index:  # an int compare (-1 on the CPU): this runs on every call
        raise ValueError(f"{name}: expected a tensor on {device} (where a is), got {x.device}")
    if x.data_ptr() % TMA_ADDRESS_ALIGN:
        raise ValueError(f"{name}: TMA needs a {TMA_ADDRESS_ALIGN}-byte aligned data pointer, got "
                         f"0x{x.data_ptr():x} (storage offset {x.storage_offset()})")


def gemm_operands(pair: object, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise TypeError(f"{name}: expected a (fp8 tensor, fp32 scales) pair, got {type(pair).__name__}")
    return pair[0], pair[1]


def _n_and_k(n: int, k: int, elem_bytes: int = 1) -> None:
    """N and K of inputs of `elem_bytes` (1: FP8, 2: bf16): TMA rows of A, B and out are multiples of 16 bytes."""
    if k % (16 // elem_bytes) or k == 0:
        raise ValueError(f"a: K must be a positive multiple of {16 // elem_bytes} (TMA 16-byte row strides"
                         f"{' of bf16' if elem_bytes == 2 else ''}), got K={k}")
    if n % 8 or n == 0:
        raise ValueError(f"b: N must be a positive multiple of 8 (TMA 16-byte rows of bf16 out), got N={n}")


def _bf16_n_and_k(n: int, k: int) -> None:
    _n_and_k(n, k, 2)


def _groups(name: str, x: torch.Tensor, groups: int) -> None:
    if x.shape[0] != groups:
        raise ValueError(f"{name}: expected {groups} groups along dim 0 (as b has), got shape {tuple(x.shape)}")


def _on_gpu(a: torch.Tensor, tma: dict[str, torch.Tensor], pointers: dict[str, torch.Tensor],
            gathered: dict[str, torch.Tensor] | None = None) -> None:
    """Device and alignment: `tma` operands are read through tensor maps (16-byte aligned; their strides were checked
    by operand_layout),
    `pointers` by the kernel as plain contiguous arrays, `gathered` (scales in any layout: by tensor map where they
    are in its layout, else through their strides) only need to be on a's device."""
    driver.require_gpu()  # before device checks: on a machine with no GPU, say so rather than "not CUDA"
    if a.device.type != "cuda":
        raise ValueError(f"a: expected a CUDA tensor, got device {a.device}")
    for name, x in tma.items():
        cuda_tma_operand(x, name, a.device)
    index = a.get_device()  # an int: cheaper to compare than torch.device objects (this runs on every call)
    for name, x in (*pointers.items(), *(gathered or {}).items()):
        if x.get_device() != index:
            raise ValueError(f"{name}: expected a tensor on {a.device} (where a is), got {x.device}")
    for name, x in pointers.items():
        if not x.is_contiguous():
            raise ValueError(f"{name}: expected a contiguous tensor, got strides {x.stride()}")


def _gather_strides(x: torch.Tensor, name: str) -> tuple[int, ...]:
    """A scale tensor's element strides, checked to keep every element within the kernel's 32-bit gather offsets."""
    strides = x.stride()
    if sum((size - 1) * stride for size, stride in zip(x.shape, strides, strict=True)) > INT32_MAX:
        raise ValueError(f"{name}: strides {tuple(strides)} reach past element 2^31 - 1, beyond the kernel's 32-bit "
                         f"offsets; pass a contiguous {name.upper()}")
    return strides


def _sa_env(sa: torch.Tensor, grouped_3d: bool) -> dict[str, int]:
    """SA's strides for the gather and whether it is in the TMA layout (per_token_cast_to_fp8's: loaded by tensor
    map, as fast as 0.2's kernel); any other layout is gathered."""
    *sg, sm, sk = _gather_strides(sa, "sa")
    return {"sa_stride_m": sm, "sa_stride_k": sk, "sa_stride_g": sg[0] if grouped_3d else 0,
            "sa_tma": int(is_tma_aligned_scales(sa))}


def _sb_env(sb: torch.Tensor) -> dict[str, int]:
    """1x128/1x128: SB's strides for the gather, and whether it is N-major (the TMA layout: per_token_cast_to_fp8's
    scales of the weight), which tmap_sfb loads."""
    sn, sk = _gather_strides(sb, "sb")
    return {"sb_stride_n": sn, "sb_stride_k": sk, "sb_tma": int(is_tma_aligned_scales(sb))}


def _int32_rows(name: str, rows: int, what: str) -> None:
    if rows > INT32_MAX:
        raise ValueError(f"{name}: {what} = {rows} rows exceed the kernel's 32-bit row coordinates")


def _a_and_b(a: Any, b: Any, dtype: torch.dtype | tuple[torch.dtype, ...],
             n_and_k: Callable[[int, int], None]) -> tuple[int, int, int]:
    """A [M, K] and B [N, K] of `dtype` with the same K, N and K as `n_and_k` wants: (M, N, K)."""
    tensor(a, "a", dtype)
    m, k = a.shape
    _int32_rows("a", m, "M")
    tensor(b, "b", dtype)
    n = b.shape[0]
    if b.shape[1] != k:
        raise ValueError(f"b: expected shape (N, {k}) to match a's K={k}, got {tuple(b.shape)}")
    n_and_k(n, k)
    return m, n, k


def _out(out: Any, dtypes: tuple[torch.dtype, ...], shape: tuple[int, ...], want: str) -> None:
    """out of one of `dtypes` (`want` says which, and why) with `shape`."""
    if not isinstance(out, torch.Tensor) or out.dtype not in dtypes:
        got = out.dtype if isinstance(out, torch.Tensor) else type(out).__name__
        raise TypeError(f"out: expected {want}, got {got}")
    tensor(out, "out", out.dtype, shape)


def out_columns(n: int, swiglu: object) -> int:
    """Columns of out: N, or N / 2 with the SwiGLU epilogue (B's gate and up rows in alternating 128-row blocks)."""
    if not isinstance(swiglu, bool):
        raise TypeError(f"swiglu: expected a bool, got {type(swiglu).__name__}")
    if swiglu and n % SWIGLU_BLOCK:
        raise ValueError(f"b: swiglu reads gate and up rows in alternating 128-row blocks (moe.interleave_gate_up), "
                         f"so N must be a multiple of {SWIGLU_BLOCK}, got N={n}")
    return n // 2 if swiglu else n


def out_scales_of(out: torch.Tensor, out_scales: object) -> tuple[dict[str, int], dict[str, torch.Tensor]]:
    """An e4m3 out's scales [(G,) M, ceil(N_out/128)] float32, written by the kernel through their strides (any layout;
    quant.empty_per_token_fp8 makes the TMA one the next GEMM loads): (their strides as run-time values, the tensor
    by its plan name); other outs take none: ({}, {})."""
    if out.dtype != torch.float8_e4m3fn:
        if out_scales is not None:
            raise ValueError(f"out_scales: only an e4m3 out has scales (out is {out.dtype}); pass None")
        return {}, {}
    shape = (*out.shape[:-1], ceil_div(out.shape[-1], 128))
    if out_scales is None:
        raise ValueError(f"out_scales: an e4m3 out needs its 1x128 scales, a float32 tensor of shape {shape} "
                         "(gemmgen.empty_per_token_fp8 makes both)")
    tensor(out_scales, "out_scales", torch.float32, shape, ndim=len(shape))
    strides = _gather_strides(out_scales, "out_scales")
    if any(st < 1 and size > 1 for st, size in zip(strides, shape, strict=True)):
        raise ValueError(f"out_scales: every scale needs its own element (positive strides), got {tuple(strides)}")
    env = {"ds_stride_m": strides[-2], "ds_stride_k": strides[-1], "ds_stride_g": strides[0] if len(shape) == 3 else 0}
    return env, {"out_scales": out_scales}


RECIPE_NAMES = {"1x128/128x128": ScaleRecipe.A1x128_B128x128, "block": ScaleRecipe.A1x128_B128x128,
                "tensor": ScaleRecipe.TENSOR, "tensorwise": ScaleRecipe.TENSOR,
                "channel": ScaleRecipe.CHANNEL, "rowwise": ScaleRecipe.CHANNEL}


def _scale_shapes(recipe: ScaleRecipe, m: int, n: int, k: int) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """The SA and SB shapes each dense recipe accepts (channel and tensor: torch._scaled_mm's shapes too)."""
    kb = ceil_div(k, 128)
    if recipe is ScaleRecipe.TENSOR:
        return ((), (1,), (1, 1)), ((), (1,), (1, 1))
    if recipe is ScaleRecipe.CHANNEL:
        return ((m,), (m, 1)), ((n,), (1, n), (n, 1))
    return ((m, kb),), ((ceil_div(n, 128), kb),)


def dense_recipe(sa: Any, sb: Any, m: int, n: int, k: int, recipe: object) -> ScaleRecipe:
    """The scale recipe of a dense call: the one named, or the one whose SA and SB shapes these are (block first)."""
    for name, x in (("sa", sa), ("sb", sb)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor of float32 scales, got {type(x).__name__}")
        if x.dtype != torch.float32:
            raise TypeError(f"{name}: expected dtype torch.float32, got {x.dtype}")
    if recipe is not None:
        if isinstance(recipe, ScaleRecipe):
            chosen = recipe
        elif isinstance(recipe, str) and recipe in RECIPE_NAMES:
            chosen = RECIPE_NAMES[recipe]
        else:
            raise ValueError(f"recipe: expected one of {', '.join(sorted(RECIPE_NAMES))} (or None: inferred from the "
                             f"scale shapes), got {recipe!r}")
        if chosen not in RECIPE_NAMES.values():
            raise ValueError(f"recipe: {chosen.value} is not a recipe of fp8_gemm_nt")
        candidates = [chosen]
    else:
        candidates = [ScaleRecipe.A1x128_B128x128, ScaleRecipe.TENSOR, ScaleRecipe.CHANNEL]
    for r in candidates:
        sa_shapes, sb_shapes = _scale_shapes(r, m, n, k)
        if tuple(sa.shape) in sa_shapes and tuple(sb.shape) in sb_shapes:
            return r
    shapes = {r: _scale_shapes(r, m, n, k) for r in candidates}
    for name, x, i, other in (("sa", sa, 0, "sb"), ("sb", sb, 1, "sa")):  # the other one matched: name this one
        fits = [r for r in candidates if tuple((sb, sa)[i].shape) in shapes[r][1 - i]]
        if fits:
            want = " or ".join(f"{s} ({r.value})" for r in fits for s in shapes[r][i])
            raise ValueError(f"{name}: expected shape {want}, as {other}'s shape {tuple((sb, sa)[i].shape)} says; "
                             f"got {tuple(x.shape)}")
    wants = "; ".join(f"{r.value}: sa {' or '.join(map(str, s[0]))}, sb {' or '.join(map(str, s[1]))}"
                      for r, s in shapes.items())
    raise ValueError(f"sa, sb: shapes {tuple(sa.shape)} and {tuple(sb.shape)} match no scale recipe for M={m}, N={n}, "
                     f"K={k}; expected {wants}")


# fast_dense's result: the plain values one call needs, no dicts (see DenseCall in runtime/launch.py)
FastDense = tuple[int, int, int, int, int, int, int, int, int, int, int, int, int, int, int]


def fast_dense(a: Any, b: Any, out: Any, cuda: bool = True) -> FastDense | None:
    """fp8_gemm_nt's common call, checked in one flat pass: A and B e4m3 [M, K] / [N, K], out bf16 [M, N], SA
    [M, ceil(K/128)] in any layout (the TMA layout of per_token_cast_to_fp8 is loaded by tensor map, any other
    gathered), SB [ceil(N/128), ceil(K/128)] contiguous, A, B and out 16-byte aligned with their rows' elements
    adjacent and a row stride of at least the row that is a multiple of 16 bytes (operand_layout's rule), all on one
    CUDA device, M > 0. Returns (M, N, K, device, SA's M stride, SA's K stride, SA by TMA (0/1), the data pointers
    of A, SA, B, SB, out, and the row strides of A, B, out in elements) — what check_dense_scaled would return, flat
    (`fast_dense_operands` gives its form) — or None for anything else, which then takes the full checks (and their
    error messages): so this path accepts nothing they refuse. The full checks cost ~7 us of Python per call on a
    2-core CPU box (bench/NOTES.md, v0.5), more than a decode kernel. `cuda=False` skips only the device test (CPU
    unit tests)."""
    if type(a) is not tuple or type(b) is not tuple or len(a) != 2 or len(b) != 2:
        return None
    (x, sa), (w, sb) = a, b
    tensor_t = torch.Tensor  # isinstance, as the full checks: weights may come as nn.Parameter
    if not (isinstance(x, tensor_t) and isinstance(sa, tensor_t) and isinstance(w, tensor_t)
            and isinstance(sb, tensor_t) and isinstance(out, tensor_t)):
        return None
    e4m3, f32 = torch.float8_e4m3fn, torch.float32
    if x.dtype is not e4m3 or w.dtype is not e4m3 or out.dtype is not torch.bfloat16 or sa.dtype is not f32 \
            or sb.dtype is not f32:
        return None
    try:  # every operand 2-D (an unpack of another length raises; cheaper than five len() tests)
        (m, k), (n, wk), (om, on), (sam, sak), (sbn, sbk) = x.shape, w.shape, out.shape, sa.shape, sb.shape
    except ValueError:
        return None
    kb = (k + 127) // 128
    if (wk != k or om != m or on != n or m <= 0 or m > INT32_MAX or k <= 0 or k % 16 or n <= 0 or n % 8
            or sam != m or sak != kb or sbn != (n + 127) // 128 or sbk != kb):
        return None
    dev = x.get_device()
    if (cuda and not x.is_cuda) or w.get_device() != dev or out.get_device() != dev or sa.get_device() != dev \
            or sb.get_device() != dev:
        return None
    (xs, xs1), (ws, ws1), (ds, ds1) = x.stride(), w.stride(), out.stride()
    a_ld, d_ld = (xs, ds) if m > 1 else (k, n)  # one row: no row stride of its own (operand_layout)
    if (xs1 != 1 or ws1 != 1 or ds1 != 1 or a_ld < k or a_ld % 16 or ws < k or ws % 16 or d_ld < n or d_ld % 8
            or not sb.is_contiguous()):  # TMA: 16-byte multiples of e4m3 (A, B) and bf16 (out) row strides
        return None
    xp, wp, op = x.data_ptr(), w.data_ptr(), out.data_ptr()
    if xp % TMA_ADDRESS_ALIGN or wp % TMA_ADDRESS_ALIGN or op % TMA_ADDRESS_ALIGN:
        return None
    sm, sk = sa.stride()
    if (m - 1) * sm + (kb - 1) * sk > INT32_MAX:  # the gather's 32-bit offsets
        return None
    # SA in the TMA layout (quant.is_tma_aligned_scales) goes by tensor map; any other layout (row-major, strided)
    # is gathered by the producer through its strides: the same kernel, so the same fast path.
    sap = sa.data_ptr()
    tma = int(sm == 1 and (kb == 1 or sk == (m + 3) // 4 * 4) and sap % TMA_ADDRESS_ALIGN == 0)
    return m, n, k, dev, sm, sk, tma, xp, sap, wp, sb.data_ptr(), op, a_ld, ws, d_ld


def fast_dense_operands(a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor],
                        out: torch.Tensor, fast: FastDense) -> Operands:
    """A fast_dense result in the form check_dense_scaled returns (tensors by the plan's names, run-time values)."""
    m, n, _k, _dev, sm, sk, tma = fast[:7]
    a_ld, b_ld, d_ld = fast[12:]
    return ({"a": a[0], "sa": a[1], "b": b[0], "sb": b[1], "out": out},
            {"m": m, "g": 1, "sa_stride_m": sm, "sa_stride_k": sk, "sa_stride_g": 0, "sa_tma": tma,
             "a_ld": a_ld, "a_rows": m, "b_ld": b_ld, "b_rows": n, "out_ld": d_ld, "out_rows": m})


def check_dense(a: Any, sa: Any, b: Any, sb: Any, out: Any) -> Operands:
    """fp8_gemm_nt's operands, the scale recipe inferred from the scale shapes (see check_dense_scaled)."""
    tensors, env, _ = check_dense_scaled(a, sa, b, sb, out)
    return tensors, env


def check_dense_scaled(a: Any, sa: Any, b: Any, sb: Any, out: Any, recipe: object = None, out_scales: Any = None,
                       swiglu: bool = False) -> tuple[dict[str, torch.Tensor], dict[str, int], ScaleRecipe]:
    """fp8_gemm_nt: A [M, K], B [N, K], out [M, N] (N / 2 with swiglu; e4m3 with out_scales), and the scales of the
    recipe (`dense_recipe`): SA [M, ceil(K/128)] and SB [ceil(N/128), ceil(K/128)]; one scale each (tensor); SA [M]
    and SB [N] (channel)."""
    m, n, k = _a_and_b(a, b, FP8, _n_and_k)
    n_out = out_columns(n, swiglu)
    outs = (torch.bfloat16, torch.float8_e4m3fn) if swiglu else (torch.bfloat16, torch.float32, torch.float8_e4m3fn)
    _out(out, outs, (m, n_out), "a bfloat16" + ("" if swiglu else ", float32") + " or float8_e4m3fn tensor")
    ds_env, written = out_scales_of(out, out_scales)
    scales = dense_recipe(sa, sb, m, n, k, recipe)
    tensors = {"a": a, "sa": sa, "b": b, "sb": sb, "out": out, **written}
    if m == 0:  # nothing to compute: no launch, so no GPU needed (as documented)
        return tensors, {"m": 0, "g": 1}, scales
    maps = {**_layouts(1, out, a=a, b=b), **ds_env}
    if not scales.promotes:  # read by the epilogue as plain arrays (SB two columns at a time: 8-byte aligned)
        _on_gpu(a, {"a": a, "b": b, "out": out}, {"sb": sb, "sa": sa}, written)
        if scales is ScaleRecipe.CHANNEL and sb.data_ptr() % 8:
            raise ValueError(f"sb: per-channel scales are read two at a time: expected an 8-byte aligned data "
                             f"pointer, got 0x{sb.data_ptr():x}")
        return tensors, {"m": m, "g": 1, **maps}, scales
    _on_gpu(a, {"a": a, "b": b, "out": out}, {"sb": sb}, {"sa": sa, **written})
    return tensors, {"m": m, "g": 1, **maps, **_sa_env(sa, False)}, scales


def check_bf16(a: Any, b: Any, out: Any) -> Operands:
    """bf16_gemm_nt: A [M, K] and B [N, K] bfloat16 row-major, out [M, N] bfloat16 or float32."""
    m, n, _ = _a_and_b(a, b, torch.bfloat16, _bf16_n_and_k)
    _out(out, (torch.bfloat16, torch.float32), (m, n), "a bfloat16 or float32 tensor")
    if m == 0:
        return {"a": a, "b": b, "out": out}, {"m": 0, "g": 1}
    maps = _layouts(2, out, a=a, b=b)
    _on_gpu(a, {"a": a, "b": b, "out": out}, {})
    return {"a": a, "b": b, "out": out}, {"m": m, "g": 1, **maps}


def check_wgrad(a: Any, sa: Any, b: Any, sb: Any, out: Any) -> Operands:
    """fp8_gemm_nt_wgrad: A [M, K], SA [M, ceil(K/128)], B [N, K], SB [N, ceil(K/128)], out [M, N] float32."""
    m, n, k = _a_and_b(a, b, FP8, _n_and_k)
    _out(out, (torch.float32,), (m, n), "a float32 tensor (the weight gradient is summed in fp32)")
    tensor(sa, "sa", torch.float32, (m, ceil_div(k, 128)))
    if isinstance(sb, torch.Tensor) and tuple(sb.shape) == (ceil_div(n, 128), ceil_div(k, 128)):  # the likely slip
        raise ValueError(f"sb: expected shape {(n, ceil_div(k, 128))} (one scale per row of B per 128 columns of K: "
                         f"per_token_cast_to_fp8(w)), got {tuple(sb.shape)}, 128x128 block scales (use fp8_gemm_nt)")
    tensor(sb, "sb", torch.float32, (n, ceil_div(k, 128)))
    tensors = {"a": a, "sa": sa, "b": b, "sb": sb, "out": out}
    if m == 0:  # nothing to compute: no launch, so no GPU needed (as documented)
        return tensors, {"m": 0, "g": 1}
    maps = _layouts(1, out, a=a, b=b)
    _on_gpu(a, {"a": a, "b": b, "out": out}, {}, {"sa": sa, "sb": sb})
    return tensors, {"m": m, "g": 1, **maps, **_sa_env(sa, False), **_sb_env(sb)}


K_GROUPED_M_ALIGN = 64  # the smallest tile: a k-grouped M must be a multiple of it (tiles never straddle groups)
K_OFFSETS_CACHED = 1024  # distinct (device, ks) kept; the oldest unused one goes first
# (device, ks) -> int32 [G + 1] on that device, least recently used first. Entries a CUDA graph captured are moved to
# _K_OFFSETS_CAPTURED and never freed: a replay reads them by address.
_K_OFFSETS: OrderedDict[tuple[int, tuple[int, ...]], torch.Tensor] = OrderedDict()
_K_OFFSETS_CAPTURED: dict[tuple[int, tuple[int, ...]], torch.Tensor] = {}


def k_grouped_without_k(out: torch.Tensor, env: dict[str, int], accumulate: bool) -> torch.Tensor | None:
    """A k-grouped call whose groups all have K = 0 launches no kernel (a TMA map cannot describe 0 columns): D += 0
    leaves `out` as it is, D = 0 zeroes it; the public call and a kernel called directly both end here. None: there
    is a kernel to launch (or nothing at all to do: M = 0 or no groups)."""
    if env["m"] and env["g"] and not env["k"]:
        return out if accumulate else out.zero_()
    return None


def k_offsets(ks: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """The kernel's per-group k-block offsets (prefix sums of ks / 128) on `device`, made once per (device, ks): a
    training step repeats its group sizes, so the copy to the GPU is paid once. Each use records the current stream
    on the tensor, so an evicted entry's memory is not reused before the kernels that read it ran. Under CUDA-graph
    capture the tensor must exist already (a host-to-device copy cannot be captured): call once with the same `ks`
    before capturing; the captured entry is then kept for the life of the process."""
    key = (device.index if device.index is not None else -1, ks)
    capturing = torch.cuda.is_current_stream_capturing()
    hit = _K_OFFSETS_CAPTURED.get(key)
    if hit is None:
        hit = _K_OFFSETS.pop(key, None)
        if hit is None:
            if capturing:
                raise RuntimeError(f"ks: {list(ks)} was never used before this CUDA-graph capture; the group sizes "
                                   "must reach the GPU first: call k_grouped_fp8_gemm_nt_wgrad once with the same ks "
                                   "before capturing")
            offsets = [0, *itertools.accumulate(size // 128 for size in ks)]
            hit = torch.tensor(offsets, dtype=torch.int32, device=device)
        if capturing:
            _K_OFFSETS_CAPTURED[key] = hit
        else:
            _K_OFFSETS[key] = hit  # most recently used last
            while len(_K_OFFSETS) > K_OFFSETS_CACHED:
                _K_OFFSETS.popitem(last=False)
    if not capturing:
        hit.record_stream(torch.cuda.current_stream(device))
    return hit


def check_k_grouped(a: Any, sa: Any, b: Any, sb: Any, out: Any, ks: Any) -> Operands:
    """k_grouped_fp8_gemm_nt_wgrad: A [M, K] and B [N, K] with K = sum(ks), SA [M, K/128], SB [N, K/128],
    out [G, M, N] float32, ks G ints (multiples of 128, zero legal). "k_offsets" (int32 [G + 1] on the GPU) is added
    to the tensors; the run-time values are m = M, g = G, k = sum(ks), kb = k / 128 and the scales' strides."""
    if not isinstance(ks, (list, tuple)) or not all(is_int(x) for x in ks):
        raise TypeError(f"ks: expected a list of ints (each group's K), got {ks!r}")
    if any(x < 0 or x % 128 for x in ks):
        raise ValueError(f"ks: every group's K must be a multiple of 128 (whole 1x128 scale blocks) and >= 0, got "
                         f"{list(ks)}")
    if not isinstance(out, torch.Tensor) or out.dtype != torch.float32:
        got = out.dtype if isinstance(out, torch.Tensor) else type(out).__name__
        raise TypeError(f"out: expected a float32 tensor [G, M, N] (the weight gradients are summed in fp32), "
                        f"got {got}")
    tensor(out, "out", torch.float32, ndim=3)
    groups = len(ks)
    if out.shape[0] != groups:
        raise ValueError(f"out: expected {groups} groups along dim 0 (len(ks)), got shape {tuple(out.shape)}")
    tensor(a, "a", FP8)
    m, k = a.shape
    if k != sum(ks):
        raise ValueError(f"a: expected K = sum(ks) = {sum(ks)} columns (the groups concatenated along K), got "
                         f"shape {tuple(a.shape)}")
    tensor(b, "b", FP8)
    n = b.shape[0]
    if b.shape[1] != k:
        raise ValueError(f"b: expected shape (N, {k}) to match a's K={k}, got {tuple(b.shape)}")
    if n % 8 or n == 0:
        raise ValueError(f"b: N must be a positive multiple of 8 (TMA 16-byte rows of out), got N={n}")
    if m % K_GROUPED_M_ALIGN:
        raise ValueError(f"a: M must be a multiple of {K_GROUPED_M_ALIGN} (a tile of out [G, M, N] must not straddle "
                         f"two groups), got M={m}")
    _int32_rows("out", groups * m, "G * M")
    tensor(out, "out", torch.float32, (groups, m, n), ndim=3)
    tensor(sa, "sa", torch.float32, (m, k // 128))
    tensor(sb, "sb", torch.float32, (n, k // 128))
    tensors = {"a": a, "sa": sa, "b": b, "sb": sb, "out": out}
    if m == 0 or groups == 0:
        return tensors, {"m": m, "g": groups}
    maps = _layouts(1, out, a=a, b=b) if k else {}  # no group has K: nothing is launched (k_grouped_without_k)
    _on_gpu(a, {"a": a, "b": b, "out": out}, {}, {"sa": sa, "sb": sb})
    tensors["k_offsets"] = k_offsets(tuple(ks), a.device)
    env = {"m": m, "g": groups, "k": k, "kb": k // 128, **maps, **_sa_env(sa, False), **_sb_env(sb)}
    return tensors, env


def _grouped_b(b: Any, sb: Any, k: int, a_groups: int | None = None) -> tuple[int, int]:
    tensor(b, "b", FP8, ndim=3)
    groups, n = b.shape[0], b.shape[1]
    if a_groups is not None and groups != a_groups:
        raise ValueError(f"b: expected {a_groups} groups along dim 0 (as a has), got shape {tuple(b.shape)}")
    if b.shape[2] != k:
        raise ValueError(f"b: expected shape (G, N, {k}) to match a's K={k}, got {tuple(b.shape)}")
    _n_and_k(n, k)
    tensor(sb, "sb", torch.float32, ndim=3)
    _groups("sb", sb, groups)
    tensor(sb, "sb", torch.float32, (groups, ceil_div(n, 128), ceil_div(k, 128)), ndim=3)
    _int32_rows("b", groups * n, "G * N")
    return groups, n


def _contiguous_rows(m: int) -> None:
    if m % CONTIGUOUS_ALIGNMENT:
        raise ValueError(f"a: M_total = {m} rows must be a multiple of get_m_alignment_for_contiguous_layout() = "
                         f"{CONTIGUOUS_ALIGNMENT} (pad every expert's segment; gemmgen.contiguous_layout does)")


def _contiguous_out(out: Any, m: int, n: int, m_indices: Any, fp8_ok: bool = False) -> None:
    """out [M_total, N] bf16 (the row-predicated store of partial tiles writes pairs; the FP8 calls: or e4m3),
    m_indices [M_total]."""
    outs = (torch.bfloat16, torch.float8_e4m3fn) if fp8_ok else torch.bfloat16
    if isinstance(out, torch.Tensor) and out.dtype == torch.float32:  # the likely slip: fp32 out as the dense calls
        raise TypeError(f"out: expected dtype torch.bfloat16{' or float8_e4m3fn' if fp8_ok else ''} (grouped calls "
                        "store their partial tiles as pairs of those), got torch.float32")
    tensor(out, "out", outs, (m, n))
    tensor(m_indices, "m_indices", torch.int32, (m,), ndim=1)


def check_contiguous(a: Any, sa: Any, b: Any, sb: Any, out: Any, m_indices: Any, out_scales: Any = None,
                     swiglu: bool = False) -> Operands:
    """m_grouped_fp8_gemm_nt_contiguous: A [M_total, K], B [G, N, K], out [M_total, N] (N / 2 with swiglu; e4m3 with
    out_scales), m_indices [M_total]."""
    tensor(a, "a", FP8)
    m, k = a.shape
    _int32_rows("a", m, "M_total")
    groups, n = _grouped_b(b, sb, k)
    _contiguous_rows(m)
    tensor(sa, "sa", torch.float32, (m, ceil_div(k, 128)))
    _contiguous_out(out, m, out_columns(n, swiglu), m_indices, fp8_ok=True)
    ds_env, written = out_scales_of(out, out_scales)
    tensors = {"a": a, "sa": sa, "b": b, "sb": sb, "out": out, "m_indices": m_indices, **written}
    if m == 0:
        return tensors, {"m": 0, "g": groups}
    maps = _layouts(1, out, a=a, b=b)
    _on_gpu(a, {"a": a, "b": b, "out": out}, {"sb": sb, "m_indices": m_indices}, {"sa": sa, **written})
    return tensors, {"m": m, "g": groups, **maps, **ds_env, **_sa_env(sa, False)}


def _bf16_grouped_b(b: Any, k: int, a_groups: int | None = None) -> tuple[int, int]:
    """B [G, N, K] bfloat16 of a grouped bf16 call (G as a has, where a is grouped too): (G, N)."""
    tensor(b, "b", torch.bfloat16, ndim=3)
    groups, n = b.shape[0], b.shape[1]
    if a_groups is not None and groups != a_groups:
        raise ValueError(f"b: expected {a_groups} groups along dim 0 (as a has), got shape {tuple(b.shape)}")
    if b.shape[2] != k:
        raise ValueError(f"b: expected shape (G, N, {k}) to match a's K={k}, got {tuple(b.shape)}")
    _bf16_n_and_k(n, k)
    _int32_rows("b", groups * n, "G * N")
    return groups, n


def _masked_out(out: Any, masked_m: Any, groups: int, m: int, n: int, fp8_ok: bool = False) -> None:
    """The masked layout's out [G, M_max, N] bfloat16 (the FP8 calls: or e4m3) and masked_m [G] int32; G * M_max rows
    within int32."""
    outs = (torch.bfloat16, torch.float8_e4m3fn) if fp8_ok else torch.bfloat16
    tensor(out, "out", outs, ndim=3)
    _groups("out", out, groups)
    tensor(out, "out", outs, (groups, m, n), ndim=3)
    tensor(masked_m, "masked_m", torch.int32, (groups,), ndim=1)
    _int32_rows("a", groups * m, "G * M_max")


def check_bf16_contiguous(a: Any, b: Any, out: Any, m_indices: Any) -> Operands:
    """m_grouped_bf16_gemm_nt_contiguous: A [M_total, K] and B [G, N, K] bfloat16 row-major, out [M_total, N]
    bfloat16, m_indices [M_total] int32 (on the GPU)."""
    tensor(a, "a", torch.bfloat16)
    m, k = a.shape
    _int32_rows("a", m, "M_total")
    groups, n = _bf16_grouped_b(b, k)
    _contiguous_rows(m)
    _contiguous_out(out, m, n, m_indices)
    tensors = {"a": a, "b": b, "out": out, "m_indices": m_indices}
    if m == 0:
        return tensors, {"m": 0, "g": groups}
    maps = _layouts(2, out, a=a, b=b)
    _on_gpu(a, {"a": a, "b": b, "out": out}, {"m_indices": m_indices})
    return tensors, {"m": m, "g": groups, **maps}


def check_bf16_masked(a: Any, b: Any, out: Any, masked_m: Any) -> Operands:
    """m_grouped_bf16_gemm_nt_masked: A [G, M_max, K] and B [G, N, K] bfloat16 row-major, out [G, M_max, N]
    bfloat16, masked_m [G] int32 (on the GPU)."""
    tensor(a, "a", torch.bfloat16, ndim=3)
    groups, m, k = a.shape
    _, n = _bf16_grouped_b(b, k, groups)
    _masked_out(out, masked_m, groups, m, n)
    tensors = {"a": a, "b": b, "out": out, "masked_m": masked_m}
    if m == 0 or groups == 0:
        return tensors, {"m": m, "g": groups}
    maps = _layouts(2, out, a=a, b=b)
    _on_gpu(a, {"a": a, "b": b, "out": out}, {"masked_m": masked_m})
    return tensors, {"m": m, "g": groups, **maps}


def check_masked(a: Any, sa: Any, b: Any, sb: Any, out: Any, masked_m: Any, out_scales: Any = None,
                 swiglu: bool = False) -> Operands:
    """m_grouped_fp8_gemm_nt_masked: A [G, M_max, K], B [G, N, K], out [G, M_max, N] (N / 2 with swiglu; e4m3 with
    out_scales [G, M_max, ceil(N_out/128)]), masked_m [G] (on the GPU)."""
    tensor(a, "a", FP8, ndim=3)
    groups, m, k = a.shape
    _, n = _grouped_b(b, sb, k, groups)
    tensor(sa, "sa", torch.float32, ndim=3)
    _groups("sa", sa, groups)
    tensor(sa, "sa", torch.float32, (groups, m, ceil_div(k, 128)), ndim=3)
    _masked_out(out, masked_m, groups, m, out_columns(n, swiglu), fp8_ok=True)
    ds_env, written = out_scales_of(out, out_scales)
    tensors = {"a": a, "sa": sa, "b": b, "sb": sb, "out": out, "masked_m": masked_m, **written}
    if m == 0 or groups == 0:
        return tensors, {"m": m, "g": groups}
    maps = _layouts(1, out, a=a, b=b)
    _on_gpu(a, {"a": a, "b": b, "out": out}, {"sb": sb, "masked_m": masked_m}, {"sa": sa, **written})
    return tensors, {"m": m, "g": groups, **maps, **ds_env, **_sa_env(sa, True)}


CHECKS: dict[GemmKind, Callable[..., Operands]] = {  # the grouped kinds' (checks_for decides the others itself)
    GemmKind.M_GROUPED_CONTIGUOUS: check_contiguous,
    GemmKind.M_GROUPED_MASKED: check_masked,
}
# The torch dtype of each input DType the kernels read, and of each D they write (api maps the other way to pick a
# kernel).
TORCH_DTYPES = {DType.E4M3: torch.float8_e4m3fn, DType.E5M2: torch.float8_e5m2, DType.BF16: torch.bfloat16}
TORCH_OUT_DTYPES = {DType.BF16: torch.bfloat16, DType.FP32: torch.float32, DType.E4M3: torch.float8_e4m3fn}


def checks_for(problem: GemmProblem) -> Callable[..., Operands]:
    """The argument check of the public call a built kernel belongs to (BuiltKernel.__call__ takes its arguments)."""
    if problem.kind is GemmKind.K_GROUPED:
        return check_k_grouped
    if problem.scales is ScaleRecipe.A1x128_B1x128:
        return check_wgrad
    if problem.scales is ScaleRecipe.NONE:
        return {GemmKind.M_GROUPED_CONTIGUOUS: check_bf16_contiguous,
                GemmKind.M_GROUPED_MASKED: check_bf16_masked}.get(problem.kind, check_bf16)
    if problem.kind is GemmKind.NORMAL:  # the kernel's recipe: SA and SB must have its shapes

        def dense(a: Any, sa: Any, b: Any, sb: Any, out: Any, out_scales: Any = None) -> Operands:
            tensors, env, _ = check_dense_scaled(a, sa, b, sb, out, problem.scales, out_scales, problem.swiglu)
            return tensors, env

        return dense
    return functools.partial(CHECKS[problem.kind], swiglu=problem.swiglu)  # out_scales: the last argument
