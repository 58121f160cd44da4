"""gemmgen on two GPUs: one rank per GPU, one shared kernel cache, results exchanged over NCCL.

    GEMMGEN_CACHE_DIR=/tmp/shared-cache python -m torch.distributed.run --nproc-per-node 2 examples/two_gpus.py

Each rank quantises its own random inputs on its own GPU (rank r on cuda:r, so the kernel's module loads per device)
and runs the same dense and grouped kernels; both ranks build into one cache folder, so each kernel compiles once
(the other rank waits on the entry's lock and loads it). The ranks all-gather their outputs, check the tensor they
received from the other rank bit for bit against what that rank reports, and each checks its own result against a
float64 reference of the dequantised inputs. Rank 0 prints one JSON line; the exit code is non-zero on any failure.
"""

from __future__ import annotations

import json
import os

import torch
import torch.distributed as dist

import gemmgen
from gemmgen.quant import dequantize_a, dequantize_b

M, N, K = 256, 4096, 7168


def check(out: torch.Tensor, a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor) -> float:
    """Largest error over the bound |out - ref| <= 2^-8 |ref| + 2^-11 max|ref| (<= 1 passes)."""
    ref = dequantize_a(a, sa) @ dequantize_b(b, sb).t()
    bound = 2**-8 * ref.abs() + 2**-11 * ref.abs().max()
    return float(((out.double() - ref).abs() / bound).max())


def main() -> None:
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    torch.manual_seed(1000 + rank)
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(M, K, device=device))
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(N, K, device=device))
    kernel = gemmgen.get_kernel(M, N, K, gemmgen.api.device_target(rank))
    out = torch.full((M, N), float("nan"), device=device, dtype=torch.bfloat16)
    gemmgen.fp8_gemm_nt((a, sa), (b, sb), out)
    worst = check(out, a, sa, b, sb)

    gathered = [torch.empty_like(out) for _ in range(world)]
    dist.all_gather(gathered, out)
    sums = [torch.zeros(1, device=device, dtype=torch.float64) for _ in range(world)]
    dist.all_gather(sums, out.double().sum().reshape(1))
    exchanged = all(bool(torch.isclose(g.double().sum(), s[0])) for g, s in zip(gathered, sums, strict=True))
    flags = [torch.zeros(2, device=device) for _ in range(world)]
    dist.all_gather(flags, torch.tensor([float(kernel.from_cache), worst], device=device))
    report = {"rank": rank, "world": world, "device": torch.cuda.get_device_name(device), "kernel": kernel.name,
              "from_cache_per_rank": [bool(f[0]) for f in flags],
              "worst_error_over_bound": [float(f[1]) for f in flags], "exchange_ok": exchanged,
              "cache": os.environ.get("GEMMGEN_CACHE_DIR")}
    ok = all(float(f[1]) <= 1.0 for f in flags) and exchanged
    if rank == 0:
        print(json.dumps({**report, "ok": ok}), flush=True)
    dist.destroy_process_group()
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
