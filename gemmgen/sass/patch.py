"""Rewrite the control bits of instructions inside a cubin, and prove that a rewrite changed nothing else.

A `Patch` names one instruction by (function, address) and gives the high 64-bit word it must have now and the one it
must have after; only the control bits (gemmgen.sass.control.CONTROL_MASK, bits 41..61) may differ. `apply` finds
each function's `.text.<function>` section through the ELF64 section headers (read with `struct`: the cubin is a
plain little-endian ELF64 file, ELF spec / `elf.h` Elf64_Ehdr and Elf64_Shdr) and rewrites the 8 bytes at section
offset address+8 (each instruction is 16 bytes, low word first). `verify` compares two nvdisasm listings of a cubin
before and after and raises `SassPatchError` unless they hold the same instructions with the same encodings outside
the control bits.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import GemmgenError
from .control import CONTROL_MASK, REUSE_MASK
from .parse import Instruction, parse

_WORD = 0xFFFF_FFFF_FFFF_FFFF
_SHT_NOBITS = 8


class SassPatchError(GemmgenError):
    """A control-bit patch does not fit the cubin, or changed more than control bits."""


@dataclass(frozen=True, slots=True)
class Patch:
    function: str  # the kernel's symbol, as nvdisasm prints it (its section is .text.<function>)
    address: int  # byte offset of the instruction inside the function's .text section (a multiple of 16)
    new_high: int  # the high 64-bit word to write
    old_high: int  # the high word the cubin must hold now (checked before writing)

    def __post_init__(self) -> None:
        if self.address < 0 or self.address % 16:
            raise SassPatchError(f"patch of {self.function}: address {self.address:#x} is not a multiple of 16")
        for name, word in (("new_high", self.new_high), ("old_high", self.old_high)):
            if not 0 <= word <= _WORD:
                raise SassPatchError(f"patch of {self.function}+{self.address:#x}: {name} is not a 64-bit word")
        if (self.new_high ^ self.old_high) & ~CONTROL_MASK:
            raise SassPatchError(f"patch of {self.function}+{self.address:#x} changes bits outside the control bits "
                                 f"({self.old_high:#018x} -> {self.new_high:#018x})")


def text_sections(cubin: bytes) -> dict[str, tuple[int, int]]:
    """{function: (file offset, size)} of every `.text.<function>` section of an ELF64 little-endian cubin."""
    if cubin[:4] != b"\x7fELF" or len(cubin) < 64:
        raise SassPatchError("not an ELF file: cannot patch this cubin")
    if cubin[4] != 2 or cubin[5] != 1:
        raise SassPatchError(f"ELF class {cubin[4]} / data {cubin[5]}: expected ELF64 little endian (2 / 1)")
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    if shentsize != 64 or shnum == 0 or shstrndx >= shnum or shoff + shnum * 64 > len(cubin):
        raise SassPatchError(f"unexpected ELF section table ({shnum} headers of {shentsize} B at {shoff:#x})")
    headers = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * 64) for i in range(shnum)]
    strtab = headers[shstrndx][4]
    out: dict[str, tuple[int, int]] = {}
    for name_off, sh_type, _flags, _addr, offset, size, *_ in headers:
        end = cubin.find(b"\0", strtab + name_off)
        name = cubin[strtab + name_off:end].decode("utf-8", "replace")
        if name.startswith(".text.") and sh_type != _SHT_NOBITS:
            if offset + size > len(cubin):
                raise SassPatchError(f"section {name} runs past the end of the cubin")
            out[name[len(".text."):]] = (offset, size)
    return out


def apply(cubin: bytes, patches: Iterable[Patch]) -> bytes:
    """The cubin with each patch's high word written, after checking that the word there is its `old_high`."""
    patches = list(patches)
    seen = set()
    for p in patches:
        if (p.function, p.address) in seen:
            raise SassPatchError(f"two patches of {p.function}+{p.address:#x}: merge them first")
        seen.add((p.function, p.address))
    sections = text_sections(cubin)
    out = bytearray(cubin)
    for p in patches:
        if p.function not in sections:
            raise SassPatchError(f"no .text.{p.function} section in the cubin (has: {', '.join(sorted(sections))})")
        offset, size = sections[p.function]
        if p.address + 16 > size:
            raise SassPatchError(f"{p.function}+{p.address:#x} lies past the end of its {size}-byte section")
        at = offset + p.address + 8
        (found,) = struct.unpack_from("<Q", out, at)
        if found != p.old_high:
            raise SassPatchError(f"{p.function}+{p.address:#x}: high word is {found:#018x}, the patch expected "
                                 f"{p.old_high:#018x}")
        struct.pack_into("<Q", out, at, p.new_high)
    return bytes(out)


def patched(instructions: list[Instruction], patches: Iterable[Patch]) -> list[Instruction]:
    """The instruction list as it reads after `patches` (so a later pass sees an earlier one's changes)."""
    by_site = {(p.function, p.address): p for p in patches}
    out = []
    for ins in instructions:
        p = by_site.pop((ins.function, ins.address), None)
        if p is not None:
            if p.old_high != ins.high:
                raise SassPatchError(f"{ins.function}+{ins.address:#x}: high word is {ins.high:#018x}, the patch "
                                     f"expected {p.old_high:#018x}")
            ins = dataclasses.replace(ins, high=p.new_high)
        out.append(ins)
    if by_site:
        f, a = next(iter(by_site))
        raise SassPatchError(f"patch of {f}+{a:#x}: no instruction there")
    return out


def _strip_reuse(operands: str) -> str:
    return operands.replace(".reuse", "")


def verify(before_sass: str, after_sass: str) -> int:
    """Check that `after_sass` is `before_sass` with only control bits changed; return how many instructions changed.

    Same instruction count, functions, addresses, predicates, opcodes, operand text (ignoring `.reuse` markers) and
    low words; high words equal outside bits 41..61; and wherever a high word changed, the number of `.reuse`
    markers nvdisasm prints equals the number of reuse bits set (the disassembler reads the bits as we do)."""
    before, after = parse(before_sass), parse(after_sass)
    if not before:
        raise SassPatchError("the listing before patching holds no instructions")
    if len(before) != len(after):
        raise SassPatchError(f"patched cubin disassembles to {len(after)} instructions, expected {len(before)}")
    problems: list[str] = []
    changed = 0
    for b, a in zip(before, after, strict=True):
        where = f"{b.function}+{b.address:#06x}"
        if (a.function, a.address) != (b.function, b.address):
            problems.append(f"{where}: instruction moved to {a.function}+{a.address:#06x}")
        elif (a.predicate, a.opcode, _strip_reuse(a.operands)) != (b.predicate, b.opcode, _strip_reuse(b.operands)):
            problems.append(f"{where}: '{b.predicate} {b.opcode} {b.operands}' became "
                            f"'{a.predicate} {a.opcode} {a.operands}'")
        elif a.low != b.low:
            problems.append(f"{where}: low word {b.low:#018x} became {a.low:#018x}")
        elif (a.high ^ b.high) & ~CONTROL_MASK:
            problems.append(f"{where}: high word {b.high:#018x} became {a.high:#018x} (non-control bits changed)")
        elif a.high != b.high:
            changed += 1
            if a.operands.count(".reuse") != bin(a.high & REUSE_MASK).count("1"):
                problems.append(f"{where}: nvdisasm prints {a.operands.count('.reuse')} .reuse markers for "
                                f"reuse bits {(a.high & REUSE_MASK) >> 58:#x} ('{a.opcode} {a.operands}')")
    if problems:
        more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise SassPatchError("SASS patch verification failed:\n  " + "\n  ".join(problems[:10]) + more)
    return changed
