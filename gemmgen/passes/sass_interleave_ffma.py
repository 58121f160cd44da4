"""sass_interleave_ffma: set the yield hint on every second FFMA of the promotion's long FFMA runs.

Reads: the parsed SASS of the unpatched cubin (every function's instructions with both encoding words).
Decides: which promotion FFMAs get the yield hint (control bit 45 cleared, gemmgen.sass.control). Runs after: NVRTC;
sass_register_reuse must run after it (a yield on an FFMA that carries a reuse flag leaves that flag stale), which
`stages.resolve_sass_passes` enforces.

Why: after each 128-wide k-block the math warps add the wgmma partial sums into the FP32 accumulators with one long
run of `FFMA acc, partial, scale, acc` (block_n/2 of them per m64 wave and thread) while the tensor cores run the
next wgmma group asynchronously. Without a yield the warp scheduler of each SM sub-partition keeps issuing the run
from the same warp; a yield lets it issue from another warp it holds (the TMA producer warp, the other math
warpgroup that is waiting to issue its wgmma) in the middle of the run. DeepGEMM does this by patching its cubins
(`deep_gemm/jit/interleave_ffma.py`, 2025: runs of >= 16 FFMAs; over the first 9/16 of each, flip yield and reuse
together on every second FFMA that carries a reuse flag). NVRTC 13.0's ptxas already emits that pattern itself in
some of our kernels (m256n128: every second FFMA yields, the others carry `.reuse` on the scale) and none at all in
others (m64n112 with two accumulator sets: a 49-FFMA run without a single yield).

Rule: a promotion run is a maximal run of consecutive FFMAs whose first source register lies in the accumulator
registers of a QGMMA of the same function (a QGMMA.64xNx32 with destination Rd writes Rd..Rd+N/2-1: 64*N F32 values
over 128 threads); runs shorter than `min_run` are left alone. Over the first `head` fraction of each run, an FFMA
that follows `spacing` non-yielding FFMAs gets the yield, preferring FFMAs that carry no reuse flag: those read the
scale from the reuse cache that the FFMA before them filled, so the yield lands after the cache is consumed and the
flag is kept. That is the pattern ptxas itself emits (`y .reuse y .reuse ...`). An FFMA that carries a reuse flag
takes the yield when the next FFMA carries one too (runs where every FFMA reuses the scale: ptxas 13.0 emits them
in the m64n128 two-set kernel, older ptxas everywhere, and DeepGEMM yields every second one) or when the spacing
would otherwise pass `spacing` + 1; sass_register_reuse then clears its flag, so such a run becomes
`.reuse y .reuse y ...`, DeepGEMM's result.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

from ..sass.control import decode, encode
from ..sass.parse import Instruction
from ..sass.patch import Patch

NAME = "interleave_ffma"
_GMMA = re.compile(r"^[HQI]GMMA\.(?P<m>\d+)x(?P<n>\d+)x\d+")
_REG = re.compile(r"^[-|!]*R(?P<r>\d+)\b")


@dataclass(frozen=True, slots=True)
class Options:
    min_run: int = 16  # shorter FFMA runs are not promotions worth interleaving (DeepGEMM's threshold)
    head: float = 9 / 16  # fraction of each run, from its start, that gets yields (DeepGEMM's 9/16)
    spacing: int = 1  # non-yielding FFMAs between two yields: 1 = every second FFMA yields


def _register(operand: str) -> int | None:
    m = _REG.match(operand.strip())
    return int(m.group("r")) if m else None


def accumulators(instructions: list[Instruction]) -> dict[str, set[int]]:
    """{function: registers written by its wgmma (QGMMA/HGMMA/IGMMA) instructions}, for F32 accumulators."""
    out: dict[str, set[int]] = {}
    for ins in instructions:
        m = _GMMA.match(ins.opcode)
        if m is None:
            continue
        first = _register(ins.operands.split(",", 1)[0])
        if first is not None:
            count = int(m.group("m")) * int(m.group("n")) // 128
            out.setdefault(ins.function, set()).update(range(first, first + count))
    return out


def promotion_runs(instructions: list[Instruction], min_run: int = 16) -> list[list[int]]:
    """Indices of each maximal run of >= min_run consecutive FFMAs reading a wgmma accumulator as source a."""
    acc = accumulators(instructions)
    runs: list[list[int]] = []
    current: list[int] = []
    for index, ins in enumerate(instructions):
        ops = ins.operands.split(",")
        reads_acc = (ins.base_opcode == "FFMA" and len(ops) == 4
                     and _register(ops[1]) in acc.get(ins.function, set()))
        if reads_acc and current and instructions[current[-1]].function == ins.function \
                and current[-1] == index - 1:
            current.append(index)
            continue
        if len(current) >= min_run:
            runs.append(current)
        current = [index] if reads_acc else []
    if len(current) >= min_run:
        runs.append(current)
    return runs


def run(instructions: list[Instruction], options: Options = Options()) -> list[Patch]:
    patches = []
    for indices in promotion_runs(instructions, options.min_run):
        head = indices[:math.ceil(len(indices) * options.head)]
        reuses = [decode(instructions[i].high).reuse != 0 for i in head] + [True]
        gap = 0  # non-yielding FFMAs since the last yield (or the run's start)
        for position, index in enumerate(head):
            ins = instructions[index]
            control = decode(ins.high)
            # An FFMA that carries a reuse flag takes the yield only if the next one carries one too (no better
            # candidate) or the spacing is already overdue.
            if control.yield_:
                gap = 0
            elif gap >= options.spacing and (not reuses[position] or reuses[position + 1] or gap > options.spacing):
                new = encode(dataclasses.replace(control, yield_=True), ins.high)
                patches.append(Patch(ins.function, ins.address, new, ins.high))
                gap = 0
            else:
                gap += 1
    return patches
