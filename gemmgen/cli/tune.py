"""`gemmgen tune`: time the cost model's top candidates and the default side by side on the GPU, and write the
winners to a tuned table selection reads (gemmgen/tuning/). `--dry-run` ranks the candidates without a GPU. This is
the one command that needs torch and a GPU (the timing); the rest of the CLI needs neither."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import click

from ..errors import NoGpuError
from ..ir import ScaleRecipe, parse_overrides, preset
from ..settings import Settings
from ..tuning import cost, space
from ..tuning.table import user_table, write_rows
from .common import LAYOUTS, echo_json, guarded, make_problem, parse_shape

INTERRUPTED = 130  # exit status after Ctrl-C, as a shell reports SIGINT


def _ranked_lines(problem: Any, target: Any, pins: dict[str, int], top: int, settings: Settings) -> list[str]:
    from ..tuning.tune import rank

    coeffs = cost.coefficients(target)
    lines = [f"{problem.short()} on {target.name}: the default, its feature flips and the model's top {top} (and "
             f"the best ping-pong ones, where the space has them; coefficients "
             f"{'fitted' if coeffs.fitted else 'not yet fitted'})"]
    for cand, kernel, _estimate in rank(problem, target, pins, top, settings):
        seconds, terms = cost.estimate(kernel, coeffs)
        tag = "default" if cand is None else space.label(cand)
        lines.append(f"  {kernel.name}  {cost.describe(seconds, terms)}  [{tag}]")
    return lines


def _result_lines(result: Any) -> list[str]:
    p = result.problem
    base = result.default.us
    lines = [f"{p.short()} on {result.gpu}, {result.rounds} rounds (kernel us, L2 cold):",
             f"  {'kernel':<84} {'model':>8} {'us':>8} {'TFLOPS':>7} {'TB/s':>6} {'regs':>4} {'spill':>5} "
             f"{'vs default':>10}"]
    moved = (p.total_rows * p.k * p.a_dtype.bytes + p.n * p.k * p.b_dtype.bytes * p.groups
             + p.total_rows * p.n * p.out_dtype.bytes)  # A + B + D: what a kernel must move at least once
    for r in sorted(result.rows, key=lambda r: (r.us is None, r.us or 0.0)):
        if r.us is None:
            lines.append(f"  {r.name:<84} {r.estimate_us:8.1f}  {r.error}")
            continue
        flops = p.flops / (r.us * 1e-6) / 1e12
        tbps = moved / (r.us * 1e-6) / 1e12
        vs = f"x{base / r.us:.3f}" if base else "-"
        lines.append(f"  {r.name:<84} {r.estimate_us:8.1f} {r.us:8.2f} {flops:7.1f} {tbps:6.2f} {r.registers:>4} "
                     f"{r.spills:>5} {vs:>10}{'  (default)' if r.default else ''}")
    win = result.winner
    if win is not None:
        lines.append(f"  winner {win.name}" + (f", x{base / win.us:.3f} the default" if base and win.us else ""))
    return lines


@click.command("tune")
@click.option("--shape", "shapes", multiple=True, required=True, metavar="MxNxK",
              help="A problem to tune (repeatable); grouped: M is M_total (contiguous) or the rows per group.")
@click.option("--groups", type=click.IntRange(min=1), default=None, help="Experts G of a grouped GEMM.")
@click.option("--layout", type=click.Choice(sorted(LAYOUTS)), default=None, help="Grouped layout (as gemmgen build).")
@click.option("--out-dtype", type=click.Choice(["bf16", "fp32", "e4m3", "bfloat16", "float32"]), default="bf16",
              show_default=True)
@click.option("--swiglu", is_flag=True, help="The fused SwiGLU epilogue (D has N / 2 columns).")
@click.option("--accumulate", is_flag=True)
@click.option("--recipe", type=click.Choice([r.value for r in ScaleRecipe]), default=None)
@click.option("--dtype-a", type=click.Choice(["e4m3", "e5m2", "bf16"]), default="e4m3", show_default=True)
@click.option("--dtype-b", type=click.Choice(["e4m3", "e5m2", "bf16"]), default="e4m3", show_default=True)
@click.option("--config", "config", multiple=True, metavar="KEY=VALUE", help="Pin a schedule field (repeatable).")
@click.option("--top", type=click.IntRange(min=1, max=64), default=8, show_default=True,
              help="Candidates the cost model ranks first, timed beside the default.")
@click.option("--rounds", type=click.IntRange(min=1, max=100), default=5, show_default=True)
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Compile processes (default: CPUs).")
@click.option("--table", type=click.Path(path_type=Path), default=None,
              help="The tuned table to add the winners to (default: the user table under the cache, per GPU).")
@click.option("--no-write", is_flag=True, help="Time and report, but write no table row.")
@click.option("--dry-run", is_flag=True, help="Rank the candidates with the cost model only (no GPU, no compile).")
@click.option("--target", default=None, help="With --dry-run: the target preset (h100, h200; default h200).")
@click.option("--json", "as_json", is_flag=True)
@guarded
def tune_cmd(shapes: tuple[str, ...], groups: int | None, layout: str | None, out_dtype: str, swiglu: bool,
             accumulate: bool,
             recipe: str | None, dtype_a: str, dtype_b: str, config: tuple[str, ...], top: int, rounds: int,
             jobs: int | None, table: Path | None, no_write: bool, dry_run: bool, target: str | None,
             as_json: bool) -> None:
    """Time the cost model's top candidates and the default kernel of each problem side by side on GPU 0 (L2
    cold, interleaved rounds, each checked against float64 first), print the table, and write each winner to a tuned
    table that selection reads next time (GEMMGEN_TUNED, gemmgen.load_tuned, or the default user table)."""
    pins = parse_overrides(config)
    problems = [make_problem(*parse_shape(s), groups, layout, out_dtype, accumulate, recipe, dtype_a, dtype_b,
                             swiglu) for s in shapes]
    settings = Settings.from_env()
    if dry_run:
        tgt = preset(target or "h200")
        out = [line for p in problems for line in _ranked_lines(p, tgt, pins, top, settings)]
        echo_json({"ranked": out}) if as_json else click.echo("\n".join(out))
        return
    if target is not None:
        raise click.UsageError("--target goes with --dry-run: a tuning run times the GPU it runs on")
    _run(problems, pins, top, rounds, jobs, table, no_write, as_json, settings)


def _run(problems: list[Any], pins: dict[str, int], top: int, rounds: int, jobs: int | None, table: Path | None,
         no_write: bool, as_json: bool, settings: Settings) -> None:
    try:
        from ..api import device_target
        from ..runtime import driver
        from ..tuning.tune import tune
    except ImportError as exc:  # torch (the timing's tensors) is the API's dependency, not the CLI's
        raise click.ClickException(f"gemmgen tune times kernels with torch: {exc}") from exc
    if not driver.gpu_available():
        raise NoGpuError("gemmgen tune times candidates on a GPU and none is available here; "
                         "`gemmgen tune --dry-run` ranks them with the cost model without one")
    tgt = device_target(0)
    dest = table or user_table(settings.cache_dir, tgt)
    results, rows = [], []
    say = (lambda text: None) if as_json else (lambda text: click.echo(text, err=True))
    try:
        for problem in problems:
            result = tune(problem, tgt, pins=pins or None, top=top, rounds=rounds, settings=settings, jobs=jobs,
                          progress=say)
            results.append(result)
            if not as_json:
                click.echo("\n".join(_result_lines(result)))
            row = result.table_row()
            if row is not None and not no_write:
                write_rows(dest, tgt, [row])
                rows.append(row)
    except KeyboardInterrupt:
        click.echo(f"interrupted: {len(rows)} row(s) written to {dest}", err=True)
        sys.exit(INTERRUPTED)
    if as_json:
        echo_json({"table": str(dest) if rows else None, "rows": rows,
                   "results": [{"problem": r.problem.short(), "gpu": r.gpu,
                                "rows": [dataclasses.asdict(t) for t in r.rows]} for r in results]})
    elif rows:
        click.echo(f"{len(rows)} row(s) written to {dest}")
