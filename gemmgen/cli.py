"""The `gemmgen` command line: build kernels (no GPU needed), inspect their PTX/SASS, reproduce a compile."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from . import __version__
from .errors import GemmgenError
from .ir import GemmKind, GemmProblem, parse_overrides, preset
from .sass.parse import grep
from .settings import Settings
from .stages import EMITTABLE, BuiltKernel, build, export
from .toolchain import disasm
from .toolchain.nvrtc import compile_cuda


def _parse_shape(text: str) -> tuple[int, int, int]:
    parts = text.lower().split("x")
    try:
        m, n, k = (int(p) for p in parts)
    except ValueError:
        raise click.BadParameter(f"expected MxNxK with three integers, e.g. 4096x7168x16384; got {text!r}",
                                 param_hint="--shape") from None
    return m, n, k


def _emit_list(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    bad = [k for k in kinds if k not in EMITTABLE]
    if bad:
        raise click.BadParameter(f"unknown artifact(s) {bad}; expected a comma list of {','.join(EMITTABLE)}",
                                 param_hint="--emit")
    return kinds


LAYOUTS = {"contiguous": GemmKind.M_GROUPED_CONTIGUOUS, "masked": GemmKind.M_GROUPED_MASKED}


def _problem(m: int, n: int, k: int, groups: int | None, layout: str | None) -> GemmProblem:
    if (groups is None) != (layout is None):
        raise click.UsageError("--groups and --layout go together: a grouped GEMM needs both (e.g. --groups 8 "
                               "--layout contiguous); a dense GEMM takes neither")
    if layout is None or groups is None:
        return GemmProblem(m, n, k)
    return GemmProblem(m, n, k, kind=LAYOUTS[layout], groups=groups)


def summary(built: BuiltKernel, dest: Path | None) -> dict[str, Any]:
    c, r, meta, p = built.config, built.resources, built.meta, built.kernel.problem
    counts = meta.get("sass_counts") or {}
    return {
        "name": built.name,
        "problem": {"m": p.m, "n": p.n, "k": p.k, "kind": p.kind.value, "groups": p.groups},
        "config": {"block_m": c.block_m, "block_n": c.block_n, "block_k": c.block_k, "stages": c.stages,
                   "cluster": c.cluster, "multicast": "A" if (c.cluster or 1) > 1 else "none",
                   "swizzle_ab": c.swizzle_ab, "swizzle_d": c.swizzle_d, "math_warpgroups": c.math_warpgroups,
                   "producer_regs": c.producer_regs, "math_regs": c.math_regs, "acc_sets": c.acc_sets,
                   "raster_group": c.raster_group,
                   "num_sms": c.num_sms, "threads": c.num_threads},
        "resources": {"registers": r.registers, "spill_stores": r.spill_stores, "spill_loads": r.spill_loads,
                      "stack_frame": r.stack_frame, "static_smem": r.static_smem, "dynamic_smem": r.dynamic_smem},
        "sass_counts": counts,
        "compile_seconds": meta["compile_seconds"],
        "from_cache": built.from_cache,
        "cache_folder": str(built.folder),
        "out": str(dest) if dest else None,
    }


def _print_summary(s: dict[str, Any]) -> None:
    c, r, n = s["config"], s["resources"], s["sass_counts"]
    click.echo(f"kernel   {s['name']}")
    p = s["problem"]
    grouped = f", {p['kind']} with {p['groups']} groups" if p["kind"] != "normal" else ""
    click.echo(f"problem  M={p['m']} N={p['n']} K={p['k']}{grouped}")
    click.echo(f"tile     block {c['block_m']}x{c['block_n']}x{c['block_k']}, {c['stages']} stages, "
               f"cluster {c['cluster']} (multicast {c['multicast']}), raster group {c['raster_group']}, "
               f"grid <= {c['num_sms']} CTAs")
    click.echo(f"swizzle  A/B {c['swizzle_ab']} B, D {c['swizzle_d'] or 'none'}{' B' if c['swizzle_d'] else ''}")
    click.echo(f"warps    1 TMA warpgroup ({c['producer_regs']} regs) + {c['math_warpgroups']} math warpgroup(s) "
               f"({c['math_regs']} regs, {c['acc_sets']} accumulator set(s)), {c['threads']} threads")
    click.echo(f"regs     {r['registers']} per thread at entry, spills {r['spill_stores']} B stores / "
               f"{r['spill_loads']} B loads, stack {r['stack_frame']} B")
    click.echo(f"smem     {r['static_smem']} B static + {r['dynamic_smem']} B dynamic")
    if n:
        click.echo("sass     " + ", ".join(f"{k} {v}" for k, v in n.items()))
    click.echo(f"compile  {s['compile_seconds']:.2f} s{' (from cache)' if s['from_cache'] else ''}")
    click.echo(f"files    {s['out'] or s['cache_folder']}")


@click.group()
@click.version_option(__version__, prog_name="gemmgen")
def main() -> None:
    """gemmgen: generate, compile and inspect Hopper FP8 block-scaled GEMM kernels."""


@main.command("build")
@click.option("--shape", required=True, help="MxNxK, e.g. 4096x7168x16384 (N multiple of 8, K of 16). Grouped: M is "
              "M_total (contiguous) or the expected rows per group (masked).")
@click.option("--groups", type=click.IntRange(min=1), default=None, help="Experts G of an m-grouped GEMM.")
@click.option("--layout", type=click.Choice(sorted(LAYOUTS)), default=None,
              help="m-grouped layout: contiguous (rows of all experts concatenated, aligned to 128) or masked.")
@click.option("--config", "config", multiple=True, metavar="KEY=VALUE",
              help="Pin a schedule field (repeatable), e.g. --config block_n=112 --config stages=5.")
@click.option("--target", default="h200", show_default=True, help="Target preset: h200 or h100.")
@click.option("--emit", default=",".join(EMITTABLE), show_default=True, help="Artifacts to write.")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("generated"), show_default=True,
              help="Writes OUT/<kernel name>/.")
@click.option("--dump-ir", type=click.Path(path_type=Path), default=None, help="Write the IR after every pass here.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--no-cache", is_flag=True, help="Compile even if the kernel is cached.")
def build_cmd(shape: str, groups: int | None, layout: str | None, config: tuple[str, ...], target: str, emit: str,
              out_dir: Path, dump_ir: Path | None, as_json: bool, no_cache: bool) -> None:
    """Decide a schedule, render, compile with NVRTC and disassemble one kernel. Needs no GPU."""
    m, n, k = _parse_shape(shape)
    kinds = _emit_list(emit)
    try:
        overrides = parse_overrides(config)
        problem = _problem(m, n, k, groups, layout)
        tgt = preset(target)
        settings = Settings.from_env()
        if no_cache:
            settings = Settings(settings.cache_dir, False, settings.nvrtc_verbose, settings.keep_sass)
        built = build(problem, overrides or None, tgt, settings=settings, dump_ir=dump_ir)
        dest = export(built, out_dir, kinds) if kinds else None
    except (GemmgenError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    s = summary(built, dest)
    if as_json:
        click.echo(json.dumps(s, indent=2))
    else:
        _print_summary(s)


def _find_kernel(ref: str, out_dir: Path) -> Path:
    path = Path(ref)
    if (path / "meta.json").is_file():
        return path
    for root in (out_dir, Settings.from_env().cache_dir):
        if (root / ref / "meta.json").is_file():
            return root / ref
        hits = sorted(root.glob(f"{ref}*/meta.json")) if root.is_dir() else []
        if hits:
            return hits[-1].parent
    raise click.ClickException(f"no built kernel {ref!r}: give a kernel folder (with meta.json) or a name found in "
                               f"{out_dir}/ or the cache; build it first with `gemmgen build --shape MxNxK`")


@main.command("inspect")
@click.argument("kernel")
@click.option("--show", type=click.Choice(["summary", "sass", "ptx", "cu", "resources"]), default=None,
              help="What to print (default: summary, or sass with --grep).")
@click.option("--grep", "pattern", default=None, help="Only lines matching this regular expression (e.g. QGMMA).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("generated"), show_default=True)
def inspect_cmd(kernel: str, show: str | None, pattern: str | None, out_dir: Path) -> None:
    """Print the PTX/SASS/source or the resource usage of a built kernel (folder or name)."""
    folder = _find_kernel(kernel, out_dir)
    meta = json.loads((folder / "meta.json").read_text())
    show = show or ("sass" if pattern else "summary")
    if show == "summary":
        click.echo(json.dumps({k: meta[k] for k in ("name", "problem", "config", "resources", "sass_counts",
                                                     "compile_seconds")}, indent=2))
        return
    if show == "resources":
        click.echo(disasm.resource_usage(folder / "kernel.cubin").strip())
        click.echo(f"dynamic shared memory at launch: {meta['resources']['dynamic_smem']} bytes")
        return
    text = _artifact_text(folder, show)
    lines = grep(text, pattern) if pattern else text.splitlines()
    if pattern and not lines:
        raise click.ClickException(f"no line of the {show} matches {pattern!r}")
    click.echo("\n".join(lines))


def _artifact_text(folder: Path, show: str) -> str:
    if show == "sass":
        sass = folder / "kernel.sass"
        return sass.read_text() if sass.is_file() else disasm.cuobjdump_sass(folder / "kernel.cubin")
    return (folder / {"ptx": "kernel.ptx", "cu": "kernel.cu"}[show]).read_text()


@main.command("nvrtc")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--arch", default="sm_90a", show_default=True)
def nvrtc_cmd(source: Path, arch: str) -> None:
    """Compile a .cu file with gemmgen's NVRTC options and print the log (the repro of a compile error)."""
    result = compile_cuda(source.read_text(), source.name, arch)
    click.echo(result.log.strip())
    click.echo(f"{'ok' if result.ok else 'FAILED'} in {result.seconds:.2f} s: {' '.join(result.options)}")
    if not result.ok:
        sys.exit(1)

