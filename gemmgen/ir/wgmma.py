"""The WGMMA instruction table: operand counts and mnemonics are computed, never hand-written per N."""

from __future__ import annotations

from dataclasses import dataclass

# NOTE: wgmma.mma_async for .e4m3/.e5m2 inputs has shape m64nNk32, for .bf16 m64nNk16 (32 bytes of K either way),
# with N in 8..256 step 8 (PTX ISA 8.x, "Matrix shape" table for wgmma, section 9.7.15.5.1).
WGMMA_M = 64
WGMMA_K_BYTES = 32  # K bytes per instruction for every input type gemmgen uses
TYPES = ("e4m3", "e5m2", "bf16")
LEGAL_N = tuple(range(8, 257, 8))


@dataclass(frozen=True, slots=True)
class WgmmaShape:
    n: int  # instruction N: the tile's BLOCK_N
    a_type: str = "e4m3"  # PTX operand types: .e4m3 or .e5m2 (either for A and B), or .bf16 for both
    # (PTX ISA 9.7.15.5.1)
    b_type: str = "e4m3"

    def __post_init__(self) -> None:
        if self.n not in LEGAL_N:
            raise ValueError(f"WgmmaShape.n: FP8 wgmma N must be a multiple of 8 in 8..256, got {self.n}")
        for name in ("a_type", "b_type"):
            if getattr(self, name) not in TYPES:
                raise ValueError(f"WgmmaShape.{name}: expected one of {TYPES}, got {getattr(self, name)!r}")
        if (self.a_type == "bf16") != (self.b_type == "bf16"):
            raise ValueError("WgmmaShape: bf16 wgmma takes bf16 A and B (no mixing with FP8)")

    @property
    def k(self) -> int:
        return WGMMA_K_BYTES // (2 if self.a_type == "bf16" else 1)

    @property
    def accum_regs(self) -> int:
        """FP32 accumulator registers per thread: a 64xN tile spread over the 128 threads of a warpgroup."""
        return WGMMA_M * self.n // 128

    @property
    def mnemonic(self) -> str:
        return f"wgmma.mma_async.sync.aligned.m{WGMMA_M}n{self.n}k{self.k}.f32.{self.a_type}.{self.b_type}"

    @property
    def trailing_immediates(self) -> str:
        """The 16-bit types take imm-trans-a and imm-trans-b after imm-scale-a/b (0: K-major, PTX ISA 9.7.15.5.1)."""
        return ", 0, 0" if self.a_type == "bf16" else ""

    @property
    def sass_opcode(self) -> str:
        if self.a_type == "bf16":
            return f"HGMMA.64x{self.n}x16.F32.BF16"
        return f"QGMMA.64x{self.n}x32.F32.{self.a_type.upper()}.{self.b_type.upper()}"

    def asm_operands(self) -> tuple[str, str]:
        """(register list text, output constraints text) for the inline-asm template."""
        regs = ", ".join(f"%{i}" for i in range(self.accum_regs))
        outs = ", ".join(f'"+f"(d[{i}])' for i in range(self.accum_regs))
        return regs, outs
