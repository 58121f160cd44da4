"""What to compute: `GemmProblem` (docs/CONVENTIONS.md #1). How to compute it is `GemmConfig`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class GemmKind(Enum):
    NORMAL = "normal"  # one dense GEMM: D[M, N] = A[M, K] B[N, K]^T
    # MoE grouped GEMMs (DeepGEMM's m-grouped layouts): B is [G, N, K], one matrix per expert.
    M_GROUPED_CONTIGUOUS = "m_grouped_contiguous"  # A rows of all experts concatenated, each segment aligned to
    # CONTIGUOUS_ALIGNMENT rows; a run-time int32 m_indices[M] gives each row's expert (-1: padding)
    M_GROUPED_MASKED = "m_grouped_masked"  # A [G, M_max, K]; only the first masked_m[g] rows of group g count,
    # masked_m lives on the GPU (CUDA-graph decoding)
    # The per-expert weight gradients of an MoE layer (DeepGEMM's k_grouped_wgrad_gemm_fp8_fp8_fp32_nt): G groups
    # concatenated along K (A [M, sum K], B [N, sum K], each group's K a multiple of 128, zero legal), D [G, M, N]
    # fp32; K is a run-time argument (per-group k-block offsets on the GPU), `k` is the expected K per group.
    K_GROUPED = "k_grouped"

    @property
    def is_grouped(self) -> bool:
        return self is not GemmKind.NORMAL

    @property
    def tag(self) -> str:
        """The kernel-name fragment of the kind (dense kernels keep their 0.1 names)."""
        return {"normal": "", "m_grouped_contiguous": "_gcontig", "m_grouped_masked": "_gmasked",
                "k_grouped": "_kgrouped"}[self.value]


class DType(Enum):
    E4M3 = "e4m3"
    E5M2 = "e5m2"
    BF16 = "bf16"
    FP32 = "fp32"

    @property
    def bytes(self) -> int:
        return {"e4m3": 1, "e5m2": 1, "bf16": 2, "fp32": 4}[self.value]


FP8_DTYPES = (DType.E4M3, DType.E5M2)


class Major(Enum):
    K = "k"  # rows are contiguous along K ("T" in NT): the only layout FP8 wgmma reads from shared memory


class ScaleRecipe(Enum):
    """How A and B are scaled (the recipe is part of the problem and of the kernel's name)."""

    # A: one scale per row per 128 columns of K; B: one scale per 128x128 block (DeepGEMM's "1D2D"). Each 128-wide
    # k-block is accumulated by wgmma, then promoted into FP32 registers times its scales.
    A1x128_B128x128 = "1x128/128x128"
    # A and B: one scale per row per 128 columns of K (DeepGEMM's "1D1D", the weight-gradient GEMM of training).
    A1x128_B1x128 = "1x128/1x128"
    # One scale for all of A and one for all of B (torch._scaled_mm "tensorwise"): wgmma accumulates the whole K,
    # the epilogue multiplies by sa * sb.
    TENSOR = "tensor"
    # SA [M] per row, SB [N] per column (torch._scaled_mm "rowwise"): whole-K accumulation, epilogue sa[i] * sb[j].
    CHANNEL = "channel"
    # No scales: BF16 inputs.
    NONE = "none"

    @property
    def promotes(self) -> bool:
        """Scales change along K: each k-block is promoted into FP32 registers times its scales."""
        return self in (ScaleRecipe.A1x128_B128x128, ScaleRecipe.A1x128_B1x128)

    @property
    def epilogue_scaled(self) -> bool:
        """Scales constant along K: applied once, in the epilogue."""
        return self in (ScaleRecipe.TENSOR, ScaleRecipe.CHANNEL)

    @property
    def tag(self) -> str:
        """The kernel-name fragment (the block recipe keeps 0.1's names)."""
        return {"1x128/128x128": "", "1x128/1x128": "_s1d1d", "tensor": "_stensor", "channel": "_schannel",
                "none": ""}[self.value]


# The recipes the kernels implement (the others are rejected by GemmProblem with this list).
IMPLEMENTED_RECIPES = (ScaleRecipe.A1x128_B128x128, ScaleRecipe.A1x128_B1x128, ScaleRecipe.TENSOR,
                       ScaleRecipe.CHANNEL, ScaleRecipe.NONE)
# The recipes each grouped kind implements: the block recipe, and bf16 (none) in both m-grouped layouts.
GROUPED_RECIPES = {
    GemmKind.M_GROUPED_CONTIGUOUS: (ScaleRecipe.A1x128_B128x128, ScaleRecipe.NONE),
    GemmKind.M_GROUPED_MASKED: (ScaleRecipe.A1x128_B128x128, ScaleRecipe.NONE),
}
# The D dtypes the epilogue writes: bf16, fp32 (dense and k-grouped), e4m3 with 1x128 scales it computes.
OUT_DTYPES = (DType.BF16, DType.FP32, DType.E4M3)
SWIGLU_BLOCK = 256  # B rows of one gate block and its up block (128 each): a 256-wide tile holds both
SWIZZLE_ROW_BYTES = 128  # one k-block is one 128-byte swizzled K-major row of A and B: 128 FP8 or 64 bf16

SCALE_BLOCK = 128  # the K (and B's N) granularity of the block scales
# Every expert's segment of a contiguous-layout A starts at a multiple of this many rows, so one M tile never
# holds two experts (DeepGEMM's get_m_alignment_for_contiguous_layout() is 128 too). Tiles must divide it.
CONTIGUOUS_ALIGNMENT = 128


# NOTE: the kernels index rows and columns with 32-bit ints (as the TMA coordinates are, CUDA driver API
# cuTensorMapEncodeTiled/cp.async.bulk.tensor): N, K and the B-scale grid must fit with a tile to spare.
INT32_MAX = 2**31 - 1
MAX_DIM = INT32_MAX - 256  # the largest N or K: n0 + block_n (<= 256) stays a valid int


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def is_int(value: object) -> bool:
    """An int that is not a bool (True is an int to Python, never a size to gemmgen)."""
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class GemmProblem:
    # Rows that drive config selection (the kernel takes its row count at run time): dense: M; contiguous: M_total
    # (all experts' aligned rows); masked: the expected rows per group (`expected_m`; M_max is a run-time argument).
    m: int
    n: int  # rows of B (per group), columns of D
    k: int  # reduction length
    kind: GemmKind = GemmKind.NORMAL
    groups: int = 1  # experts G (grouped kinds; a run-time argument of the kernel, used here for selection)
    a_dtype: DType = DType.E4M3
    b_dtype: DType = DType.E4M3
    out_dtype: DType = DType.BF16
    a_major: Major = Major.K
    b_major: Major = Major.K
    scales: ScaleRecipe = ScaleRecipe.A1x128_B128x128
    accumulate: bool = False  # D += A.B^T (D read and added by the TMA store's reduce-add); FP32 D only
    # The fused epilogue of a MoE expert's first GEMM: B holds the gate and up weights in alternating 128-row blocks
    # (rows 256j..256j+127 gate rows 128j.., the next 128 the matching up rows; `moe.interleave_gate_up`), and D has
    # N / 2 columns, SiLU(gate) * up. With out_dtype e4m3 (any kind but k-grouped) the kernel also writes D's 1x128
    # scales (per row per 128 columns: amax / 448 of the bf16-rounded values, gemmgen.per_token_cast_to_fp8's).
    swiglu: bool = False

    def __post_init__(self) -> None:
        for name in ("m", "n", "k", "groups"):
            if not is_int(getattr(self, name)):
                raise ValueError(f"GemmProblem.{name}: expected an integer, got {getattr(self, name)!r}")
        if self.m < 0:
            raise ValueError(f"GemmProblem.m: expected M >= 0, got {self.m}")
        # NOTE: TMA global strides must be multiples of 16 bytes (CUDA driver API, cuTensorMapEncodeTiled):
        # rows of e4m3 A/B (K bytes) need K % 16 (bf16: K % 8), rows of bf16 D (2N bytes) need N % 8.
        k_multiple = 8 if self.a_dtype is DType.BF16 else 16
        for name, multiple in (("n", 8), ("k", k_multiple)):
            value = getattr(self, name)
            if value <= 0 or value % multiple:
                raise ValueError(f"GemmProblem.{name}: expected a positive multiple of {multiple} (TMA 16-byte "
                                 f"row strides), got {value}")
        for name in ("n", "k"):
            if getattr(self, name) > MAX_DIM:
                raise ValueError(f"GemmProblem.{name}: at most {MAX_DIM} (the kernel's 32-bit row/column indices and "
                                 f"TMA coordinates), got {getattr(self, name)}")
        if self.sfb_rows * self.k_blocks * self.groups > INT32_MAX:
            raise ValueError(f"GemmProblem: {self.groups} x {self.sfb_rows} x {self.k_blocks} B scales "
                             f"exceed the kernel's 32-bit scale indexing")
        if self.m > INT32_MAX:
            raise ValueError(f"GemmProblem.m: at most {INT32_MAX} (32-bit row indices), got {self.m}")
        if not isinstance(self.kind, GemmKind):
            raise ValueError(f"GemmProblem.kind: expected a GemmKind, got {self.kind!r}")
        if self.groups < 1 or (not self.kind.is_grouped and self.groups != 1):
            want = "groups >= 1" if self.kind.is_grouped else "groups == 1 for a dense GEMM"
            raise ValueError(f"GemmProblem.groups: expected {want}, got {self.groups}")
        if self.kind is GemmKind.M_GROUPED_CONTIGUOUS and self.m % CONTIGUOUS_ALIGNMENT:
            raise ValueError(f"GemmProblem.m: a contiguous grouped layout has M_total a multiple of "
                             f"{CONTIGUOUS_ALIGNMENT} (every expert's segment is aligned), got {self.m}")
        if not isinstance(self.scales, ScaleRecipe):
            raise ValueError(f"GemmProblem.scales: expected a ScaleRecipe, got {self.scales!r}")
        if self.scales not in IMPLEMENTED_RECIPES:
            raise ValueError(f"GemmProblem.scales: the {self.scales.value} recipe is not implemented yet; implemented: "
                             + ", ".join(r.value for r in IMPLEMENTED_RECIPES))
        bf16 = (self.a_dtype, self.b_dtype) == (DType.BF16, DType.BF16)
        fp8 = self.a_dtype in FP8_DTYPES and self.b_dtype in FP8_DTYPES
        if not (bf16 or fp8) or self.out_dtype not in OUT_DTYPES:
            raise ValueError("GemmProblem dtypes: A and B e4m3 or e5m2 (either) or both bf16, D bf16, fp32 or e4m3 "
                             f"implemented; got {self.a_dtype.value} x {self.b_dtype.value} -> {self.out_dtype.value}")
        if bf16 != (self.scales is ScaleRecipe.NONE):
            raise ValueError(f"GemmProblem.scales: bf16 inputs take the 'none' recipe and FP8 inputs a scaled one; got "
                             f"{self.a_dtype.value} inputs with {self.scales.value}")
        if self.kind is GemmKind.K_GROUPED:
            if self.scales is not ScaleRecipe.A1x128_B1x128 or self.out_dtype is not DType.FP32:
                raise ValueError("GemmProblem: a k-grouped GEMM is the weight gradient: scales 1x128/1x128 and fp32 D "
                                 f"(got scales {self.scales.value}, D {self.out_dtype.value})")
            if self.k % SCALE_BLOCK:
                raise ValueError(f"GemmProblem.k: a k-grouped GEMM's groups are whole 128-wide k-blocks; the expected "
                                 f"K per group must be a multiple of 128, got {self.k}")
        elif self.kind.is_grouped and self.scales not in GROUPED_RECIPES.get(self.kind, ()):
            where = " and the m-grouped layouts" if self.scales is ScaleRecipe.NONE else ""
            raise ValueError(f"GemmProblem.scales: the {self.scales.value} recipe is implemented for dense GEMMs"
                             f"{where} only (got kind {self.kind.value})")
        if not isinstance(self.accumulate, bool):
            raise ValueError(f"GemmProblem.accumulate: expected a bool, got {self.accumulate!r}")
        if not isinstance(self.swiglu, bool):
            raise ValueError(f"GemmProblem.swiglu: expected a bool, got {self.swiglu!r}")
        if self.swiglu and self.n % SWIGLU_BLOCK:
            raise ValueError(f"GemmProblem.n: a SwiGLU GEMM's B holds gate and up in alternating "
                             f"{SWIGLU_BLOCK // 2}-row blocks, so N must be a multiple of {SWIGLU_BLOCK}, got {self.n}")
        if self.swiglu and self.out_dtype is DType.FP32:
            raise ValueError("GemmProblem.swiglu: the SwiGLU epilogue writes a bf16 or e4m3 D, got fp32")
        if self.out_dtype is DType.E4M3 and self.out_n % 16:
            raise ValueError(f"GemmProblem.n: an e4m3 D's rows are TMA rows of 16-byte multiples, so its {self.out_n} "
                             "columns must be a multiple of 16")
        forward = not (self.kind is GemmKind.K_GROUPED or self.accumulate or self.scales is ScaleRecipe.A1x128_B1x128)
        if self.fused_epilogue and not forward:
            raise ValueError("GemmProblem: the fused epilogues (swiglu, e4m3 out with scales) are implemented for the "
                             "forward GEMMs (dense, contiguous, masked; not 1x128/1x128, k-grouped or accumulate), got "
                             f"{self.kind.value}, scales {self.scales.value}"
                             f"{', accumulate' if self.accumulate else ''}")

    @property
    def out_n(self) -> int:
        """Columns of D: N, or N / 2 with SwiGLU (one per gate/up pair)."""
        return self.n // 2 if self.swiglu else self.n

    @property
    def fused_epilogue(self) -> bool:
        """The epilogue transforms the tile before storing it (SwiGLU, and/or FP8 with its computed scales)."""
        return self.swiglu or self.out_dtype is DType.E4M3

    @property
    def k_blocks(self) -> int:
        """Number of K blocks (k_block wide); the last one may be partial (TMA zero-fills it)."""
        return ceil_div(self.k, self.k_block)

    @property
    def k_block(self) -> int:
        """K per pipeline stage: one 128-byte swizzled row (128 FP8 = one scale block, or 64 bf16)."""
        return SWIZZLE_ROW_BYTES // self.a_dtype.bytes

    @property
    def n_scale_blocks(self) -> int:
        return ceil_div(self.n, SCALE_BLOCK)

    @property
    def sfb_rows(self) -> int:
        """Rows of SB: one per 128 rows of B (block recipe), one per row of B (1x128/1x128)."""
        return self.n if self.scales is ScaleRecipe.A1x128_B1x128 else self.n_scale_blocks

    def n_blocks(self, block_n: int) -> int:
        """Tiles along N (the last one may be partial: TMA clips its store)."""
        return ceil_div(self.n, block_n)

    @property
    def total_rows(self) -> int:
        """Rows of A the kernel is expected to compute: masked problems have `m` rows in each of the groups."""
        return self.m * self.groups if self.kind in (GemmKind.M_GROUPED_MASKED, GemmKind.K_GROUPED) else self.m

    def m_blocks(self, block_m: int) -> int:
        """Expected tiles along M over all groups (a masked group's last tile is partial)."""
        if self.kind in (GemmKind.M_GROUPED_MASKED, GemmKind.K_GROUPED):
            return ceil_div(max(self.m, 1), block_m) * self.groups
        return ceil_div(max(self.m, 1), block_m)

    @property
    def flops(self) -> int:
        return 2 * self.total_rows * self.n * self.k

    def short(self) -> str:
        groups = f" ({self.kind.value}, {self.groups} groups)" if self.kind.is_grouped else ""
        out = "" if self.out_dtype is DType.BF16 else f" -> {self.out_dtype.value}{' +=' if self.accumulate else ''}"
        out = (" swiglu" if self.swiglu else "") + out
        ins = "" if (self.a_dtype, self.b_dtype) == (DType.E4M3, DType.E4M3) else \
            f" {self.a_dtype.value} x {self.b_dtype.value}"
        recipe = "" if self.scales is ScaleRecipe.A1x128_B128x128 else f" scales {self.scales.value}"
        return f"{self.m}x{self.n}x{self.k}{groups}{ins}{recipe}{out}"
