"""The MoE contiguous layout: each expert's rows concatenated along M, every segment padded to the alignment.

    layout = gemmgen.contiguous_layout([300, 0, 129], device="cuda")   # rows per expert, on the host
    a, sa = gemmgen.per_token_cast_to_fp8(layout.scatter(x))           # x [429, K] -> [M_total, K], padding = 0
    gemmgen.m_grouped_fp8_gemm_nt_contiguous((a, sa), (b, sb), out, layout.m_indices)
    y = layout.gather(out)                                             # [M_total, N] -> [429, N]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .ir import CONTIGUOUS_ALIGNMENT, ceil_div, is_int


def get_m_alignment_for_contiguous_layout() -> int:
    """Rows every expert's segment of a contiguous-layout A is aligned to (a tile never holds two experts)."""
    return CONTIGUOUS_ALIGNMENT


@dataclass(frozen=True)
class ContiguousLayout:
    counts: tuple[int, ...]  # rows of each expert in the input (tokens routed to it)
    offsets: tuple[int, ...]  # first row of each expert's segment in the aligned layout
    m_total: int  # rows of the aligned layout: every segment rounded up to the alignment
    m_indices: torch.Tensor  # int32 [m_total]: each row's expert, -1 on padding rows
    rows: torch.Tensor  # int64 [sum(counts)]: the aligned row of each input row (input grouped by expert, in order)

    def scatter(self, x: torch.Tensor) -> torch.Tensor:
        """Input rows (grouped by expert, experts in order) -> the aligned layout; padding rows are zero."""
        if not isinstance(x, torch.Tensor) or x.dim() < 1 or x.shape[0] != self.rows.numel():
            shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x: expected {self.rows.numel()} rows (the sum of the counts), got {shape}")
        out = torch.zeros(self.m_total, *x.shape[1:], dtype=x.dtype, device=x.device)
        out[self.rows.to(x.device)] = x
        return out

    def gather(self, y: torch.Tensor) -> torch.Tensor:
        """The aligned layout's valid rows, back in input order (drops the padding rows)."""
        if not isinstance(y, torch.Tensor) or y.dim() < 1 or y.shape[0] != self.m_total:
            shape = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
            raise ValueError(f"y: expected {self.m_total} rows (the layout's M_total), got {shape}")
        return y[self.rows.to(y.device)]


def contiguous_layout(counts: Sequence[int] | torch.Tensor, *, device: torch.device | str | None = None,
                      alignment: int | None = None) -> ContiguousLayout:
    """The aligned layout of experts with `counts[g]` rows each (zero is legal); tensors are made on `device`.

    `counts` is read on the host (a CUDA tensor is copied back, which synchronises)."""
    align = alignment or CONTIGUOUS_ALIGNMENT
    if align % CONTIGUOUS_ALIGNMENT:
        raise ValueError(f"alignment: expected a multiple of {CONTIGUOUS_ALIGNMENT}, got {align}")
    values = counts.tolist() if isinstance(counts, torch.Tensor) else list(counts)
    if not values or any(not is_int(c) or c < 0 for c in values):
        raise ValueError(f"counts: expected a non-empty sequence of integers >= 0 (rows per expert), got {values!r}")
    padded = [ceil_div(c, align) * align for c in values]
    offsets = [sum(padded[:g]) for g in range(len(values))]
    m_indices = torch.full((sum(padded),), -1, dtype=torch.int32)
    rows = []
    for g, (count, offset) in enumerate(zip(values, offsets, strict=True)):
        m_indices[offset:offset + count] = g
        rows.append(torch.arange(offset, offset + count, dtype=torch.int64))
    return ContiguousLayout(tuple(values), tuple(offsets), sum(padded), m_indices.to(device),
                            torch.cat(rows).to(device))
