"""`gemmgen diff A B`: two built kernels side by side — config and plan fields that differ, resources, an opcode
histogram and a SASS diff with addresses and encodings stripped. Needs no GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..sass.compare import field_changes, histogram, histogram_rows, plan_diff, plan_lines, sass_diff
from ..sass.parse import parse
from .common import echo_json, guarded
from .inspect import artifact_text, find_kernel, read_meta


def _side(ref: str, out_dir: Path) -> dict[str, Any]:
    folder = find_kernel(ref, out_dir)
    meta = read_meta(folder)
    ir = folder / "ir.txt"
    return {"folder": folder, "meta": meta, "sass": artifact_text(folder, "sass"),
            "plan": plan_lines(ir.read_text()) if ir.is_file() else None}


def compare(a: dict[str, Any], b: dict[str, Any], context: int, registers: bool) -> dict[str, Any]:
    names = (a["meta"]["name"], b["meta"]["name"])
    if names[0] == names[1]:
        names = (f"{names[0]} ({a['folder']})", f"{names[1]} ({b['folder']})")
    plans = plan_diff(a["plan"], b["plan"]) if a["plan"] is not None and b["plan"] is not None else None
    hist = histogram_rows(histogram(parse(a["sass"])), histogram(parse(b["sass"])))
    return {
        "kernels": list(names),
        "config": [{"field": f, "first": x, "second": y} for f, x, y in field_changes(a["meta"]["config"],
                                                                                        b["meta"]["config"])],
        "plan": plans,
        "resources": [{"field": f, "first": x, "second": y}
                      for f, x, y in field_changes(a["meta"]["resources"], b["meta"]["resources"])],
        "histogram": [{"opcode": op, "first": x, "second": y} for op, x, y in hist],
        "sass": sass_diff(a["sass"], b["sass"], names, context, registers),
    }


def _print(result: dict[str, Any], max_lines: int, all_opcodes: bool) -> None:
    first, second = result["kernels"]
    click.echo(f"first  {first}\nsecond {second}")
    rows = result["config"]
    click.echo("config: the same" if not rows else "config:")
    for r in rows:
        click.echo(f"  {r['field']:<14} {r['first']!s:>8} -> {r['second']!s}")
    if result["plan"] is None:
        click.echo("plan: not compared (a folder without ir.txt)")
    else:
        click.echo("plan: the same" if not result["plan"] else "plan (- first, + second):")
        for line in result["plan"]:
            click.echo(f"  {line}")
    rows = result["resources"]
    click.echo("resources: the same" if not rows else "resources:")
    for r in rows:
        click.echo(f"  {r['field']:<14} {r['first']!s:>8} -> {r['second']!s}")
    rows = [r for r in result["histogram"] if all_opcodes or r["first"] != r["second"]]
    same = len(result["histogram"]) - len(rows)
    click.echo(f"opcodes (first, second, change){f'; {same} more with equal counts' if same else ''}:")
    for r in rows:
        delta = r["second"] - r["first"]
        click.echo(f"  {r['opcode']:<12} {r['first']:>6} {r['second']:>6} {delta:+7d}" if delta else
                   f"  {r['opcode']:<12} {r['first']:>6} {r['second']:>6}")
    diff = result["sass"]
    click.echo("sass: the same instruction stream" if not diff else
               f"sass ({len(diff)} diff lines{f', first {max_lines} shown' if len(diff) > max_lines else ''}):")
    for line in diff[:max_lines]:
        click.echo(line)


@click.command("diff")
@click.argument("first")
@click.argument("second")
@click.option("--context", type=click.IntRange(0), default=3, show_default=True,
              help="Unchanged instructions shown around each SASS change.")
@click.option("--max-lines", type=click.IntRange(0), default=200, show_default=True,
              help="SASS diff lines printed (the summary always prints whole).")
@click.option("--ignore-registers", is_flag=True, help="Compare instructions with register numbers written as R/UR.")
@click.option("--all-opcodes", is_flag=True, help="List every opcode in the histogram, not only the changed ones.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON (the whole SASS diff).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("generated"), show_default=True,
              help="Where `gemmgen build` wrote kernels (names are also looked up in the cache).")
@guarded
def diff_cmd(first: str, second: str, context: int, max_lines: int, ignore_registers: bool, all_opcodes: bool,
             as_json: bool, out_dir: Path) -> None:
    """Compare two built kernels (names, unambiguous name prefixes, or folders): config and plan fields that
    differ, registers / spills / shared memory, an opcode histogram side by side, and a SASS diff with addresses,
    encodings and control bits stripped."""
    result = compare(_side(first, out_dir), _side(second, out_dir), context, not ignore_registers)
    if as_json:
        echo_json(result)
    else:
        _print(result, max_lines, all_opcodes)
