"""What to compute: `GemmProblem` (STYLE.md #1). How to compute it is `GemmConfig`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class GemmKind(Enum):
    NORMAL = "normal"  # one dense GEMM


class DType(Enum):
    E4M3 = "e4m3"
    BF16 = "bf16"
    FP32 = "fp32"

    @property
    def bytes(self) -> int:
        return {"e4m3": 1, "bf16": 2, "fp32": 4}[self.value]


class Major(Enum):
    K = "k"  # rows are contiguous along K ("T" in NT): the only layout FP8 wgmma reads from shared memory


class ScaleRecipe(Enum):
    # A: one scale per row per 128 columns of K; B: one scale per 128x128 block (DeepGEMM's "1D2D").
    A1x128_B128x128 = "1x128/128x128"


SCALE_BLOCK = 128  # the K (and B's N) granularity of the block scales


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True, slots=True)
class GemmProblem:
    m: int  # rows of A and D; the kernel takes M at run time, this value drives config selection
    n: int  # rows of B, columns of D
    k: int  # reduction length
    kind: GemmKind = GemmKind.NORMAL
    a_dtype: DType = DType.E4M3
    b_dtype: DType = DType.E4M3
    out_dtype: DType = DType.BF16
    a_major: Major = Major.K
    b_major: Major = Major.K
    scales: ScaleRecipe = ScaleRecipe.A1x128_B128x128

    def __post_init__(self) -> None:
        if self.m < 0:
            raise ValueError(f"GemmProblem.m: expected M >= 0, got {self.m}")
        # NOTE: TMA global strides must be multiples of 16 bytes (CUDA driver API, cuTensorMapEncodeTiled):
        # rows of e4m3 A/B (K bytes) need K % 16, rows of bf16 D (2N bytes) need N % 8.
        for name, multiple in (("n", 8), ("k", 16)):
            value = getattr(self, name)
            if value <= 0 or value % multiple:
                raise ValueError(f"GemmProblem.{name}: expected a positive multiple of {multiple} (TMA 16-byte "
                                 f"row strides), got {value}")
        if (self.a_dtype, self.b_dtype, self.out_dtype) != (DType.E4M3, DType.E4M3, DType.BF16):
            raise ValueError("GemmProblem dtypes: only e4m3 x e4m3 -> bf16 is implemented")

    @property
    def k_blocks(self) -> int:
        """Number of 128-wide K blocks; the last one may be partial (TMA zero-fills it)."""
        return ceil_div(self.k, SCALE_BLOCK)

    @property
    def n_scale_blocks(self) -> int:
        return ceil_div(self.n, SCALE_BLOCK)

    def n_blocks(self, block_n: int) -> int:
        """Tiles along N (the last one may be partial: TMA clips its store)."""
        return ceil_div(self.n, block_n)

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    def short(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"
