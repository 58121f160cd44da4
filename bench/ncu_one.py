"""Run one gemmgen GEMM a few times, for `ncu` to profile the last launch.

    ncu --clock-control none -k regex:sm90_ -s 2 -c 1 --section WarpStateStats python bench/ncu_one.py 4096x7168x16384
"""

from __future__ import annotations

import sys

import torch

import gemmgen

m, n, k = (int(v) for v in sys.argv[1].split("x"))
cfg = dict((kv.split("=")[0], int(kv.split("=")[1])) for kv in sys.argv[2:])
a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    gemmgen.fp8_gemm_nt((a, sa), (b, sb), out, config=cfg or None)
torch.cuda.synchronize()
print(gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0), cfg or None).name)
