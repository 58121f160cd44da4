"""DeepGEMM as an optional peer of the bench (`bench_gemm.py --deepgemm DIR`), so that the bars of
docs/BENCHMARKING.md are compared in the same run instead of against another day's figures.

DIR holds DeepGEMM's Python-JIT version (github.com/deepseek-ai/DeepGEMM at 03d0be3, July 2025: the version the
project's bars were measured with), with CUTLASS's `include/cute` and `include/cutlass` (the commit its submodule
names, eefa171) copied into `deep_gemm/include/`, as its setup.py does. It is fetched into an ignored folder and
built on the device by its own JIT (nvcc); it is never vendored. Each call gets the inputs in the layout DeepGEMM
documents as its fast path, prepared once outside the timed loop: SA transposed and TMA-aligned
(`get_col_major_tma_aligned_tensor`), so the call launches its GEMM kernel only.

Its JIT compiles one kernel per shape with nvcc (seconds each, one at a time); to keep that out of a device call's
budget, compile the bench's kernels first in parallel processes (dense shapes sharded by N x K, grouped cases by
their index, so no two compile the same kernel):

    PYTHONPATH=. DG_JIT_CACHE_DIR=/tmp/dg python bench/deepgemm_peer.py DIR --jobs 4
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch

_MODULE: ModuleType | None = None


def load(folder: Path) -> ModuleType:
    """Import `deep_gemm` from `folder`; a missing package or headers is a clear error naming the folder."""
    global _MODULE
    include = folder / "deep_gemm" / "include"
    if not all((include / d).is_dir() for d in ("deep_gemm", "cute", "cutlass")):
        raise SystemExit(f"--deepgemm {folder}: expected DeepGEMM's Python-JIT tree with CUTLASS's include/cute and "
                         "include/cutlass copied into deep_gemm/include/ (docs/BENCHMARKING.md says how)")
    sys.path.insert(0, str(folder.resolve()))
    try:
        _MODULE = importlib.import_module("deep_gemm")
    except ImportError as exc:
        raise SystemExit(f"--deepgemm {folder}: deep_gemm does not import here: {exc}") from exc
    return _MODULE


def unload() -> None:
    """No DeepGEMM peer (a run without --deepgemm after one with it, in the same process)."""
    global _MODULE
    _MODULE = None


def loaded() -> ModuleType | None:
    return _MODULE


def _aligned(sa: torch.Tensor) -> torch.Tensor:
    assert _MODULE is not None
    return _MODULE.get_col_major_tma_aligned_tensor(sa)  # gemmgen's SA is already in this layout: no copy


def dense(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor,
          out: torch.Tensor) -> Callable[[], torch.Tensor]:
    """out = A @ B^T with DeepGEMM's dense FP8 kernel (1x128 A scales, 128x128 B scales, bf16 out)."""
    assert _MODULE is not None
    dg, sa_t = _MODULE, _aligned(sa)

    def fn() -> torch.Tensor:
        dg.gemm_fp8_fp8_bf16_nt((a, sa_t), (b, sb.contiguous()), out)
        return out
    return fn


def contiguous(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor, out: torch.Tensor,
               m_indices: torch.Tensor) -> Callable[[], torch.Tensor]:
    """The MoE contiguous grouped GEMM: segments padded to 128 rows, -1 on padding rows (DeepGEMM skips them)."""
    assert _MODULE is not None
    dg, sa_t = _MODULE, _aligned(sa)

    def fn() -> torch.Tensor:
        dg.m_grouped_gemm_fp8_fp8_bf16_nt_contiguous((a, sa_t), (b, sb), out, m_indices)
        return out
    return fn


def masked(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor, out: torch.Tensor,
           masked_m: torch.Tensor, expected_m: int) -> Callable[[], torch.Tensor]:
    """The MoE masked grouped GEMM: A [G, M_max, K], masked_m[g] valid rows per group."""
    assert _MODULE is not None
    dg, sa_t = _MODULE, _aligned(sa)

    def fn() -> torch.Tensor:
        dg.m_grouped_gemm_fp8_fp8_bf16_nt_masked((a, sa_t), (b, sb), out, masked_m, expected_m)
        return out
    return fn


def wgrad(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor,
          out: torch.Tensor) -> Callable[[], torch.Tensor]:
    """out (fp32) += A @ B^T with DeepGEMM's weight-gradient kernel (1x128 scales on both operands; gemmgen's scales
    are already in its TMA layout, so the call launches its GEMM kernel only)."""
    assert _MODULE is not None
    dg = _MODULE

    def fn() -> torch.Tensor:
        dg.wgrad_gemm_fp8_fp8_fp32_nt((a, sa), (b, sb), out)
        return out
    return fn


def k_grouped_wgrad(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor, out: torch.Tensor,
                    ks: list[int]) -> Callable[[], torch.Tensor]:
    """DeepGEMM's k-grouped weight gradient (one kernel per group) on gemmgen's K-concatenated operands, converted
    once, outside the timed calls, to its layout: each group's [M, k_g] and [N, k_g] chunks flattened one after
    another, the scales [sum k_g/128, M or N]."""
    assert _MODULE is not None
    dg = _MODULE
    bounds = list(itertools.pairwise(itertools.accumulate(ks, initial=0)))
    a_flat = torch.cat([a[:, lo:hi].contiguous().view(-1) for lo, hi in bounds])
    b_flat = torch.cat([b[:, lo:hi].contiguous().view(-1) for lo, hi in bounds])
    sa_t, sb_t = sa.t().contiguous(), sb.t().contiguous()

    def fn() -> torch.Tensor:
        dg.k_grouped_wgrad_gemm_fp8_fp8_fp32_nt((a_flat, sa_t), (b_flat, sb_t), out, ks)
        return out
    return fn


def _warm_shard(shard: int, jobs: int) -> int:
    """Call DeepGEMM once on every bench shape whose (N, K) falls in this shard: its JIT compiles and caches."""
    import bench_gemm as bg

    import gemmgen
    every = bg.PREFILL_SHAPES + bg.DECODE_SHAPES
    pairs = sorted({(n, k) for _, n, k in every})
    mine = {nk for i, nk in enumerate(pairs) if i % jobs == shard}
    shapes = [(m, n, k) for m, n, k in every if (n, k) in mine]
    failures = 0

    def attempt(what: str, make: Callable[..., Callable[[], torch.Tensor]], *args: object) -> None:
        nonlocal failures
        try:
            make(*args)()
        except Exception as exc:  # noqa: BLE001 - one refused shape must not stop the shard (the bench reports it)
            failures += 1
            print(f"shard {shard}: DeepGEMM failed on {what}: {exc}", flush=True)

    for m, n, k in shapes:
        a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
        b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
        attempt(f"{m}x{n}x{k}", dense, a, sa, b, sb, torch.empty(m, n, device="cuda", dtype=torch.bfloat16))
    for m, n, k in [s for i, s in enumerate(bg.WGRAD_SHAPES) if i % jobs == shard]:  # k-grouped: the same kernels
        a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
        b, sb = gemmgen.per_token_cast_to_fp8(torch.randn(n, k, device="cuda"))
        attempt(f"wgrad {m}x{n}x{k}", wgrad, a, sa, b, sb, torch.zeros(m, n, device="cuda"))
    cases = [c for i, c in enumerate(bg.GROUPED_CASES) if i % jobs == shard]
    for case in cases:
        c = bg.grouped_case(*case)
        if c.layout == "contiguous":
            attempt(str(case), contiguous, c.a, c.sa, c.b, c.sb, torch.empty_like(c.out), c.grouped_layout)
        else:
            attempt(str(case), masked, c.a, c.sa, c.b, c.sb, torch.empty_like(c.out), c.grouped_layout, c.expected)
    torch.cuda.synchronize()
    return len(shapes) + len(cases) - failures


def main() -> None:
    ap = argparse.ArgumentParser(description="Compile DeepGEMM's kernels for the bench's shapes, in parallel.")
    ap.add_argument("folder", type=Path, help="DeepGEMM's Python-JIT tree (see the module's docstring)")
    ap.add_argument("--jobs", type=int, default=4, help="parallel processes (default 4)")
    ap.add_argument("--shard", type=int, default=None, help=argparse.SUPPRESS)  # one worker's share
    args = ap.parse_args()
    load(args.folder)
    if args.shard is not None:
        print(f"shard {args.shard}/{args.jobs}: {_warm_shard(args.shard, args.jobs)} calls", flush=True)
        return
    workers = [subprocess.Popen([sys.executable, __file__, str(args.folder), "--jobs", str(args.jobs), "--shard",
                                 str(i)]) for i in range(args.jobs)]
    failed = [i for i, w in enumerate(workers) if w.wait() != 0]
    if failed:
        raise SystemExit(f"DeepGEMM warm-up shards {failed} failed (their output is above)")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
