"""Run a grouped case's kernel and the dense kernel of the same config on the same rows, a few times each, for
`ncu` to profile (the last launch of each: -k regex:sm90_ -s 4 -c 2 after two warm-ups of each).

    ncu --clock-control none -k regex:sm90_ -s 4 -c 2 python bench/ncu_grouped.py contiguous:4:8192:4096:7168:128:128:1
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gemm import grouped_case  # noqa: E402

import gemmgen  # noqa: E402

layout, groups, expected, n, k, bm, bn, cluster = sys.argv[1].split(":")
cfg = {"block_m": int(bm), "block_n": int(bn), "cluster": int(cluster)}
case = grouped_case(layout, int(groups), int(expected), int(n), int(k))
out = torch.empty(case.a.shape[0], int(n), device="cuda", dtype=torch.bfloat16)
for _ in range(2):
    case.call(cfg)
    gemmgen.fp8_gemm_nt((case.a, case.sa), (case.b[0], case.sb[0]), out, config=cfg)
case.call(cfg)
gemmgen.fp8_gemm_nt((case.a, case.sa), (case.b[0], case.sb[0]), out, config=cfg)
torch.cuda.synchronize()
