"""`gemmgen build`: decide, render, compile and disassemble one kernel; write its artifacts; print a summary."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from ..ir import ScaleRecipe, parse_overrides, preset
from ..settings import Settings
from ..stages import EMITTABLE, build, export
from .common import LAYOUTS, echo_json, guarded, make_problem, parse_shape, print_summary, summary


def _emit_list(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    bad = [k for k in kinds if k not in EMITTABLE]
    if bad:
        raise click.BadParameter(f"unknown artifact(s) {bad}; expected a comma list of {','.join(EMITTABLE)}",
                                 param_hint="--emit")
    return kinds


@click.command("build")
@click.option("--shape", required=True, help="MxNxK, e.g. 4096x7168x16384 (N multiple of 8, K of 16). Grouped: M is "
              "M_total (contiguous) or the expected rows per group (masked).")
@click.option("--groups", type=click.IntRange(min=1), default=None, help="Experts G of an m-grouped GEMM.")
@click.option("--layout", type=click.Choice(sorted(LAYOUTS)), default=None,
              help="Grouped layout: contiguous (rows of all experts concatenated, aligned to 128), masked, or "
              "k-grouped (weight gradients: groups concatenated along K, --shape MxNxK with K per group; needs "
              "--out-dtype fp32).")
@click.option("--out-dtype", type=click.Choice(["bf16", "fp32", "e4m3", "bfloat16", "float32", "float8_e4m3fn"]),
              default="bf16", show_default=True, help="D's dtype (dense and k-grouped GEMMs: fp32 too; e4m3: the "
              "kernel also writes D's 1x128 scales; torch's names accepted).")
@click.option("--swiglu", is_flag=True, help="Fused SwiGLU epilogue: B holds gate and up in alternating 128-row "
              "blocks, D has N / 2 columns = SiLU(gate) * up.")
@click.option("--accumulate", is_flag=True, help="D += A.B^T (fp32 D; the TMA store adds the tile into D).")
@click.option("--recipe", type=click.Choice([r.value for r in ScaleRecipe]), default=None,
              help="Scale recipe (default: 1x128/128x128 for FP8, none for bf16): 1x128/128x128 (A per row per "
              "128 K, B per 128x128 block), 1x128/1x128 (weight gradient: A and B per row per 128 K; needs "
              "--out-dtype fp32, usually with --accumulate), tensor (one scale each), channel (SA [M], SB [N]), "
              "none (bf16 inputs).")
@click.option("--dtype-a", type=click.Choice(["e4m3", "e5m2", "bf16"]), default="e4m3", show_default=True,
              help="A's dtype.")
@click.option("--dtype-b", type=click.Choice(["e4m3", "e5m2", "bf16"]), default="e4m3", show_default=True,
              help="B's dtype.")
@click.option("--config", "config", multiple=True, metavar="KEY=VALUE",
              help="Pin a schedule field (repeatable), e.g. --config block_n=112 --config stages=5.")
@click.option("--target", default="h200", show_default=True, help="Target preset: h200 or h100.")
@click.option("--emit", default=",".join(EMITTABLE), show_default=True, help="Artifacts to write.")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("generated"), show_default=True,
              help="Writes OUT/<kernel name>/.")
@click.option("--dump-ir", type=click.Path(path_type=Path), default=None, help="Write the IR after every pass here.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--no-cache", is_flag=True, help="Compile even if the kernel is cached.")
@guarded
def build_cmd(shape: str, groups: int | None, layout: str | None, out_dtype: str, swiglu: bool, accumulate: bool,
              recipe: str,
              dtype_a: str, dtype_b: str, config: tuple[str, ...], target: str, emit: str, out_dir: Path,
              dump_ir: Path | None, as_json: bool, no_cache: bool) -> None:
    """Decide a schedule, render, compile with NVRTC and disassemble one kernel. Needs no GPU."""
    m, n, k = parse_shape(shape)
    kinds = _emit_list(emit)
    overrides = parse_overrides(config)
    problem = make_problem(m, n, k, groups, layout, out_dtype, accumulate, recipe, dtype_a, dtype_b, swiglu)
    settings = Settings.from_env()
    if no_cache:
        settings = dataclasses.replace(settings, use_cache=False)
    built = build(problem, overrides or None, preset(target), settings=settings, dump_ir=dump_ir)
    dest = export(built, out_dir, kinds) if kinds else None
    reasons = [{"pass": who, "reason": why} for who, why in built.kernel.reasons]
    s = summary(built.meta, m=m, groups=problem.groups, from_cache=built.from_cache, folder=built.folder, dest=dest,
                reasons=reasons)
    if as_json:
        echo_json(s)
    else:
        print_summary(s)
