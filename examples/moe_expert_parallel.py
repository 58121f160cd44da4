"""The routed-expert layer of examples/moe_layer.py, expert parallel over torch.distributed (NCCL): each rank holds
experts / world of the experts, sends every routed copy of its tokens to the rank holding that expert
(all_to_all_single), runs the fused layer there on what it received, sends the results back and combines them.

    python -m torch.distributed.run --nproc-per-node 2 examples/moe_expert_parallel.py [--experts 256] [--tokens 4096]

Every rank builds the same experts (one seed) and keeps its slice; its own tokens come from its own seed. Each rank
checks its output against the one-GPU layer of all experts on the same tokens (calc_diff, bit equality is not
expected: the copies meet their experts in another order) and rank 0 prints one JSON line; the exit code is non-zero
on a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
import moe_layer as ml  # noqa: E402

import gemmgen  # noqa: E402
from gemmgen.moe import combine  # noqa: E402

MAX_DIFF = 1e-5  # against the one-GPU layer: the same FP8 operands, only the summation order of the combine differs


def local_experts(experts: ml.Experts, rank: int, world: int) -> ml.Experts:
    per = experts.count // world
    part = slice(rank * per, (rank + 1) * per)
    return ml.Experts(*((q[part], s[part]) for q, s in (experts.w13, experts.w13_stacked, experts.w2)))


def exchange(x: torch.Tensor, send_counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """all_to_all_single of rows grouped by destination rank; returns (received rows, received counts)."""
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    send, recv = send_counts.tolist(), recv_counts.tolist()  # the one host read: sizes the receive buffer
    out = x.new_empty(sum(recv), *x.shape[1:])
    dist.all_to_all_single(out, x.contiguous(), recv, send)
    return out, recv_counts


def ep_layer(x: torch.Tensor, ids: torch.Tensor, weights: torch.Tensor, mine: ml.Experts, world: int) -> torch.Tensor:
    """The layer's output for this rank's tokens: copies out to their experts' ranks, the fused layer there (each
    received copy one row with its local expert), results back, weighted sum per token."""
    t, k = ids.shape
    per = mine.count
    flat = ids.reshape(-1)
    order = torch.sort(flat // per, stable=True).indices  # copies grouped by destination rank
    send_counts = torch.bincount(flat // per, minlength=world)
    local_x, recv_counts = exchange(x[order // k], send_counts)
    local_ids, _ = exchange((flat[order] % per).unsqueeze(1), send_counts)  # each copy's expert on its new rank
    y_local = ml.layer(local_x, local_ids, torch.ones_like(local_ids, dtype=torch.float32), mine)
    y_back, _ = exchange(y_local, recv_counts)  # in the order this rank sent them
    position = torch.empty_like(order)
    position[order] = torch.arange(order.numel(), device=order.device)  # copy (t, j) came back at row position
    return combine(y_back, position.view(t, k), weights)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experts", type=int, default=256)
    ap.add_argument("--tokens", type=int, default=4096)
    args = ap.parse_args()
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    dist.init_process_group("nccl", device_id=torch.device("cuda", torch.cuda.current_device()))
    if args.experts % world:
        raise SystemExit(f"--experts {args.experts}: must divide over {world} ranks")
    experts = ml.make_experts(args.experts)
    mine = local_experts(experts, rank, world)
    x, ids, weights = ml.routing(args.tokens, args.experts, 100 + rank)
    out = ep_layer(x, ids, weights, mine, world)
    want = ml.layer(x, ids, weights, experts)
    diff = gemmgen.calc_diff(out, want)
    diffs = [None] * world
    dist.all_gather_object(diffs, diff)
    ok = all(d < MAX_DIFF for d in diffs)
    if rank == 0:
        print(json.dumps({"world": world, "experts": args.experts, "tokens_per_rank": args.tokens,
                          "calc_diff_vs_one_gpu": diffs, "ok": ok}))
    dist.destroy_process_group()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
