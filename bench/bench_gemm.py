"""Benchmark gemmgen against its peers in one run, into the results file (docs/BENCHMARKING.md), then the report
(bench/report.py: bench.md, and bench.png where matplotlib is installed) beside it. Sections:

  1 prefill: dense M in {64, 128, 4096} x the six DeepSeek (N, K) pairs, and 8192^3 (kernel TFLOPS)
  2 decode:  dense M in {1, 8, 32} x the seven (N, K) pairs (kernel us and TB/s)
  3 grouped: the twelve MoE grouped cases against a per-expert cuBLASLt loop (group sizes known on the host)
  4 host:    per-call host cost of an enqueue loop: same tensors, 100 rotating buffer sets, a row-major SA
  5 recipes: dense M = 4096 x the six (N, K) pairs and 8192^3: gemmgen block-scaled e4m3 and e5m2 (A, B both), recipe
             "tensor" against cuBLASLt tensorwise and "channel" against cuBLASLt rowwise (torch._scaled_mm)
  6 bf16:    gemmgen.bf16_gemm_nt against torch.matmul (cuBLAS) on the 19 prefill shapes
  7 wgrad:   gemmgen.fp8_gemm_nt_wgrad (out [M, N] fp32 += A.B^T, 1x128 scales on both) on six M x N at K 4096 and
             8192, and gemmgen.k_grouped_fp8_gemm_nt_wgrad on six groups x M x N cases (equal K per group);
             with --deepgemm, DeepGEMM's wgrad and k-grouped calls side by side; each row also carries DeepGEMM's
             kernel TFLOPS on an H200 as "bar" (docs/BENCHMARKING.md, "Training GEMMs")

Dense peers: cuBLASLt block-scaled FP8 (torch.nn.functional.scaled_mm, BlockWise1x128 / BlockWise128x128),
cuBLASLt per-tensor FP8 (torch._scaled_mm, use_fast_accum=True), cuBLAS bf16 (torch.matmul), and with
`--deepgemm DIR` DeepGEMM (dense, grouped and wgrad; bench/deepgemm_peer.py). Every kernel a call launches is counted; a
peer that refuses or fails gets a row with "error" and the run goes on. Sections 5-7 look their gemmgen entry
points up at run time: one this gemmgen lacks is reported as "skipped: gemmgen has no X" and gives no rows. The
default is 1-4; `--sections all` (or 5,6,7, or their names) adds the others.

    PYTHONPATH=. python bench/bench_gemm.py --out bench/results/DATE-COMMIT/bench.json [--sections 1,2,3,4]
        [--shape MxNxK ...] [--quick] [--deepgemm DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import inspect
import io
import itertools
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import common  # noqa: E402
import deepgemm_peer  # noqa: E402
import report  # noqa: E402
from common import call_seconds, enqueue_us, env_info, error_row, kernel_seconds, row, write_json  # noqa: E402
from shapes import BENCH_SHAPES  # noqa: E402

import gemmgen  # noqa: E402
from gemmgen.ir import DType, ceil_div  # noqa: E402
from gemmgen.quant import calc_diff, dequantize_a, dequantize_b  # noqa: E402

# The grouped cases of docs/BENCHMARKING.md (DeepGEMM's test set): (layout, groups, expected rows per group, N, K);
# masked M_max = 4096.
GROUPED_CASES = [(layout, g, m, n, k) for layout, g, m in (("contiguous", 4, 8192), ("contiguous", 8, 4096),
                                                           ("contiguous", 32, 256), ("masked", 1, 1024),
                                                           ("masked", 2, 512), ("masked", 4, 256))
                 for n, k in ((4096, 7168), (7168, 2048))]
MASKED_M_MAX = 4096
# The fixed bars of docs/BENCHMARKING.md (the best of three runs of DeepGEMM or cuBLASLt block-scaled; the targets of
# sections 1 and 3 are stated against them): dense prefill (M, N, K) and grouped (layout, groups, expected rows, N,
# K) -> kernel TFLOPS. gemmgen's rows carry theirs as "bar"; the report counts gemmgen against them.
PREFILL_BARS = {(64, 2112, 7168): 183, (64, 24576, 1536): 298, (64, 32768, 512): 247, (64, 7168, 16384): 393,
                (64, 4096, 7168): 260, (64, 7168, 2048): 242, (128, 2112, 7168): 340, (128, 24576, 1536): 552,
                (128, 32768, 512): 437, (128, 7168, 16384): 616, (128, 4096, 7168): 461, (128, 7168, 2048): 418,
                (4096, 2112, 7168): 1160, (4096, 24576, 1536): 1329, (4096, 32768, 512): 1008,
                (4096, 7168, 16384): 1505, (4096, 4096, 7168): 1453, (4096, 7168, 2048): 1278,
                (8192, 8192, 8192): 1457}
GROUPED_BARS = {("contiguous", 4, 8192, 4096, 7168): 1402, ("contiguous", 4, 8192, 7168, 2048): 1292,
                ("contiguous", 8, 4096, 4096, 7168): 1377, ("contiguous", 8, 4096, 7168, 2048): 1280,
                ("contiguous", 32, 256, 4096, 7168): 993, ("contiguous", 32, 256, 7168, 2048): 938,
                ("masked", 1, 1024, 4096, 7168): 1087, ("masked", 1, 1024, 7168, 2048): 992,
                ("masked", 2, 512, 4096, 7168): 779, ("masked", 2, 512, 7168, 2048): 877,
                ("masked", 4, 256, 4096, 7168): 698, ("masked", 4, 256, 7168, 2048): 719}
SEED = 2026
DEVICE = "cuda"  # the dense and host sections' tensors (a CPU dry run of the bench logic may replace it)

PREFILL_SHAPES = list(BENCH_SHAPES)  # 19: M in {64, 128, 4096} x six (N, K), and 8192x8192x8192
DECODE_NK = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048), (576, 7168)]
DECODE_SHAPES = [(m, n, k) for m in (1, 8, 32) for n, k in DECODE_NK]  # 21
DECODE_MAX_M = 32  # a --shape with M at or below this runs in the decode section, above it in prefill
HOST_SHAPES = [(64, 7168, 2048), (4096, 7168, 2048)]
HOST_SETS, HOST_CALLS = 100, 200  # rotating buffer sets (a new address in the A, SA and out maps every call)
SECTION_NAMES = {"1": "prefill", "2": "decode", "3": "grouped", "4": "host", "5": "recipes", "6": "bf16",
                 "7": "wgrad"}
SECTION_ALIASES = {"prefill": "1", "dense": "1", "decode": "2", "grouped": "3", "host": "4", "recipes": "5",
                   "recipe": "5", "bf16": "6", "wgrad": "7", "k_grouped_wgrad": "7"}
DEFAULT_SECTIONS = "1,2,3,4"  # 5-7 on request (--sections 5,6,7 or all): they add minutes to a full run
BLOCKWISE = "torch.nn.functional.scaled_mm BlockWise1x128/128x128"
RECIPE_BLOCK = "1x128/128x128"  # the schema's label of the block recipe (docs/BENCHMARKING.md)


def dense_bytes(m: int, n: int, k: int) -> int:
    """A + B (e4m3) + D (bf16) + the block scales (fp32): the bytes an FP8 block-scaled GEMM must move."""
    return m * k + n * k + 2 * m * n + 4 * m * ceil_div(k, 128) + 4 * ceil_div(n, 128) * ceil_div(k, 128)


# cuBLASLt block-scaled: scaled_mm takes B as b.t() [K, N], so its 128x128 scales are [K/128, N/128]; SA is
# [M, K/128] M-major. The layouts tried, in order: (label, SA of the call, SB of the call).
BLOCKWISE_LAYOUTS: list[tuple[str, Callable, Callable]] = [
    ("SA M-major 4-aligned", lambda sa: gemmgen.tma_aligned_scales(sa), lambda sb: sb.t()),
    ("SA M-major", lambda sa: sa.t().contiguous().t(), lambda sb: sb.t()),
    ("SA M-major, SB^T contiguous", lambda sa: sa.t().contiguous().t(), lambda sb: sb.t().contiguous()),
    ("SA row-major, SB^T contiguous", lambda sa: sa.contiguous(), lambda sb: sb.t().contiguous()),
]


def _scaled_mm_blockwise(a, b, s_a, s_b):
    from torch.nn.functional import ScalingType, scaled_mm

    return scaled_mm(a, b.t(), s_a, ScalingType.BlockWise1x128, s_b, ScalingType.BlockWise128x128,
                     output_dtype=torch.bfloat16)


def cublas_blockwise_setup(a, sa, b, sb, layouts=None) -> tuple[Callable[[], torch.Tensor], str]:
    """torch's block-scaled FP8 (cuBLASLt) with the first scale layout it accepts: (callable, layout label).
    Raises RuntimeError naming the last refusal when it accepts none."""
    err: BaseException | None = None
    for label, sa_of, sb_of in layouts or BLOCKWISE_LAYOUTS:
        try:
            s_a, s_b = sa_of(sa), sb_of(sb)

            def fn(s_a=s_a, s_b=s_b):
                return _scaled_mm_blockwise(a, b, s_a, s_b)
            fn()
            return fn, label
        except Exception as exc:  # noqa: BLE001 - try the next layout
            err = exc
    raise RuntimeError(f"cuBLASLt block-scaled refused every scale layout; last: {type(err).__name__}: {err}")


def cublas_blockwise(a, sa, b, sb):
    """torch's block-scaled FP8 (cuBLASLt) with a layout it accepts, as a callable; None if unavailable."""
    try:
        return cublas_blockwise_setup(a, sa, b, sb)[0]
    except RuntimeError as exc:
        print(f"  {str(exc)[:200]}")
        return None


def scaled_mm_call(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor,
                   scale_b: torch.Tensor) -> Callable[[], torch.Tensor]:
    """cuBLASLt FP8 through torch._scaled_mm, A @ B^T into bf16 with fast accumulation: per-tensor (0-dim scales) or
    rowwise ([M, 1] and [1, N] scales)."""
    return lambda: torch._scaled_mm(a, b.t(), scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16,
                                    use_fast_accum=True)


def per_tensor_cast_to_fp8(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """e4m3 with one fp32 scale for the whole tensor (amax / 448), the per-tensor recipe."""
    scale = (x.abs().amax().float().clamp(min=1e-4) / 448.0).reshape(())
    return (x.float() / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn), scale


# Which implementation of a shape is measured first: pass p starts at the p-th (run_sections sets it). The first one
# measured after the previous shape's last ran slow under the power cap: gemmgen, always first, took 55-56 us on
# masked 1 x 1024 x 4096 x 7168 in two of three passes where its launches alone take 45.6 (p90 46.2) and the peers
# measured after it stayed level (bench/NOTES.md v0.19).
ROTATION = 0
# Idle seconds before each implementation of a heavy shape (--settle-impl-s). A rotation keeps the cyclic order, so
# an implementation follows the same one in every pass but the one it leads: in 2026-12-01-fc63b52-rotated gemmgen,
# right after DeepGEMM (the last peer of sections 1 and 3), ran 4096x7168x16384 in 774-777 us against 656 measured
# first, and contiguous 4 x 8192 x 4096 x 7168 in 1651-1660 against 1497, while DeepGEMM's passes stayed within 1%.
# What ran just before sets the clock the 700 W cap leaves (bench/NOTES.md v0.14, v0.20), so each implementation of a
# heavy shape starts from an idle GPU instead.
IMPL_SETTLE_S = 0.0
HEAVY_FLOPS = 1e11  # a call this large runs at the power cap: M = 4096 prefill, 8192^3, contiguous grouped


def in_rotated_order(measures: dict[str, Callable[[], dict]], flops: float = 0.0) -> list[dict]:
    """Each implementation's row, measured starting at the ROTATION-th, returned in the dict's order; at `flops` >=
    HEAVY_FLOPS each after an idle pause of IMPL_SETTLE_S."""
    names = list(measures)
    start = ROTATION % len(names)
    rows = {}
    for name in names[start:] + names[:start]:
        if DEVICE == "cuda" and IMPL_SETTLE_S > 0 and flops >= HEAVY_FLOPS:
            torch.cuda.synchronize()
            time.sleep(IMPL_SETTLE_S)
        rows[name] = measures[name]()
    return [rows[name] for name in names]


def _measure(kind: str, impl: str, shape: tuple[int, int, int], setup: Callable, *, flops: float, nbytes: float,
             ref: torch.Tensor, reset: Callable | None = None, **extra) -> dict:
    """One implementation's row: `setup()` -> (callable returning the result, config, reference of its dequantised
    inputs or None, extra fields). A config of None names the kernels the profiler saw. `reset` (an accumulating
    call's out.zero_) runs before the one call whose result is checked, which comes before the timed calls. A
    refusal or failure anywhere becomes an error row."""
    m, n, k = shape
    try:
        fn, config, ref_dequant, more = setup()
        extra.update(more)
        if reset is not None:
            reset()
        result = fn()
        diff = calc_diff(result, ref)
        if ref_dequant is not None:
            extra["calc_diff_dequant"] = calc_diff(result, ref_dequant)
        secs, kernels = kernel_seconds(fn)
        return row(kind, impl, m, n, k, secs, flops, nbytes, call_us=call_seconds(fn) * 1e6, calc_diff=diff,
                   config=config or " + ".join(kernels), kernels=kernels, **extra)
    except Exception as exc:  # noqa: BLE001 - one failing implementation must not end the run
        if isinstance(exc, torch.cuda.OutOfMemoryError):
            torch.cuda.empty_cache()
        return error_row(kind, impl, m, n, k, exc, **extra)


def dense_rows(m: int, n: int, k: int, section: str = "prefill") -> list[dict]:
    """gemmgen and the three dense peers on one shape. calc_diff is against the float64 product of the bf16 inputs
    (every impl, so they compare); calc_diff_dequant against the float64 product of the impl's own dequantised
    FP8 inputs (the kernel's error alone)."""
    torch.manual_seed(SEED + m + n + k)
    x = torch.randn(m, k, device=DEVICE, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=DEVICE, dtype=torch.bfloat16)
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    b, sb = gemmgen.per_block_cast_to_fp8(w)
    out = torch.empty(m, n, device=DEVICE, dtype=torch.bfloat16)
    ref = x.double() @ w.double().t()
    flops, nbytes = 2 * m * n * k, dense_bytes(m, n, k)
    deq: dict[str, torch.Tensor] = {}

    def block_ref() -> torch.Tensor:
        if "block" not in deq:
            deq["block"] = dequantize_a(a, sa) @ dequantize_b(b, sb).t()
        return deq["block"]

    def gemmgen_setup():
        name = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0)).name
        bar = {"bar": PREFILL_BARS.get((m, n, k))} if section == "prefill" else {}
        return (lambda: gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)), name, block_ref(), {"recipe": RECIPE_BLOCK, **bar}

    def blockwise_setup():
        fn, label = cublas_blockwise_setup(a, sa, b, sb)
        return fn, f"{BLOCKWISE} ({label})", block_ref(), {"recipe": RECIPE_BLOCK}

    def tensorwise_setup():
        at, sx = per_tensor_cast_to_fp8(x)
        bt, sw = per_tensor_cast_to_fp8(w)
        ref_t = (at.double() * sx.double()) @ (bt.double() * sw.double()).t()
        label = "torch._scaled_mm per-tensor, use_fast_accum=True"
        return scaled_mm_call(at, bt, sx, sw), label, ref_t, {"recipe": "per-tensor"}

    def bf16_setup():
        return (lambda: torch.matmul(x, w.t())), "torch.matmul bf16", None, {"dtype": "bf16"}

    def deepgemm_setup():
        return deepgemm_peer.dense(a, sa, b, sb, torch.empty_like(out)), None, block_ref(), {"recipe": RECIPE_BLOCK}

    setups = {"gemmgen": gemmgen_setup, "cublaslt_blockwise": blockwise_setup,
              "cublaslt_tensorwise": tensorwise_setup, "cublas_bf16": bf16_setup}
    if deepgemm_peer.loaded():
        setups["deepgemm"] = deepgemm_setup
    common_fields = {"section": section, "dtype": "e4m3", "out_dtype": "bf16"}
    return in_rotated_order({impl: functools.partial(_measure, "dense", impl, (m, n, k), setup, flops=flops,
                                                     nbytes=nbytes, ref=ref, **common_fields)
                             for impl, setup in setups.items()}, flops)


def host_rows(m: int, n: int, k: int) -> list[dict]:
    """Section 4: the host cost per call of gemmgen (and cuBLASLt block-scaled where it runs) in an enqueue loop of
    HOST_CALLS calls, in three cases: the same tensors every call; HOST_SETS rotating sets of A, SA and out with B
    fixed (new pointers: tensor maps re-encoded); the same with SA row-major [M, ceil(K/128)] contiguous (converted
    on every call). Kernel and call times of the same loop's calls are kept beside it."""
    torch.manual_seed(SEED + m + n + k)
    x = torch.randn(m, k, device=DEVICE, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=DEVICE, dtype=torch.bfloat16)
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    b, sb = gemmgen.per_block_cast_to_fp8(w)
    ref = x.double() @ w.double().t()
    flops, nbytes = 2 * m * n * k, dense_bytes(m, n, k)
    sets_a = [a.clone() for _ in range(HOST_SETS)]
    sets_sa = [gemmgen.tma_aligned_scales(sa.contiguous()) for _ in range(HOST_SETS)]  # fresh aligned buffers
    sets_sa_rows = [sa.contiguous() for _ in range(HOST_SETS)]  # row-major [M, KB]
    sets_out = [torch.empty(m, n, device=DEVICE, dtype=torch.bfloat16) for _ in range(HOST_SETS)]
    out = sets_out[0]
    try:
        name = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0)).name
    except Exception as exc:  # noqa: BLE001
        name = f"? ({type(exc).__name__})"

    def gg(a_, sa_, out_):
        return lambda: gemmgen.fp8_gemm_nt((a_, sa_), (b, sb), out_)

    cases = {"same_tensors": lambda: [gg(a, sa, out)],
             "new_pointers": lambda: [gg(*s) for s in zip(sets_a, sets_sa, sets_out, strict=True)],
             "row_major_sa": lambda: [gg(*s) for s in zip(sets_a, sets_sa_rows, sets_out, strict=True)]}
    impls: dict[str, tuple[Callable, str]] = {"gemmgen": (lambda case: cases[case](), name)}

    try:
        _, label = cublas_blockwise_setup(a, sa, b, sb)
        _, sa_of, sb_of = next(lay for lay in BLOCKWISE_LAYOUTS if lay[0] == label)
        s_b = sb_of(sb)

        def cub(a_, s_a, s_b=s_b):
            return lambda: _scaled_mm_blockwise(a_, b, s_a, s_b)

        def cub_row_major():
            # A row-major SA as given: the first SB layout cuBLASLt takes with it, else the refusal.
            for sb_try in (s_b, sb.t().contiguous()):
                try:
                    _scaled_mm_blockwise(sets_a[0], b, sets_sa_rows[0], sb_try)
                except Exception as exc:  # noqa: BLE001
                    err = exc
                    continue
                return [cub(a_, s, sb_try) for a_, s in zip(sets_a, sets_sa_rows, strict=True)]
            raise RuntimeError(f"cuBLASLt block-scaled refused a row-major SA: {type(err).__name__}: {err}")

        cub_cases = {"same_tensors": lambda: [cub(a, sa_of(sa))],
                     "new_pointers": lambda: [cub(a_, sa_of(s)) for a_, s in zip(sets_a, sets_sa, strict=True)],
                     "row_major_sa": cub_row_major}
        impls["cublaslt_blockwise"] = (lambda case: cub_cases[case](), f"{BLOCKWISE} ({label})")
        cub_error = None
    except Exception as exc:  # noqa: BLE001
        cub_error = exc

    rows = []
    for impl, (calls_of, config) in impls.items():
        for case in cases:
            extra = {"case": case, "config": config, "recipe": RECIPE_BLOCK, "dtype": "e4m3", "out_dtype": "bf16"}
            try:
                calls = calls_of(case)
                diff = calc_diff(calls[0](), ref)
                per_call, synced = enqueue_us(calls, HOST_CALLS)
                cycle = itertools.cycle(calls)

                def rotating(cycle=cycle):
                    return next(cycle)()
                secs, kernels = kernel_seconds(rotating)
                rows.append(row("host", impl, m, n, k, secs, flops, nbytes, call_us=call_seconds(rotating) * 1e6,
                                calc_diff=diff, us_per_call=per_call, synced_us_per_call=synced, sets=len(calls),
                                calls=HOST_CALLS, kernels=kernels, **extra))
            except Exception as exc:  # noqa: BLE001
                rows.append(error_row("host", impl, m, n, k, exc, us_per_call=None, **extra))
    if cub_error is not None:
        for case in cases:
            rows.append(error_row("host", "cublaslt_blockwise", m, n, k, cub_error, us_per_call=None, case=case,
                                  config=BLOCKWISE, recipe=RECIPE_BLOCK))
    rows.append(host_floor_row(m, n, k))
    return rows


def host_floor_row(m: int, n: int, k: int) -> dict:
    """torch's own one-kernel call (small.add_(1)) in the same enqueue loop, measured right after the cases: the
    host's floor at that moment. The host's speed moves up to 1.8x within minutes (bench/NOTES.md v0.29 section 3), so
    a row of us per call reads against this, not alone. Filed under the same_tensors case of the shape."""
    small = torch.zeros(16, device=DEVICE)

    def call() -> torch.Tensor:
        return small.add_(1)
    extra = {"case": "same_tensors", "config": "torch small.add_(1)"}
    try:
        per_call, synced = enqueue_us([call], HOST_CALLS)
        secs, kernels = kernel_seconds(call)
        return row("host", "torch_floor", m, n, k, secs, 0.0, 0.0, call_us=call_seconds(call) * 1e6,
                   us_per_call=per_call, synced_us_per_call=synced, sets=1, calls=HOST_CALLS, kernels=kernels,
                   **extra)
    except Exception as exc:  # noqa: BLE001
        return error_row("host", "torch_floor", m, n, k, exc, us_per_call=None, **extra)


def _sizes(groups: int, expected: int, gen: torch.Generator, cap: int | None = None) -> list[int]:
    sizes = [int(expected * (0.7 + 0.6 * torch.rand(1, generator=gen).item())) for _ in range(groups)]
    return [min(s, cap) for s in sizes] if cap else sizes


@dataclass
class GroupedCase:
    """One grouped case's inputs, prepared once: `call(config)` runs gemmgen on them; `segments` are the
    (group, rows) of valid rows, `rows_of(t, g, s)` cuts them out of A-shaped tensors."""

    layout: str
    groups: int
    expected: int
    sizes: list[int]
    x: torch.Tensor
    w: torch.Tensor
    a: torch.Tensor
    sa: torch.Tensor
    b: torch.Tensor
    sb: torch.Tensor
    out: torch.Tensor
    m_rows: int  # rows of A (M_total, or G * M_max)
    grouped_layout: torch.Tensor  # m_indices or masked_m
    segments: list[tuple[int, slice]]
    padding: int = 1  # rows per expert rounded up to this for cuBLASLt (the bench's loop; 1 = none)

    def rows_of(self, t: torch.Tensor, g: int, s: slice) -> torch.Tensor:
        return t[s] if self.layout == "contiguous" else t[g][s]

    def call(self, config: dict | None = None) -> torch.Tensor:
        operands = ((self.a, self.sa), (self.b, self.sb), self.out, self.grouped_layout)
        if self.layout == "contiguous":
            return gemmgen.m_grouped_fp8_gemm_nt_contiguous(*operands, config=config)
        return gemmgen.m_grouped_fp8_gemm_nt_masked(*operands, self.expected, config=config)

    def kernel_name(self, config: dict | None = None) -> str:
        kinds = gemmgen.GemmKind
        kind = kinds.M_GROUPED_CONTIGUOUS if self.layout == "contiguous" else kinds.M_GROUPED_MASKED
        m = self.m_rows if self.layout == "contiguous" else self.expected
        return gemmgen.get_kernel(m, self.b.shape[1], self.b.shape[2], gemmgen.api.device_target(0), config,
                                  kind=kind, groups=self.groups).name


def grouped_case(layout: str, groups: int, expected: int, n: int, k: int,
                 sizes: list[int] | None = None) -> GroupedCase:
    """The bench's case: rows per expert drawn from its seed, or `sizes` where given (ab_grouped_configs)."""
    gen = torch.Generator().manual_seed(SEED + groups * 7 + n)
    sizes = sizes or _sizes(groups, expected, gen, MASKED_M_MAX if layout == "masked" else None)
    w = torch.randn(groups, n, k, device="cuda", dtype=torch.bfloat16)
    b, sb = gemmgen.per_block_cast_to_fp8(w)
    if layout == "contiguous":
        lay = gemmgen.contiguous_layout(sizes, device="cuda")
        x = lay.scatter(torch.randn(sum(sizes), k, device="cuda", dtype=torch.bfloat16))
        out = torch.empty(lay.m_total, n, device="cuda", dtype=torch.bfloat16)
        segments = [(g, slice(o, o + c)) for g, (c, o) in enumerate(zip(sizes, lay.offsets, strict=True)) if c]
        m_rows, grouped_layout = lay.m_total, lay.m_indices
    else:
        x = torch.randn(groups, MASKED_M_MAX, k, device="cuda", dtype=torch.bfloat16)
        out = torch.empty(groups, MASKED_M_MAX, n, device="cuda", dtype=torch.bfloat16)
        segments = [(g, slice(0, c)) for g, c in enumerate(sizes) if c]
        m_rows, grouped_layout = groups * MASKED_M_MAX, torch.tensor(sizes, dtype=torch.int32, device="cuda")
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    return GroupedCase(layout, groups, expected, sizes, x, w, a, sa, b, sb, out, m_rows, grouped_layout, segments)


def _expert_call(case: GroupedCase, g: int, s: slice):
    """One expert's cuBLASLt block-scaled call, inputs prepared once: what a loop with host-known sizes launches.
    cuBLASLt may refuse a row count (e.g. its M-major scale layout): then the expert's rows are rounded up to 4, 16
    or 128 (zero rows of the aligned layout, or unused rows of M_max); the FLOPs still count valid rows only."""
    for multiple in (1, 4, 16, 128):
        rows = slice(s.start, s.start + -(-(s.stop - s.start) // multiple) * multiple)
        with contextlib.redirect_stdout(io.StringIO()):
            call = cublas_blockwise(case.rows_of(case.a, g, rows), case.rows_of(case.sa, g, rows), case.b[g],
                                    case.sb[g])
        if call is not None:
            case.padding = max(case.padding, multiple)
            return call
    print(f"  cuBLASLt block-scaled refused expert {g} ({s.stop - s.start} rows) at every padding")
    return None


def grouped_rows(layout: str, groups: int, expected: int, n: int, k: int) -> list[dict]:
    case = grouped_case(layout, groups, expected, n, k)
    valid = sum(case.sizes)
    flops = 2 * valid * n * k
    nbytes = valid * k + groups * n * k + 2 * valid * n + 4 * (valid * -(-k // 128) + case.sb.numel())
    case.call()
    calls = [_expert_call(case, g, s) for g, s in case.segments]
    loop = (lambda: [c() for c in calls]) if all(calls) else None

    def diff(results) -> float:
        got = torch.cat([r[:s.stop - s.start].double() for r, (_, s) in zip(results, case.segments, strict=True)])
        ref = torch.cat([case.rows_of(case.x, g, s).double() @ case.w[g].double().t() for g, s in case.segments])
        return calc_diff(got, ref)

    common = {"layout": layout, "groups": groups, "expected_m": expected, "valid_m": valid,
              "group_sizes": case.sizes}
    def gemmgen_row() -> dict:
        secs, kernels = kernel_seconds(case.call)
        return row("grouped", "gemmgen", case.m_rows, n, k, secs, flops, nbytes,
                   call_us=call_seconds(case.call) * 1e6, config=case.kernel_name(), kernels=kernels,
                   calc_diff=diff([case.rows_of(case.out, g, s) for g, s in case.segments]),
                   bar=GROUPED_BARS.get((layout, groups, expected, n, k)), **common)

    def loop_row() -> dict:
        assert loop is not None
        secs, kernels = kernel_seconds(loop)
        return row("grouped", "cublaslt_loop", case.m_rows, n, k, secs, flops, nbytes,
                   call_us=call_seconds(loop) * 1e6, calc_diff=diff(loop()),
                   config=f"{len(calls)} x scaled_mm, rows rounded up to {case.padding}", kernels=kernels, **common)

    measures = {"gemmgen": gemmgen_row}
    if loop is not None:
        measures["cublaslt_loop"] = loop_row
    if deepgemm_peer.loaded():
        measures["deepgemm"] = lambda: _deepgemm_grouped_row(case, flops, nbytes, diff, common)
    return in_rotated_order(measures, flops)


def _deepgemm_grouped_row(case: GroupedCase, flops: int, nbytes: int, diff: Callable, common: dict) -> dict:
    """DeepGEMM's grouped kernel on the same inputs (its own output tensor); a failure is an error row."""
    n, k = case.b.shape[1], case.b.shape[2]
    try:
        out = torch.empty_like(case.out)
        if case.layout == "contiguous":
            fn = deepgemm_peer.contiguous(case.a, case.sa, case.b, case.sb, out, case.grouped_layout)
        else:
            fn = deepgemm_peer.masked(case.a, case.sa, case.b, case.sb, out, case.grouped_layout, case.expected)
        fn()
        got = diff([case.rows_of(out, g, s) for g, s in case.segments])
        secs, kernels = kernel_seconds(fn)
        return row("grouped", "deepgemm", case.m_rows, n, k, secs, flops, nbytes, call_us=call_seconds(fn) * 1e6,
                   calc_diff=got, config=" + ".join(kernels), kernels=kernels, **common)
    except Exception as exc:  # noqa: BLE001 - the peer failing must not end the run
        if isinstance(exc, torch.cuda.OutOfMemoryError):
            torch.cuda.empty_cache()
        return error_row("grouped", "deepgemm", case.m_rows, n, k, exc, **common)


def grouped_section_rows(case: tuple) -> list[dict]:
    """Section 3 for one case (grouped_rows as before); a failure becomes a gemmgen error row."""
    layout, groups, expected, n, k = case
    try:
        return grouped_rows(*case)
    except Exception as exc:  # noqa: BLE001
        if isinstance(exc, torch.cuda.OutOfMemoryError):
            torch.cuda.empty_cache()
        m = groups * MASKED_M_MAX if layout == "masked" else groups * expected
        return [error_row("grouped", "gemmgen", m, n, k, exc, layout=layout, groups=groups, expected_m=expected,
                          valid_m=None)]


# ------------------------------------------------------------------------------------------- sections 5, 6 and 7
# The rest of the GEMM family (issue 8). Each gemmgen entry point (or keyword) is looked up at run time: a gemmgen
# without it gets "skipped: gemmgen has no X" printed and no rows, so the bench runs on any version.
RECIPE_SHAPES = [s for s in PREFILL_SHAPES if s[0] >= 4096]  # 7: M = 4096 x the six (N, K) pairs, and 8192^3
BF16_SHAPES = PREFILL_SHAPES  # 19
# Weight gradient (DeepGEMM's test set): (M, N) at K in {4096, 8192}; out [M, N] float32 accumulated.
WGRAD_MN = [(7168, 2112), (1536, 24576), (512, 32768), (16384, 7168), (7168, 4096), (2048, 7168)]
WGRAD_KS = (4096, 8192)
WGRAD_SHAPES = [(m, n, k) for m, n in WGRAD_MN for k in WGRAD_KS]  # 12
# DeepGEMM's kernel TFLOPS on this project's H200 (2026-11-29, its own test set and kineto timing), the bars of
# docs/BENCHMARKING.md ("Training GEMMs"): (M, N, K) -> TFLOPS.
WGRAD_BARS = {(7168, 2112, 4096): 955, (7168, 2112, 8192): 1049, (1536, 24576, 4096): 1013,
              (1536, 24576, 8192): 1080, (512, 32768, 4096): 914, (512, 32768, 8192): 1011,
              (16384, 7168, 4096): 1025, (16384, 7168, 8192): 1067, (7168, 4096, 4096): 981,
              (7168, 4096, 8192): 1053, (2048, 7168, 4096): 944, (2048, 7168, 8192): 1036}
# k-grouped weight gradient: (groups, M, N, average K per group) -> DeepGEMM's TFLOPS (same source); the bench
# gives every group the same K.
K_GROUPED_BARS = {(4, 7168, 4096, 4096): 974, (4, 7168, 4096, 8192): 1039, (4, 2048, 7168, 4096): 928,
                  (4, 2048, 7168, 8192): 1033, (8, 7168, 4096, 4096): 974, (8, 2048, 7168, 4096): 930}
K_GROUPED_CASES = list(K_GROUPED_BARS)


def gemmgen_has(name: str, keyword: str | None = None) -> bool:
    """Whether this gemmgen has entry point `name` (taking `keyword`, when given)."""
    fn = getattr(gemmgen, name, None)
    if fn is None or keyword is None:
        return fn is not None
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return keyword in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _skipped(what: str) -> None:
    print(f"  skipped: gemmgen has no {what}", flush=True)


def _kernel_name(m: int, n: int, k: int, **kw) -> str | None:
    """gemmgen's kernel name for a dense call, or None (the row then names the kernels the profiler saw)."""
    try:
        return gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), **kw).name
    except Exception:  # noqa: BLE001 - a name is a nicety; the measurement does not depend on it
        return None


def per_channel_cast_to_fp8(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """e4m3 with one fp32 scale per row (row amax / 448): SA [rows], the channel ("rowwise") recipe."""
    scale = x.abs().amax(dim=1).float().clamp(min=1e-4) / 448.0
    return (x.float() / scale[:, None]).clamp(-448.0, 448.0).to(torch.float8_e4m3fn), scale


def recipe_rows(m: int, n: int, k: int) -> list[dict]:
    """Section 5 on one shape: gemmgen's dense call with the block recipe in e4m3 and in e5m2 (A and B both), with
    recipe="tensor" beside cuBLASLt tensorwise and recipe="channel" beside cuBLASLt rowwise (torch._scaled_mm,
    use_fast_accum=True; each pair on the same quantised inputs). calc_diff against the float64 product of the bf16
    inputs, calc_diff_dequant against that of the row's own dequantised inputs."""
    torch.manual_seed(SEED + m + n + k)
    x = torch.randn(m, k, device=DEVICE, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=DEVICE, dtype=torch.bfloat16)
    out = torch.empty(m, n, device=DEVICE, dtype=torch.bfloat16)
    ref = x.double() @ w.double().t()
    flops = 2 * m * n * k
    fields = {"section": "recipes", "out_dtype": "bf16"}
    pending: dict[str, Callable[[], dict]] = {}  # measured in rotated order (in_rotated_order), rows in this order

    def measure(impl: str, setup: Callable, nbytes: float, **extra) -> None:
        pending[f"{impl} {extra['recipe']} {extra['dtype']}"] = functools.partial(
            _measure, "dense", impl, (m, n, k), setup, flops=flops, nbytes=nbytes, ref=ref, **fields, **extra)

    dtypes = [("e4m3", torch.float8_e4m3fn)]
    if gemmgen_has("per_token_cast_to_fp8", "dtype"):
        dtypes.append(("e5m2", torch.float8_e5m2))
    for name, dtype in dtypes:
        def block_setup(dtype=dtype):
            a, sa = gemmgen.per_token_cast_to_fp8(x, dtype=dtype)
            b, sb = gemmgen.per_block_cast_to_fp8(w, dtype=dtype)
            kw = {} if dtype == torch.float8_e4m3fn else {"a_dtype": DType.E5M2, "b_dtype": DType.E5M2}
            return (lambda: gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)), _kernel_name(m, n, k, **kw), \
                dequantize_a(a, sa) @ dequantize_b(b, sb).t(), {}
        measure("gemmgen", block_setup, dense_bytes(m, n, k), recipe=RECIPE_BLOCK, dtype=name)

    if not gemmgen_has("fp8_gemm_nt", "recipe"):
        return in_rotated_order(pending, flops)  # no tensor/channel rows, nor their peers' (family_rows says so)
    at, sx = per_tensor_cast_to_fp8(x)
    bt, sw = per_tensor_cast_to_fp8(w)
    ref_t = (at.double() * sx.double()) @ (bt.double() * sw.double()).t()
    ac, sxc = per_channel_cast_to_fp8(x)
    bc, swc = per_channel_cast_to_fp8(w)
    ref_c = (ac.double() * sxc.double()[:, None]) @ (bc.double() * swc.double()[:, None]).t()
    tensor_bytes = m * k + n * k + 2 * m * n + 8
    channel_bytes = m * k + n * k + 2 * m * n + 4 * (m + n)
    measure("gemmgen", lambda: ((lambda: gemmgen.fp8_gemm_nt((at, sx), (bt, sw), out, recipe="tensor")), None,
                                ref_t, {}), tensor_bytes, recipe="tensor", dtype="e4m3")
    measure("gemmgen", lambda: ((lambda: gemmgen.fp8_gemm_nt((ac, sxc), (bc, swc), out, recipe="channel")), None,
                                ref_c, {}), channel_bytes, recipe="channel", dtype="e4m3")

    def tensorwise():
        return scaled_mm_call(at, bt, sx, sw), "torch._scaled_mm tensorwise, use_fast_accum=True", ref_t, {}

    def rowwise():
        s_a, s_b = sxc[:, None].contiguous(), swc[None, :].contiguous()
        return scaled_mm_call(ac, bc, s_a, s_b), "torch._scaled_mm rowwise, use_fast_accum=True", ref_c, {}

    measure("cublaslt_tensorwise", tensorwise, tensor_bytes, recipe="tensor", dtype="e4m3")
    measure("cublaslt_rowwise", rowwise, channel_bytes, recipe="channel", dtype="e4m3")
    return in_rotated_order(pending, flops)


def bf16_rows(m: int, n: int, k: int) -> list[dict]:
    """Section 6 on one shape: gemmgen.bf16_gemm_nt beside torch.matmul (cuBLAS), bf16 in and out."""
    if not gemmgen_has("bf16_gemm_nt"):
        return []
    torch.manual_seed(SEED + m + n + k)
    x = torch.randn(m, k, device=DEVICE, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=DEVICE, dtype=torch.bfloat16)
    out = torch.empty(m, n, device=DEVICE, dtype=torch.bfloat16)
    ref = x.double() @ w.double().t()
    nbytes = 2 * (m * k + n * k + m * n)
    fields = {"section": "bf16", "recipe": "none", "dtype": "bf16", "out_dtype": "bf16"}
    setups = {"gemmgen": lambda: ((lambda: gemmgen.bf16_gemm_nt(x, w, out)), None, None, {}),
              "cublas_bf16": lambda: ((lambda: torch.matmul(x, w.t())), "torch.matmul bf16", None, {})}
    return in_rotated_order({impl: functools.partial(_measure, "dense", impl, (m, n, k), setup, flops=2 * m * n * k,
                                                     nbytes=nbytes, ref=ref, **fields)
                             for impl, setup in setups.items()}, 2 * m * n * k)


def wgrad_bytes(m: int, n: int, k: int) -> int:
    """A + B (e4m3) + D read and written (fp32: out += A.B^T) + both operands' 1x128 scales (fp32)."""
    return m * k + n * k + 8 * m * n + 4 * (m + n) * ceil_div(k, 128)


def wgrad_rows(m: int, n: int, k: int) -> list[dict]:
    """Section 7, dense: gemmgen.fp8_gemm_nt_wgrad, out [M, N] fp32 += A.B^T (A and B both 1x128-scaled by
    per_token_cast_to_fp8). The timed calls keep adding into out (the time is the same); out is zeroed before the
    one call whose result is checked."""
    bar = WGRAD_BARS.get((m, n, k))
    fields = {"recipe": "1x128/1x128", "dtype": "e4m3", "out_dtype": "float32", "bar": bar}
    if not gemmgen_has("fp8_gemm_nt_wgrad"):
        return []
    torch.manual_seed(SEED + m + n + k)
    x = torch.randn(m, k, device=DEVICE, dtype=torch.bfloat16)
    y = torch.randn(n, k, device=DEVICE, dtype=torch.bfloat16)
    out = torch.zeros(m, n, device=DEVICE, dtype=torch.float32)
    ref = x.double() @ y.double().t()

    def setup():
        a, sa = gemmgen.per_token_cast_to_fp8(x)
        b, sb = gemmgen.per_token_cast_to_fp8(y)
        return (lambda: gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb), out, accumulate=True)), None, \
            dequantize_a(a, sa) @ dequantize_a(b, sb).t(), {}

    return _wgrad_measured("wgrad", (m, n, k), setup, deepgemm_peer.wgrad, x, y, out, 2 * m * n * k,
                           wgrad_bytes(m, n, k), ref, fields)


def _wgrad_measured(kind: str, shape: tuple[int, int, int], setup: Callable, peer: Callable, x: torch.Tensor,
                    y: torch.Tensor, out: torch.Tensor, flops: float, nbytes: float, ref: torch.Tensor,
                    fields: dict) -> list[dict]:
    """Section 7's rows of one case: gemmgen's and, with --deepgemm, DeepGEMM's (`peer(a, sa, b, sb, its own out)`
    on the same per-token casts of x and y), in rotated order."""
    measures = {"gemmgen": functools.partial(_measure, kind, "gemmgen", shape, setup, flops=flops, nbytes=nbytes,
                                             ref=ref, reset=out.zero_, **fields)}
    if deepgemm_peer.loaded():
        peer_out = torch.zeros_like(out)

        def peer_setup():
            a, sa = gemmgen.per_token_cast_to_fp8(x)
            b, sb = gemmgen.per_token_cast_to_fp8(y)
            return peer(a, sa, b, sb, peer_out), None, None, {}
        measures["deepgemm"] = functools.partial(_measure, kind, "deepgemm", shape, peer_setup, flops=flops,
                                                 nbytes=nbytes, ref=ref, reset=peer_out.zero_, **fields)
    return in_rotated_order(measures, flops)


def k_grouped_wgrad_rows(groups: int, m: int, n: int, k: int) -> list[dict]:
    """Section 7, k-grouped: gemmgen.k_grouped_fp8_gemm_nt_wgrad on `groups` groups of K = k each, concatenated
    along K (A [M, G k], B [N, G k]); out [G, M, N] fp32 accumulated (zeroed before the checked call). The row's
    k is the average K per group, its FLOPs 2 M N (G k)."""
    ks = [k] * groups
    fields = {"groups": groups, "ks": ks, "recipe": "1x128/1x128", "dtype": "e4m3", "out_dtype": "float32",
              "bar": K_GROUPED_BARS.get((groups, m, n, k))}
    if not gemmgen_has("k_grouped_fp8_gemm_nt_wgrad"):
        return []
    torch.manual_seed(SEED + groups + m + n + k)
    total = sum(ks)
    x = torch.randn(m, total, device=DEVICE, dtype=torch.bfloat16)
    y = torch.randn(n, total, device=DEVICE, dtype=torch.bfloat16)
    out = torch.zeros(groups, m, n, device=DEVICE, dtype=torch.float32)
    offsets = list(itertools.accumulate([0] + ks))
    segments = [slice(o, o + kg) for o, kg in zip(offsets, ks, strict=False)]
    ref = torch.stack([x[:, s].double() @ y[:, s].double().t() for s in segments])

    def setup():
        a, sa = gemmgen.per_token_cast_to_fp8(x)
        b, sb = gemmgen.per_token_cast_to_fp8(y)
        da, db = dequantize_a(a, sa), dequantize_a(b, sb)
        ref_dequant = torch.stack([da[:, s] @ db[:, s].t() for s in segments])
        return (lambda: gemmgen.k_grouped_fp8_gemm_nt_wgrad((a, sa), (b, sb), out, ks)), None, ref_dequant, {}

    nbytes = m * total + n * total + 8 * groups * m * n + 4 * (m + n) * total // 128
    return _wgrad_measured("k_grouped_wgrad", (m, n, k), setup, functools.partial(deepgemm_peer.k_grouped_wgrad,
                           ks=ks), x, y, out, 2 * m * n * total, nbytes, ref, fields)


def family_rows(section: str, explicit: list[tuple[int, int, int]] | None) -> Iterator[tuple[str, list[dict]]]:
    """Sections 5-7: (what was run, its rows) one shape or case at a time; an entry point this gemmgen lacks is
    said once ("skipped: gemmgen has no X") and gives no rows. `--shape` values replace the shapes of 5 and 6 and
    the dense wgrad shapes of 7 (then no k-grouped case runs)."""
    if section == "5":
        if not gemmgen_has("fp8_gemm_nt", "recipe"):
            _skipped("fp8_gemm_nt(recipe=...): no tensor/channel rows (the e4m3 and e5m2 block rows still run)")
        if not gemmgen_has("per_token_cast_to_fp8", "dtype"):
            _skipped("per_token_cast_to_fp8(dtype=...): no e5m2 rows")
        for m, n, k in explicit or RECIPE_SHAPES:
            yield f"recipes {m}x{n}x{k}", recipe_rows(m, n, k)
    elif section == "6":
        if not gemmgen_has("bf16_gemm_nt"):
            return _skipped("bf16_gemm_nt")
        for m, n, k in explicit or BF16_SHAPES:
            yield f"bf16 {m}x{n}x{k}", bf16_rows(m, n, k)
    else:
        if not gemmgen_has("fp8_gemm_nt_wgrad"):
            _skipped("fp8_gemm_nt_wgrad")
        else:
            for m, n, k in explicit or WGRAD_SHAPES:
                yield f"wgrad {m}x{n}x{k}", wgrad_rows(m, n, k)
        if explicit:
            return None
        if not gemmgen_has("k_grouped_fp8_gemm_nt_wgrad"):
            return _skipped("k_grouped_fp8_gemm_nt_wgrad")
        for groups, m, n, k in K_GROUPED_CASES:
            yield f"k_grouped_wgrad {groups}x{m}x{n} K {k}/group", k_grouped_wgrad_rows(groups, m, n, k)


def parse_shape(text: str) -> tuple[int, int, int]:
    try:
        m, n, k = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected MxNxK (e.g. 64x7168x2048), got {text!r}") from None
    if min(m, n, k) < 1:
        raise argparse.ArgumentTypeError(f"expected positive sizes, got {text!r}")
    return m, n, k


def parse_sections(values: list[str]) -> list[str]:
    """'1,2,3,4', '1 3', names (prefill/dense, decode, grouped, host, recipes, bf16, wgrad) or 'all' -> sorted
    section numbers."""
    picked = set()
    for value in values:
        for item in filter(None, (v.strip().lower() for v in value.split(","))):
            if item == "all":
                picked.update(SECTION_NAMES)
                continue
            item = SECTION_ALIASES.get(item, item)
            if item not in SECTION_NAMES:
                raise SystemExit(f"--sections: unknown section {item!r} (1-7, all, or "
                                 f"{', '.join(SECTION_NAMES.values())})")
            picked.add(item)
    return sorted(picked)


def dense_shapes(section: str, explicit: list[tuple[int, int, int]] | None) -> list[tuple[int, int, int]]:
    if not explicit:
        return PREFILL_SHAPES if section == "1" else DECODE_SHAPES
    decode = [s for s in explicit if s[0] <= DECODE_MAX_M]
    return decode if section == "2" else [s for s in explicit if s[0] > DECODE_MAX_M]


def _summary(rows: list[dict], unit: str) -> str:
    parts = []
    for r in rows:
        if r.get("error"):
            parts.append(f"{r['impl']}{' ' + r['recipe'] + '/' + r['dtype'] if unit == 'family' else ''} error")
        elif unit == "tbps":
            parts.append(f"{r['impl']} {r['kernel_us']:.1f} us {r['tbps']:.2f} TB/s")
        elif unit == "host":
            parts.append(f"{r['impl']}/{r['case']} {r['us_per_call']:.1f} us")
        elif unit == "family":
            bar = f" (bar {r['bar']})" if r.get("bar") else ""
            parts.append(f"{r['impl']} {r.get('recipe')}/{r.get('dtype')} {r['tflops']:.0f}{bar}")
        else:
            parts.append(f"{r['impl']} {r['tflops']:.0f}")
    return ", ".join(parts)


# The row fields that name what was measured (equal across passes); the rest are measurements.
ROW_KEY = ("section", "kind", "impl", "m", "n", "k", "layout", "groups", "expected_m", "case", "recipe", "dtype",
           "out_dtype")


def merge_passes(passes: list[list[dict]]) -> list[dict]:
    """One row per measurement, matched across passes by ROW_KEY (a row a pass lacks, e.g. an error row where the
    others have timed ones, stays a row of its own): the pass with the median time (the slower of the middle two for
    an even count), with every pass's time in `<metric>_passes`. Under the 700 W cap a single pass measured gemmgen
    8% under its next run's value where the clocks dipped for a second (4096x7168x2048, masked 1 x 1024 x 4096 x
    7168: bench/NOTES.md v0.19); passes seconds apart put such a dip in one pass only."""
    if len(passes) == 1:
        return passes[0]
    groups: dict[tuple, list[dict]] = {}
    for rows in passes:
        seen: dict[tuple, int] = {}
        for r in rows:
            key = tuple(r.get(f) for f in ROW_KEY)
            seen[key] = seen.get(key, -1) + 1  # a key repeated within a pass pairs by occurrence
            groups.setdefault((*key, seen[key]), []).append(r)
    merged = []
    for same in groups.values():
        metric = "us_per_call" if same[0]["kind"] == "host" else "kernel_us"
        timed = sorted((r for r in same if r.get(metric) is not None), key=lambda r: r[metric])
        pick = dict(timed[len(timed) // 2] if timed else same[0])
        pick[f"{metric}_passes"] = [r.get(metric) for r in same]
        merged.append(pick)
    return merged


def run_sections(sections: list[str], explicit: list[tuple[int, int, int]] | None, settle_s: float, out: Path,
                 env: dict, rows: list[dict], done: list[list[dict]]) -> None:
    """One pass over the sections, appending to `rows`. The results file holds the passes done and this one's rows so
    far, merged (so a killed run keeps what it measured)."""

    def checkpoint() -> None:
        env["passes"] = len(done) + 1  # the passes begun: the current one's rows so far are merged in
        write_json(out, env, merge_passes([*done, rows]))

    for section in sections:
        if DEVICE == "cuda" and settle_s > 0:
            # The first shape after a heavy section ran slow for the implementation measured first (gemmgen):
            # 1x2112x7168, the first decode shape, right after 8192^3, took 11.1-13.1 us in three full benches against
            # 10.3 alone (2026-12-01-0de1e3a-order). An idle pause lets the clocks recover before a section starts.
            torch.cuda.synchronize()
            time.sleep(settle_s)
        t0 = time.perf_counter()
        if section in ("1", "2"):
            name = SECTION_NAMES[section]
            shapes = dense_shapes(section, explicit)
            if not shapes:
                print(f"{name}: none of the --shape values belongs here (decode: M <= {DECODE_MAX_M})", flush=True)
            for m, n, k in shapes:
                rows += (new := dense_rows(m, n, k, name))
                print(f"{name} {m}x{n}x{k}: {_summary(new, 'tbps' if section == '2' else 'tflops')}", flush=True)
                checkpoint()  # what is measured survives a killed run
        elif section in ("5", "6", "7"):
            for what, new in family_rows(section, explicit):
                rows += new
                print(f"{what}: {_summary(new, 'family')}", flush=True)
                checkpoint()
                if DEVICE == "cuda":
                    torch.cuda.empty_cache()
        elif section == "3":
            for case in GROUPED_CASES:
                rows += (new := grouped_section_rows(case))
                print(f"grouped {case}: {_summary(new, 'tflops')}", flush=True)
                checkpoint()
        else:
            for m, n, k in HOST_SHAPES:
                rows += (new := host_rows(m, n, k))
                print(f"host {m}x{n}x{k}: {_summary(new, 'host')}", flush=True)
                checkpoint()
                torch.cuda.empty_cache()
        print(f"section {SECTION_NAMES[section]}: {time.perf_counter() - t0:.0f} s", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None,
                    help="bench.json path; bench.md and bench.png go beside it (default: "
                         "bench/results/<date>-<commit>/bench.json)")
    ap.add_argument("--sections", nargs="+", default=[DEFAULT_SECTIONS],
                    help="which sections: 1 prefill, 2 decode, 3 grouped, 4 host, 5 recipes, 6 bf16, 7 wgrad, or "
                         f"all (default: {DEFAULT_SECTIONS})")
    ap.add_argument("--shape", dest="shapes", action="append", type=parse_shape, default=None, metavar="MxNxK",
                    help="run the dense sections on just this shape (repeatable; M <= 32 goes to decode, larger to "
                         "prefill; 5, 6 and 7's wgrad take every one, and 7 then runs no k-grouped case)")
    ap.add_argument("--shapes", dest="shapes_list", nargs="*", type=parse_shape, default=None,
                    help=argparse.SUPPRESS)  # the former spelling
    ap.add_argument("--quick", action="store_true", help="fewer iterations (a smoke run; numbers only indicative)")
    ap.add_argument("--settle-s", type=float, default=2.0, metavar="S",
                    help="idle seconds before each section, for the clocks to recover after the one before (default 2)")
    ap.add_argument("--settle-impl-s", type=float, default=0.5, metavar="S",
                    help="idle seconds before each implementation of a shape of >= 1e11 FLOPs, so none starts in the "
                         "clock the one before it left under the power cap (default 0.5; 0: none)")
    ap.add_argument("--passes", type=int, default=1, metavar="R",
                    help="run the sections R times and keep each row's median pass (default 1; 3 rides out the "
                         "power cap's second-long clock dips)")
    ap.add_argument("--deepgemm", type=Path, default=None, metavar="DIR",
                    help="add DeepGEMM (its Python-JIT tree in DIR, built by its own JIT) as a peer of sections 1-3 "
                         "(bench/deepgemm_peer.py)")
    args = ap.parse_args(argv)
    if args.passes < 1:
        ap.error(f"--passes: expected 1 or more, got {args.passes}")
    if args.deepgemm is not None:
        deepgemm_peer.load(args.deepgemm)
    else:
        deepgemm_peer.unload()
    sections = parse_sections(args.sections)
    explicit = (args.shapes or []) + (args.shapes_list or []) or None
    common.configure(args.quick)
    env = env_info(__doc__ or "")
    out = args.out or (Path(__file__).resolve().parent / "results" /
                       f"{time.strftime('%Y-%m-%d')}-{env['gemmgen_commit']}" / "bench.json")
    print(f"sections {', '.join(SECTION_NAMES[s] for s in sections)}{' (quick)' if args.quick else ''} -> {out}",
          flush=True)
    done: list[list[dict]] = []
    started = time.perf_counter()
    global ROTATION, IMPL_SETTLE_S
    if args.settle_impl_s < 0:
        ap.error(f"--settle-impl-s: expected >= 0, got {args.settle_impl_s}")
    IMPL_SETTLE_S = args.settle_impl_s
    env["settle_impl_s"] = IMPL_SETTLE_S
    try:
        for index in range(args.passes):
            ROTATION = index
            rows: list[dict] = []
            run_sections(sections, explicit, args.settle_s, out, env, rows, done)
            done.append(rows)
    finally:
        ROTATION, IMPL_SETTLE_S = 0, 0.0  # a later caller in this process measures in the canonical order
    env["passes"] = len(done)
    rows = merge_passes(done)
    write_json(out, env, rows)
    errors = sum(1 for r in rows if r.get("error"))
    print(f"{len(rows)} rows ({errors} with an error) in {time.perf_counter() - started:.0f} s -> {out}", flush=True)
    md, png = report.write_report(out)
    print(f"wrote {md}" + (f" and {png}" if png else " (no chart: see above)"))
    print(md.read_text())


if __name__ == "__main__":
    main()
