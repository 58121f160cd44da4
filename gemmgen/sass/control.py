"""The control bits of a Hopper (sm_90a) instruction: decode them from, and re-encode them into, the high 64-bit word.

Every Volta-and-later instruction is 128 bits; the scheduling controls that ptxas decides live in bits 41..61 of the
high word (bits 105..125 of the instruction):

| bits  | field         | meaning |
|-------|---------------|---------|
| 41-44 | stall         | cycles to wait before issuing the next instruction of this warp |
| 45    | yield         | *inverted*: 0 = the scheduler may switch to another warp after this instruction |
| 46-48 | write barrier | scoreboard (0-5) released when the result is written; 7 = none |
| 49-51 | read barrier  | scoreboard (0-5) released when the operands are read; 7 = none |
| 52-57 | wait mask     | scoreboards (one bit each) that must be released before this instruction issues |
| 58-61 | reuse         | operand reuse-cache flags: bit 0 = source slot a, 1 = b, 2 = c, 3 = d |

Sources: Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking" (arXiv:1804.06826, 2018,
section 2.1: 23 control bits at the top of the 128-bit word, two zero bits then, from the top, reuse 4, wait mask 6,
read barrier 3, write barrier 3, yield 1, stall 4; reuse bit 0 is the first source operand slot); CuAssembler (github
cloudcores/CuAssembler, `CuAsm/CuSMVersion.py`: the sm_7x/8x control code starts at bit 64+41;
`CuAsm/CuControlCode.py`: stall/yield/write/read/wait at bits 0/4/5/8/11 of that code, and `isYield` is true when the
yield bit is 0); DeepGEMM's `deep_gemm/jit/interleave_ffma.py` flips 0x0800000000000000 (bit 59: reuse of slot b)
together with 0x0000200000000000 (bit 45) on the FFMAs where it wants the warp to yield.

Checked on our own cubins (NVRTC 13.0.88, three kernels, 3520 instructions): every instruction whose listing prints
`.reuse` has bits 58..61 set and no other has; an FFMA's `.reuse` on its text operand i (d, a, b, c) sets reuse bit
i-1; bits 62..63 are never set; and no instruction with bit 45 clear carries a reuse flag (ptxas never keeps the
reuse cache across a point where the warp may be switched out), consistent with bit 45 = 0 being the yield.

Bits 62..63 belong to no control field and are left alone (CONTROL_MASK does not cover them). For a few opcodes
(CuAssembler notes TEXS, BRA, HMMA.SP) bits 58..61 encode something else: code that changes reuse flags must do so
only where the listing prints `.reuse` on that instruction.
"""

from __future__ import annotations

from dataclasses import dataclass

_STALL, _YIELD, _WRITE, _READ, _WAIT, _REUSE = 41, 45, 46, 49, 52, 58
CONTROL_MASK = ((1 << 21) - 1) << _STALL  # bits 41..61
REUSE_MASK = 0xF << _REUSE
NO_BARRIER = 7  # write/read barrier field value meaning "no scoreboard"


@dataclass(frozen=True, slots=True)
class Control:
    stall: int  # 0..15 cycles
    yield_: bool  # True: the warp may be switched out after this instruction (encoded as bit 45 = 0)
    write_barrier: int  # 0..5, or 7 for none
    read_barrier: int  # 0..5, or 7 for none
    wait_mask: int  # 6-bit mask of scoreboards waited on
    reuse: int  # 4-bit mask: bit 0 = operand slot a, 1 = b, 2 = c, 3 = d

    def __post_init__(self) -> None:
        for name, value, bits in (("stall", self.stall, 4), ("write_barrier", self.write_barrier, 3),
                                  ("read_barrier", self.read_barrier, 3), ("wait_mask", self.wait_mask, 6),
                                  ("reuse", self.reuse, 4)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < (1 << bits):
                raise ValueError(f"Control.{name}={value!r}: expected an int in 0..{(1 << bits) - 1}")
        if not isinstance(self.yield_, bool):
            raise ValueError(f"Control.yield_={self.yield_!r}: expected a bool")


def decode(high: int) -> Control:
    """The control fields of an instruction's high 64-bit word."""
    return Control(stall=(high >> _STALL) & 0xF, yield_=not (high >> _YIELD) & 1,
                   write_barrier=(high >> _WRITE) & 0x7, read_barrier=(high >> _READ) & 0x7,
                   wait_mask=(high >> _WAIT) & 0x3F, reuse=(high >> _REUSE) & 0xF)


def encode(control: Control, high: int) -> int:
    """`high` with its control bits replaced by `control`; every other bit (0..40, 62..63) is kept."""
    bits = (control.stall << _STALL | (0 if control.yield_ else 1) << _YIELD | control.write_barrier << _WRITE
            | control.read_barrier << _READ | control.wait_mask << _WAIT | control.reuse << _REUSE)
    return (high & ~CONTROL_MASK & 0xFFFF_FFFF_FFFF_FFFF) | bits
