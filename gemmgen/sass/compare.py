"""Two built kernels side by side (`gemmgen diff`), and one kernel's opcode histogram (`gemmgen inspect --histogram`):
the comparisons a tuner's user makes between a winner and a loser. Pure functions over the artifacts' text."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from .parse import Instruction, parse

_LABEL = re.compile(r"\.L_x_\d+")
_ADDRESS = re.compile(r"\b0x[0-9a-f]{4,}\b")  # branch targets and other code addresses
_REGISTER = re.compile(r"\b(U?R)\d+\b")  # R12, UR7 (not RZ/URZ, P0, SR_*)


def instruction_lines(sass: str, registers: bool = True) -> list[str]:
    """The instructions of a listing as comparable text: no addresses, encodings or control bits, branch labels and
    targets neutral; `registers=False` also writes every register as R / UR (a renumbering then compares equal)."""
    out = []
    for i in parse(sass):
        text = " ".join(part for part in (i.predicate, i.opcode, i.operands) if part)
        text = _ADDRESS.sub("0x_", _LABEL.sub(".L", text))
        out.append(text if registers else _REGISTER.sub(r"\1", text))
    return out


def histogram(instructions: list[Instruction], full_opcodes: bool = False) -> Counter[str]:
    """Instruction counts by base opcode (QGMMA, FFMA, ...), or by the whole dotted opcode."""
    return Counter(i.opcode if full_opcodes else i.base_opcode for i in instructions)


def histogram_rows(first: Counter[str], second: Counter[str]) -> list[tuple[str, int, int]]:
    """(opcode, count in first, count in second) for every opcode either has, the most changed first."""
    ops = set(first) | set(second)
    return sorted(((op, first.get(op, 0), second.get(op, 0)) for op in ops),
                  key=lambda r: (-abs(r[2] - r[1]), -(r[1] + r[2]), r[0]))


def plan_lines(ir_text: str) -> list[str]:
    """The kernel plan's lines of an ir.txt (everything under its `plan` heading), stripped."""
    lines = ir_text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "plan") + 1
    except StopIteration:
        return []
    return [line.strip() for line in lines[start:] if line.startswith("    ")]


def plan_diff(first: list[str], second: list[str]) -> list[str]:
    """The plan lines only one kernel has: "- " first's, "+ " second's (difflib, no context)."""
    return [line for line in difflib.unified_diff(first, second, lineterm="", n=0)
            if not line.startswith(("---", "+++", "@@"))]


def field_changes(first: Mapping[str, Any], second: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(key, first's value, second's value) for every key whose values differ (missing: None)."""
    keys = list(first) + [k for k in second if k not in first]
    return [(k, first.get(k), second.get(k)) for k in keys if first.get(k) != second.get(k)]


def sass_diff(first: str, second: str, names: tuple[str, str], context: int = 3,
              registers: bool = True) -> list[str]:
    """A unified diff of the two instruction streams (instruction_lines), empty where they are the same."""
    return list(difflib.unified_diff(instruction_lines(first, registers), instruction_lines(second, registers),
                                     fromfile=names[0], tofile=names[1], n=context, lineterm=""))
