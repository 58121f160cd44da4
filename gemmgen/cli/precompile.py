"""`gemmgen precompile`: warm the kernel cache for given shapes, a file of them, or an M range."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from ..ir import GemmProblem, ScaleRecipe, parse_overrides, preset
from .common import LAYOUTS, echo_json, guarded, make_problem, parse_shape


def _file_problems(path: Path, groups: int | None, layout: str | None, kind: dict) -> list[GemmProblem]:
    """One problem per line: `MxNxK`, optionally followed by `G LAYOUT`; `#` starts a comment."""
    problems = []
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) not in (1, 3):
            raise click.BadParameter(f"line {number}: expected 'MxNxK' or 'MxNxK G LAYOUT', got {raw.strip()!r}",
                                     param_hint="--file")
        g, lay = (int(fields[1]), fields[2]) if len(fields) == 3 else (groups, layout)
        if lay is not None and lay not in LAYOUTS:
            raise click.BadParameter(f"line {number}: layout {lay!r} is not one of {sorted(LAYOUTS)}",
                                     param_hint="--file")
        problems.append(make_problem(*parse_shape(fields[0]), g, lay, **kind))
    return problems


def _range_problems(m_range: str, nks: tuple[str, ...], groups: int | None, layout: str | None,
                    kind: dict) -> list[GemmProblem]:
    lo, sep, hi = m_range.partition(":")
    try:
        m_lo, m_hi = int(lo), int(hi)
    except ValueError:
        raise click.BadParameter(f"expected LO:HI, e.g. 1:8192; got {m_range!r}", param_hint="--m-range") from None
    if not sep or not nks:
        raise click.UsageError("--m-range LO:HI needs at least one --nk NxK")
    from ..warmup import problems_for_m_range

    like = make_problem(64 * 128, 8, 128, groups, layout, **kind)  # validates the --groups/--layout pair
    out = []
    for nk in nks:
        _, n, k = parse_shape(f"1x{nk}")
        out += [dataclasses.replace(like, m=p.m, n=n, k=k) for p in
                problems_for_m_range(n, k, m_lo, m_hi, kind=like.kind, groups=groups or 1)]
    return out


@click.command("precompile")
@click.option("--shape", "shapes", multiple=True, metavar="MxNxK", help="A problem (repeatable).")
@click.option("--file", "file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Problems, one per line: MxNxK [G LAYOUT].")
@click.option("--m-range", default=None, metavar="LO:HI", help="Every kernel an M in LO..HI selects, with --nk.")
@click.option("--nk", "nks", multiple=True, metavar="NxK", help="N and K for --m-range (repeatable).")
@click.option("--groups", type=click.IntRange(min=1), default=None, help="Experts G (grouped problems).")
@click.option("--layout", type=click.Choice(sorted(LAYOUTS)), default=None, help="m-grouped layout.")
@click.option("--out-dtype", type=click.Choice(["bf16", "fp32", "e4m3"]), default="bf16", show_default=True,
              help="D's dtype (e4m3: with the 1x128 scales the kernel writes).")
@click.option("--swiglu", is_flag=True, help="The fused SwiGLU epilogue (D has N / 2 columns).")
@click.option("--accumulate", is_flag=True, help="D += A.B^T (fp32 D).")
@click.option("--recipe", type=click.Choice([r.value for r in ScaleRecipe]), default=None,
              help="Scale recipe (default: 1x128/128x128; k-grouped 1x128/1x128; bf16 inputs none).")
@click.option("--dtype-a", type=click.Choice(["e4m3", "e5m2", "bf16"]), default="e4m3", show_default=True)
@click.option("--dtype-b", type=click.Choice(["e4m3", "e5m2", "bf16"]), default="e4m3", show_default=True)
@click.option("--config", "config", multiple=True, metavar="KEY=VALUE", help="Pin a schedule field (repeatable).")
@click.option("--target", default="h200", show_default=True, help="Target preset: h200 or h100.")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Parallel compiles (default: CPU count).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@guarded
def precompile_cmd(shapes: tuple[str, ...], file: Path | None, m_range: str | None, nks: tuple[str, ...],
                   groups: int | None, layout: str | None, out_dtype: str, swiglu: bool, accumulate: bool,
                   recipe: str | None,
                   dtype_a: str, dtype_b: str, config: tuple[str, ...], target: str, jobs: int | None,
                   as_json: bool) -> None:
    """Build every kernel the given problems select, in parallel, into the cache (no GPU needed); lists them."""
    from ..warmup import precompile  # a process pool and tqdm: imported only by this command
    kind = {"out_dtype": out_dtype, "accumulate": accumulate, "recipe": recipe, "dtype_a": dtype_a,
            "dtype_b": dtype_b, "swiglu": swiglu}
    problems = [make_problem(*parse_shape(s), groups, layout, **kind) for s in shapes]
    if file is not None:
        problems += _file_problems(file, groups, layout, kind)
    if m_range is not None:
        problems += _range_problems(m_range, nks, groups, layout, kind)
    if not problems:
        raise click.UsageError("nothing to precompile: give --shape, --file or --m-range with --nk")
    report = precompile(problems, parse_overrides(config) or None, preset(target), jobs=jobs, progress=not as_json)
    if as_json:
        echo_json({"problems": report.problems, "kernels": report.kernels, "compiled": report.compiled,
                   "cached": report.cached, "failed": report.failed, "seconds": round(report.seconds, 2),
                   "built": sorted(report.built), "interrupted": report.interrupted})
    else:
        for name in sorted(report.built):
            click.echo(name)
        for name, error in report.failed:
            click.echo(f"FAILED {name}: {error}")
        click.echo(report.line() + (" (interrupted: the kernels above are kept)" if report.interrupted else ""))
    if report.interrupted:
        raise SystemExit(130)
    if report.failed:
        raise SystemExit(1)
