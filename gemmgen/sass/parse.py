"""Parse SASS listings (`nvdisasm -c -hex`, or `cuobjdump -sass`) into instructions (docs/CONVENTIONS.md #6)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

# "        /*0170*/                   UTMACCTL.PF [UR12] ;      /* 0x000000000c0079b9 */"
#  followed by a line holding only the high 64-bit word: "                 /* 0x000fe20008000000 */"
_INSTR = re.compile(r"^\s*/\*(?P<addr>[0-9a-f]{4,})\*/\s+(?P<text>.*?)\s*;\s*/\*\s*(?P<lo>0x[0-9a-f]{16})\s*\*/\s*$")
_HIGH = re.compile(r"^\s*/\*\s*(?P<hi>0x[0-9a-f]{16})\s*\*/\s*$")
# cuobjdump: "	Function : NAME"; nvdisasm: "        .type           NAME,@function"
_FUNC = re.compile(r"^\s*(?:Function\s*:\s*(?P<name>\S+)|\.type\s+(?P<typed>[^,\s]+),@function)")


@dataclass(frozen=True, slots=True)
class Instruction:
    function: str
    address: int
    predicate: str  # "" or e.g. "@!P0"
    opcode: str  # full dotted opcode, e.g. "QGMMA.64x128x32.F32.E4M3.E4M3"
    operands: str
    low: int  # low 64 bits of the 128-bit encoding
    high: int  # high 64 bits: control bits (stall, yield, barriers, reuse) live in bits 41..63 of this word

    @property
    def base_opcode(self) -> str:
        return self.opcode.split(".", 1)[0]


def parse(listing: str) -> list[Instruction]:
    out: list[Instruction] = []
    function = ""
    pending: tuple[int, str, int] | None = None
    for line in listing.splitlines():
        if m := _FUNC.match(line):
            function = m.group("name") or m.group("typed")
        elif m := _INSTR.match(line):
            pending = (int(m.group("addr"), 16), m.group("text"), int(m.group("lo"), 16))
        elif (m := _HIGH.match(line)) and pending is not None:
            out.append(_make(function, *pending, int(m.group("hi"), 16)))
            pending = None
    return out


def _make(function: str, address: int, text: str, low: int, high: int) -> Instruction:
    predicate = ""
    if text.startswith("@"):
        predicate, _, text = text.partition(" ")
    opcode, _, operands = text.strip().partition(" ")
    return Instruction(function, address, predicate, opcode, operands.strip(), low, high)


def opcode_counts(instructions: list[Instruction]) -> Counter[str]:
    """Counts by base opcode (QGMMA, UTMALDG, FFMA, SYNCS, LDL, ...)."""
    return Counter(i.base_opcode for i in instructions)


@dataclass(frozen=True, slots=True)
class WgmmaWaits:
    """How the kernel waits for its wgmma groups (`WARPGROUP.DEPBAR.LE gsb0, N`): N = 0 waits until no group is in
    flight, N >= 1 leaves N in flight. ptxas turns every wait into a full one after each wgmma when it cannot prove
    the accumulator registers untouched while a group runs (C7517 in the log; bench/NOTES.md v0.22 section 2)."""

    mma: int  # QGMMA / HGMMA instructions
    full: int  # waits for every group
    in_flight: int  # waits that leave a group in flight

    @property
    def serialized(self) -> bool:
        """More than one full wait per two wgmma instructions: ptxas waits after each wgmma (the serialized kernels
        seen have one per instruction; a healthy kernel at most one per group of four k32 steps, plus the branched
        last-step waits of a short two-set tile: 9 for 36 at 33x1000x1024 with column halves)."""
        return self.full * 2 > self.mma


def wgmma_waits(instructions: list[Instruction]) -> WgmmaWaits:
    waits = [i.operands.replace(" ", "") for i in instructions if i.opcode == "WARPGROUP.DEPBAR.LE"]
    mma = sum(i.base_opcode in ("QGMMA", "HGMMA") for i in instructions)
    full = sum(w == "gsb0,0x0" for w in waits)
    return WgmmaWaits(mma, full, sum(w.startswith("gsb0,") for w in waits) - full)


def grep(listing: str, pattern: str) -> list[str]:
    """Lines of the listing whose text matches `pattern` (a regular expression, case-sensitive)."""
    rx = re.compile(pattern)
    return [line.rstrip() for line in listing.splitlines() if rx.search(line)]
