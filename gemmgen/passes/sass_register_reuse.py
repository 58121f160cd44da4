"""sass_register_reuse: clear operand reuse flags on instructions after which the warp may yield.

Reads: the parsed SASS as sass_interleave_ffma left it (stages applies each pass's patches to the instruction list
before the next pass reads it). Decides: which reuse flags (control bits 58..61) to clear. Runs after:
sass_interleave_ffma (and any later pass that sets yields).

Why: a reuse flag on an operand of instruction i keeps that register's value in the operand reuse cache so that
instruction i+1 can read it from there instead of the register file (Jia et al., arXiv:1804.06826, section 2.1).
NVIDIA does not document whether the cached value survives when the scheduler switches to another warp after i
(i has the yield hint); ptxas treats it as lost: it never sets a reuse flag on an instruction that may yield (0 of
811 yielding instructions in three NVRTC 13.0 kernels carry one), and DeepGEMM clears the reuse bit in
the same patch that sets the yield (`deep_gemm/jit/interleave_ffma.py`). One rule covers both halves of "the
instruction, or the one before it, may yield": the flags that feed i+1 are the ones on i, so clearing every flag of
each yielding instruction leaves no cached value read across a switch; the next reader then reads the register
file, which is always correct (only slower on a bank conflict).

Flags are cleared only where nvdisasm prints `.reuse` on the instruction, so bits 58..61 are known to be reuse
flags there (CuAssembler notes opcodes where they encode something else).

Not done: setting new reuse flags where two consecutive FFMAs read the same register in the same slot. The encoding
is known (nvdisasm prints `.reuse` on the slot whose bit is set), but on NVRTC 13.0 kernels ptxas already flags
every such FFMA pair that does not yield (0 candidates in the 48 kernels of the compile matrix, before and after
sass_interleave_ffma), so it would change nothing, and whether the hardware honours a flag ptxas chose not to set
cannot be checked without a GPU.
"""

from __future__ import annotations

import dataclasses

from ..sass.control import decode, encode
from ..sass.parse import Instruction
from ..sass.patch import Patch

NAME = "register_reuse"


def incoherent(instructions: list[Instruction]) -> list[Instruction]:
    """Instructions that may yield and still set a reuse flag (none may, after this pass)."""
    return [i for i in instructions if ".reuse" in i.operands and decode(i.high).yield_ and decode(i.high).reuse]


def run(instructions: list[Instruction]) -> list[Patch]:
    patches = []
    for ins in incoherent(instructions):
        new = encode(dataclasses.replace(decode(ins.high), reuse=0), ins.high)
        patches.append(Patch(ins.function, ins.address, new, ins.high))
    return patches
