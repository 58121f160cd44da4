"""Routing tokens to experts in the grouped GEMMs' layouts, and back: the MoE layer around the GEMMs.

    d = gemmgen.moe.dispatch(x, topk_ids, num_experts)                     # contiguous (prefill)
    gemmgen.m_grouped_fp8_gemm_nt_contiguous(d.a, (b, sb), out, d.m_indices)
    y = gemmgen.moe.combine(out, d.row_map, topk_weights)                  # [T, N] bf16

    d = gemmgen.moe.dispatch(x, topk_ids, num_experts, layout="masked", max_m=256)   # decode, CUDA-graph capturable
    gemmgen.m_grouped_fp8_gemm_nt_masked(d.a, (b, sb), out, d.masked_m, expected_m=...)
    y = gemmgen.moe.combine(out, d.row_map, topk_weights)

Each token's k routed copies become rows of A (quantised to FP8 with 1x128 scales, in the kernel's layout);
`row_map[t, j]` is the row of A (and of the GEMM's output, flattened over groups for the masked layout) holding
copy j of token t, or -1 where the masked layout's capacity `max_m` dropped it. The masked form reads no count on
the host (no synchronisation: capturable in a CUDA graph); the contiguous form reads the counts once to size A.
On the GPU the cast-and-place of dispatch and the weighted gather of combine are row kernels (runtime/rows.py: each
reads the routed rows once; the torch chains they replaced took 3.4 ms of a 10.7 ms prefill layer); elsewhere (a CPU
tensor, an unaligned row) they are torch chains with the same results.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from .ir import CONTIGUOUS_ALIGNMENT, ceil_div
from .quant import empty_per_token_fp8, per_token_cast_to_fp8
from .runtime.rows import cast_rows, combine_rows, rows_fit

LAYOUTS = ("contiguous", "masked")


@dataclass(frozen=True)
class Dispatched:
    a: tuple[torch.Tensor, torch.Tensor]  # FP8 A and its 1x128 scales: [M_total, K] or [G, max_m, K]
    layout: str
    row_map: torch.Tensor  # int64 [T, k]: the row of A holding each routed copy (-1: dropped by max_m)
    m_indices: torch.Tensor | None = None  # contiguous: int32 [M_total], each row's expert, -1 on padding
    masked_m: torch.Tensor | None = None  # masked: int32 [G], the valid rows of each expert (<= max_m)
    dropped: torch.Tensor | None = None  # masked: int64 scalar, copies over capacity (0 when max_m holds them)


def _check(x: torch.Tensor, topk_ids: torch.Tensor, num_experts: int) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or not x.is_floating_point():
        raise ValueError(f"x: expected a [T, K] floating-point tensor, got {getattr(x, 'shape', type(x).__name__)}")
    if (not isinstance(topk_ids, torch.Tensor) or topk_ids.dim() != 2 or topk_ids.shape[0] != x.shape[0]
            or topk_ids.dtype not in (torch.int32, torch.int64)):
        raise ValueError(f"topk_ids: expected an int32/int64 [T, k] tensor with T = {x.shape[0]} (x's rows), got "
                         f"{getattr(topk_ids, 'dtype', '?')} {tuple(getattr(topk_ids, 'shape', ()))}")
    if topk_ids.device != x.device:
        raise ValueError(f"topk_ids: expected a tensor on {x.device} (where x is), got {topk_ids.device}")
    if not isinstance(num_experts, int) or isinstance(num_experts, bool) or num_experts < 1:
        raise ValueError(f"num_experts: expected a positive integer, got {num_experts!r}")


def _sorted(topk_ids: torch.Tensor, num_experts: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                                 torch.Tensor]:
    """The routed copies sorted by expert (stable: token order within an expert): (order, each sorted copy's
    expert, its position within its expert, the counts per expert), all on the device, no host read."""
    flat = topk_ids.reshape(-1).long()
    valid = (flat >= 0) & (flat < num_experts)
    flat = torch.where(valid, flat, num_experts)  # an id outside the experts sorts last, as its own "expert"
    order = torch.sort(flat, stable=True).indices
    experts = flat[order]
    counts = torch.zeros(num_experts + 1, dtype=torch.int64, device=flat.device)
    counts.scatter_add_(0, flat, torch.ones_like(flat))
    starts = torch.cumsum(counts, 0) - counts
    position = torch.arange(flat.numel(), device=flat.device) - starts[experts]
    return order, experts, position, counts[:num_experts]


def dispatch(x: torch.Tensor, topk_ids: torch.Tensor, num_experts: int, layout: str = "contiguous",
             max_m: int | None = None) -> Dispatched:
    """x [T, K] (bf16 or fp32 activations) and topk_ids [T, k] (each token's experts, in [0, num_experts)) -> the
    FP8 A operand of the grouped GEMM in `layout` ("contiguous": every expert's rows a segment aligned to 128 rows;
    "masked": [G, max_m, K] with `masked_m`), and the row map that `combine` reads. An expert id outside
    [0, num_experts) is an error in the contiguous form (checked on the host) and a dropped copy in the masked one
    (row -1, counted in `dropped`: no host read there)."""
    _check(x, topk_ids, num_experts)
    if layout not in LAYOUTS:
        raise ValueError(f"layout: expected one of {LAYOUTS}, got {layout!r}")
    t, k = topk_ids.shape
    if layout == "contiguous":
        if max_m is not None:
            raise ValueError("max_m: only the masked layout has a capacity")
        if t * k and (int(topk_ids.min()) < 0 or int(topk_ids.max()) >= num_experts):
            raise ValueError(f"topk_ids: expected expert ids in [0, {num_experts}), got {int(topk_ids.min())}.."
                             f"{int(topk_ids.max())}")
    order, experts, position, counts = _sorted(topk_ids, num_experts)
    source = order // k  # the token each sorted copy comes from
    row_map = torch.empty(t * k, dtype=torch.int64, device=x.device)
    if layout == "contiguous":
        host = counts.tolist()  # sizes A: the one host read of this form
        padded = [ceil_div(c, CONTIGUOUS_ALIGNMENT) * CONTIGUOUS_ALIGNMENT for c in host]
        offsets = torch.tensor([0, *itertools.accumulate(padded[:-1])], dtype=torch.int64, device=x.device)
        rows = offsets[experts] + position
        m_total = sum(padded)
        src = torch.full((m_total,), -1, dtype=torch.int64, device=x.device)  # each row's token; -1: padding
        src[rows] = source
        q, s = _cast_rows(x, src, (m_total,))
        m_indices = torch.full((m_total,), -1, dtype=torch.int32, device=x.device)
        m_indices[rows] = experts.to(torch.int32)
        row_map[order] = rows
        return Dispatched((q, s), layout, row_map.view(t, k), m_indices=m_indices)
    if max_m is None or not isinstance(max_m, int) or isinstance(max_m, bool) or max_m < 1:
        raise ValueError(f"max_m: the masked layout needs its capacity per expert, a positive integer; got {max_m!r}")
    kept = (position < max_m) & (experts < num_experts)  # over capacity, or an id outside the experts: dropped
    # Each row's token (-1: past masked_m, a zero row); a scratch entry past the groups takes the dropped copies (no
    # boolean indexing, no host read).
    spill = num_experts * max_m
    dest = experts * max_m + position
    src = torch.full((spill + 1,), -1, dtype=torch.int64, device=x.device)
    src[torch.where(kept, dest, spill)] = source
    a = _cast_rows(x, src[:spill], (num_experts, max_m))
    row_map[order] = torch.where(kept, dest, -1)
    masked_m = counts.clamp(max=max_m).to(torch.int32)
    return Dispatched(a, layout, row_map.view(t, k), masked_m=masked_m, dropped=(~kept).sum())


def _cast_rows(x: torch.Tensor, src: torch.Tensor, rows: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """The FP8 operand [*rows, K] (and its 1x128 scales, TMA layout) whose row r is per_token_cast_to_fp8(x[src[r]]),
    zeros where src[r] = -1: one row kernel on the GPU (runtime/rows.py), the cast of each token once and a gather
    elsewhere."""
    hidden = x.shape[1]
    q, s = empty_per_token_fp8(*rows, hidden, device=x.device)
    flat = q.view(-1, hidden)
    if x.dtype in (torch.bfloat16, torch.float32) and rows_fit(x):
        cast_rows(x, src, flat, s)
        return q, s
    q_x, s_x = per_token_cast_to_fp8(torch.cat([x, x.new_zeros(1, hidden)]))  # a last zero row for src = -1
    s_x[-1] = 0.0
    flat.copy_(q_x[src])
    s.copy_(s_x[src].view(*rows, s.shape[-1]))
    return q, s


def interleave_gate_up(gate: torch.Tensor, up: torch.Tensor, rows_per_block: int = 128) -> torch.Tensor:
    """The SwiGLU epilogue's B: gate and up weights [(G,) I, K] (or their [(G,) I/128, K/128] block scales, with
    rows_per_block=1) -> [(G,) 2I, K] with rows in alternating blocks: gate rows 0..127, up rows 0..127, gate rows
    128..255, ... A 256-wide tile then holds a gate block and its up block (and the block scales stay per 128 rows),
    so out[:, j] = SiLU(gate_j . x) * (up_j . x) is computed in the tile. I must be a multiple of the block."""
    if not isinstance(gate, torch.Tensor) or not isinstance(up, torch.Tensor) or gate.shape != up.shape \
            or gate.dim() not in (2, 3):
        raise ValueError(f"gate, up: expected two [(G,) I, K] tensors of one shape, got "
                         f"{tuple(getattr(gate, 'shape', ()))} and {tuple(getattr(up, 'shape', ()))}")
    *lead, rows, k = gate.shape
    if not isinstance(rows_per_block, int) or rows_per_block < 1 or rows % rows_per_block:
        raise ValueError(f"rows_per_block: expected a positive divisor of gate's {rows} rows, got {rows_per_block!r}")
    blocks = rows // rows_per_block
    both = torch.stack([gate.reshape(*lead, blocks, rows_per_block, k), up.reshape(*lead, blocks, rows_per_block, k)],
                       dim=-3)  # [(G,) blocks, 2, rows_per_block, K]
    return both.reshape(*lead, 2 * rows, k).contiguous()


def combine(y: torch.Tensor, row_map: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
    """The grouped GEMM's output rows back per token: out[t] = sum_j topk_weights[t, j] * y[row_map[t, j]] (a
    dropped copy, row -1, adds nothing), in fp32, returned bf16 [T, N]. y: [M_total, N] (contiguous) or [G, max_m, N]
    (masked, read flattened over the groups)."""
    if not isinstance(y, torch.Tensor) or y.dim() not in (2, 3):
        raise ValueError(f"y: expected the grouped GEMM's [M_total, N] or [G, max_m, N] output, got "
                         f"{getattr(y, 'shape', type(y).__name__)}")
    flat = y.reshape(-1, y.shape[-1])
    if not isinstance(row_map, torch.Tensor) or row_map.dim() != 2 or row_map.dtype != torch.int64:
        raise ValueError(f"row_map: expected dispatch's int64 [T, k] row map, got "
                         f"{getattr(row_map, 'dtype', '?')} {tuple(getattr(row_map, 'shape', ()))}")
    if not isinstance(topk_weights, torch.Tensor) or topk_weights.shape != row_map.shape:
        raise ValueError(f"topk_weights: expected shape {tuple(row_map.shape)} (row_map's), got "
                         f"{tuple(getattr(topk_weights, 'shape', ()))}")
    if flat.dtype == torch.bfloat16 and rows_fit(flat):  # one row kernel: each routed row read once
        out = torch.empty(row_map.shape[0], flat.shape[1], dtype=torch.bfloat16, device=flat.device)
        combine_rows(flat, row_map.contiguous(), topk_weights.float().contiguous(), out)
        return out
    # One fp32 accumulator; each of the k copies gathered and added in turn (a dropped copy, row -1, reads row 0
    # with weight 0), so only the T x k routed rows are read
    keep = row_map >= 0
    rows = torch.where(keep, row_map, 0)
    weights = torch.where(keep, topk_weights.float(), 0.0)
    out = torch.zeros(row_map.shape[0], flat.shape[1], dtype=torch.float32, device=flat.device)
    for j in range(row_map.shape[1]):
        out.addcmul_(flat[rows[:, j]], weights[:, j:j + 1])
    return out.to(torch.bfloat16)
