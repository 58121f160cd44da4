"""Is 1x2112x7168 slower than 8x2112x7168 on the same kernel, or is it the bench's order? Interleaved, full mode."""
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, "bench")
import common
import torch

import gemmgen


def setup(m, n, k):
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    return lambda: gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)

res = {}
shapes = [(1, 2112, 7168), (8, 2112, 7168), (32, 2112, 7168), (1, 576, 7168), (8, 576, 7168), (1, 24576, 1536),
          (8, 24576, 1536), (1, 32768, 512), (8, 32768, 512)]
calls = {s: setup(*s) for s in shapes}
# the first measurement right after the kernel's first call, quick-bench style (2 warm-ups, 5 iterations)
common.WARMUP, common.ITERS = 2, 5
first = {}
for s, c in calls.items():
    first["x".join(map(str, s))] = common.kernel_seconds(c)[0] * 1e6
common.WARMUP, common.ITERS = 5, 30
times = {"x".join(map(str, s)): [] for s in shapes}
for r in range(6):
    order = shapes if r % 2 == 0 else shapes[::-1]
    for s in order:
        times["x".join(map(str, s))].append(common.kernel_seconds(calls[s])[0] * 1e6)
med = {k: statistics.median(v) for k, v in times.items()}
for k in med:
    print(f"{k}: first(quick) {first[k]:.2f} us, median of 6 rounds {med[k]:.2f} us {[f'{t:.2f}' for t in times[k]]}")
Path(sys.argv[1]).write_text(json.dumps({"first_quick_us": first, "rounds_us": times, "median_us": med}, indent=1))
