"""Run one gemmgen GEMM a few times, for `ncu` to profile the last launch.

    ncu --clock-control none -k regex:sm90_ -s 2 -c 1 --section WarpStateStats python bench/ncu_one.py 4096x7168x16384
    ... python bench/ncu_one.py wgrad:7168x4096x4096 [block_n=128 ...]   (the 1x128/1x128 weight-gradient GEMM)
    ... python bench/ncu_one.py kgrouped:7168x4096x4096 groups=4 [epilogue_per_wg=0 ...]   (k-grouped wgrad: K = k
        per group, as bench_gemm's section 7)
    ... python bench/ncu_one.py bf16:4096x24576x1536 [pingpong=1 ...]   (bf16; `peer` instead runs torch.matmul: -k
        regex:nvjet profiles cuBLAS's kernel)
    ... python bench/ncu_one.py tensor:4096x2112x7168 [peer]   (recipe "tensor", or channel:...; `peer` runs
        torch._scaled_mm tensorwise / rowwise with fast accumulate, cuBLASLt's kernel)
    ... python bench/ncu_one.py 256x2112x7168 flush [evict_first=1]   (a 256 MB buffer zeroed before each call, as
        the benchmark flushes L2: profile with --cache-control none to see the kernel in that L2 state)
"""

from __future__ import annotations

import sys

import torch

import gemmgen
from gemmgen.ir import DType, ScaleRecipe

kind, _, shape = sys.argv[1].rpartition(":")
m, n, k = (int(v) for v in shape.split("x"))
flush = "flush" in sys.argv[2:]
peer = "peer" in sys.argv[2:]
cfg = dict((kv.split("=")[0], int(kv.split("=")[1])) for kv in sys.argv[2:] if kv not in ("flush", "peer"))
groups = cfg.pop("groups", 1)
scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda") if flush else None


def before_call() -> None:
    if scratch is not None:  # L2 full of dirty lines, as the benchmark leaves it (docs/BENCHMARKING.md)
        scratch.zero_()


a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
target = gemmgen.api.device_target(0)
if kind == "bf16":
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        before_call()
        torch.matmul(x, w.t(), out=out) if peer else gemmgen.bf16_gemm_nt(x, w, out, config=cfg or None)
    name = "torch.matmul" if peer else gemmgen.get_kernel(m, n, k, target, cfg or None, a_dtype=DType.BF16,
                                                          b_dtype=DType.BF16, scales=ScaleRecipe.NONE).name
elif kind in ("tensor", "channel"):
    cast = gemmgen.per_tensor_cast_to_fp8 if kind == "tensor" else gemmgen.per_channel_cast_to_fp8
    (xq, sx), (wq, sw) = cast(torch.randn(m, k, device="cuda")), cast(torch.randn(n, k, device="cuda"))
    # torch._scaled_mm's scale shapes: 0-dim (tensorwise), or [M, 1] and [1, N] (rowwise)
    ps_a, ps_b = (sx, sw) if kind == "tensor" else (sx.reshape(m, 1), sw.reshape(1, n))
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        before_call()
        if peer:
            torch._scaled_mm(xq, wq.t(), scale_a=ps_a, scale_b=ps_b, out_dtype=torch.bfloat16, use_fast_accum=True)
        else:
            gemmgen.fp8_gemm_nt((xq, sx), (wq, sw), out, recipe=kind, config=cfg or None)
    name = "torch._scaled_mm" if peer else gemmgen.get_kernel(m, n, k, target, cfg or None,
                                                              scales=ScaleRecipe(kind)).name
elif kind == "wgrad":
    b, sb = gemmgen.per_token_cast_to_fp8(torch.randn(n, k, device="cuda"))
    out = torch.zeros(m, n, device="cuda", dtype=torch.float32)
    for _ in range(3):
        before_call()
        gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb), out, config=cfg or None)
    name = gemmgen.get_kernel(m, n, k, target, cfg or None, out_dtype=DType.FP32, accumulate=True,
                              scales=ScaleRecipe.A1x128_B1x128).name
elif kind == "kgrouped":
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k * groups, device="cuda"))
    b, sb = gemmgen.per_token_cast_to_fp8(torch.randn(n, k * groups, device="cuda"))
    out = torch.zeros(groups, m, n, device="cuda", dtype=torch.float32)
    for _ in range(3):
        before_call()
        gemmgen.k_grouped_fp8_gemm_nt_wgrad((a, sa), (b, sb), out, [k] * groups, config=cfg or None)
    name = f"k-grouped {groups} x {m}x{n}x{k}"
else:
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        before_call()
        gemmgen.fp8_gemm_nt((a, sa), (b, sb), out, config=cfg or None)
    name = gemmgen.get_kernel(m, n, k, target, cfg or None).name
torch.cuda.synchronize()
print(name)
