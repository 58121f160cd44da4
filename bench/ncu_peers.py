"""One call of gemmgen, DeepGEMM or cuBLASLt on one dense shape, for `ncu` to profile side by side: inputs are made
and every kernel warmed (and JIT-built) first; only the last call runs between cudaProfilerStart and Stop.

    ncu --clock-control none --profile-from-start off --section SpeedOfLight ... \
        python bench/ncu_peers.py 4096x7168x16384 gemmgen|gemmgen_tensor|deepgemm|blockwise|tensorwise [--deepgemm DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_gemm as bg  # noqa: E402
import deepgemm_peer  # noqa: E402

import gemmgen  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", type=bg.parse_shape)
    ap.add_argument("impl", choices=["gemmgen", "gemmgen_tensor", "deepgemm", "blockwise", "tensorwise"])
    ap.add_argument("--deepgemm", type=Path, default=None, metavar="DIR")
    args = ap.parse_args()
    m, n, k = args.shape
    x, w = torch.randn(m, k, device="cuda"), torch.randn(n, k, device="cuda")
    a, sa = gemmgen.per_token_cast_to_fp8(x)
    b, sb = gemmgen.per_block_cast_to_fp8(w)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    if args.impl == "gemmgen":
        def fn():
            return gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)
    elif args.impl == "gemmgen_tensor":  # the same kernel structure with per-tensor scales: no promotion
        at, sx = bg.per_tensor_cast_to_fp8(x)
        bt, sw = bg.per_tensor_cast_to_fp8(w)

        def fn():
            return gemmgen.fp8_gemm_nt((at, sx), (bt, sw), out, recipe="tensor")
    elif args.impl == "deepgemm":
        if args.deepgemm is None:
            raise SystemExit("deepgemm: give --deepgemm DIR (bench/deepgemm_peer.py)")
        deepgemm_peer.load(args.deepgemm)
        fn = deepgemm_peer.dense(a, sa, b, sb, out)
    elif args.impl == "blockwise":
        fn = bg.cublas_blockwise(a, sa, b, sb)
        if fn is None:
            raise SystemExit(f"cuBLASLt block-scaled refused {m}x{n}x{k}")
    else:
        at, sx = bg.per_tensor_cast_to_fp8(x)
        bt, sw = bg.per_tensor_cast_to_fp8(w)
        fn = bg.scaled_mm_call(at, bt, sx, sw)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
