"""`gemmgen inspect` (a built kernel's summary, SASS, PTX, source or resources) and `gemmgen nvrtc` (a repro)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import click

from ..ir import CONFIG_FIELDS
from ..sass import compare
from ..sass.parse import grep, parse
from ..settings import Settings
from ..toolchain import disasm
from ..toolchain.nvrtc import compile_cuda
from .common import echo_json, guarded, print_summary, summary

SHOWS = ("summary", "sass", "ptx", "cu", "resources")
ARTIFACT = {"ptx": "kernel.ptx", "cu": "kernel.cu", "sass": "kernel.sass"}


def _kernel_name(folder: Path) -> str:
    """A cache folder is <name>-<16 hex of the key>; an exported one is <name>."""
    name, _, tail = folder.name.rpartition("-")
    return name if name and len(tail) == 16 and all(ch in "0123456789abcdef" for ch in tail) else folder.name


def find_kernel(ref: str, out_dir: Path) -> Path:
    """A kernel folder from a path, or from a kernel name (or an unambiguous prefix) found in --out or the cache."""
    path = Path(ref)
    if path.is_dir():
        if not (path / "meta.json").is_file():
            raise click.ClickException(f"{path} has no meta.json, so it is not a kernel folder gemmgen can inspect "
                                       "(build it with --emit including meta, as the default does)")
        return path
    if path.exists() or path.is_absolute() or "/" in ref:
        raise click.ClickException(f"{ref}: no such kernel folder")
    matches = []
    for root in (out_dir, Settings.from_env().cache_dir):
        if root.is_dir():
            matches += [p for p in sorted(root.iterdir()) if p.name.startswith(ref) and (p / "meta.json").is_file()]
    exact = [p for p in matches if _kernel_name(p) == ref]
    found = exact or matches
    names = sorted({_kernel_name(p) for p in found})
    if not names:
        raise click.ClickException(f"no built kernel {ref!r} in {out_dir}/ or the cache: give a kernel folder or a "
                                   "name; build it first with `gemmgen build --shape MxNxK`")
    if len(names) > 1:
        listing = "\n".join(f"  {n}" for n in names)
        raise click.ClickException(f"{ref!r} matches {len(names)} kernels; give more of the name:\n{listing}")
    return max(found, key=lambda p: (p.parent == out_dir, (p / "meta.json").stat().st_mtime))


def read_meta(folder: Path) -> dict[str, Any]:
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except ValueError as exc:
        raise click.ClickException(f"{folder / 'meta.json'} is not valid JSON ({exc}); rebuild the kernel") from exc
    if (not isinstance(meta, dict) or "name" not in meta or not isinstance(meta.get("config"), dict)
            or set(meta["config"]) != set(CONFIG_FIELDS)):
        raise click.ClickException(f"{folder / 'meta.json'} is not a gemmgen kernel's metadata; rebuild the kernel")
    return meta


def _needs(folder: Path, fname: str, show: str) -> Path:
    if not (folder / fname).is_file():
        raise click.ClickException(f"{folder} has no {fname} (it was built with a narrower --emit); rebuild with "
                                   f"--emit {show} (or the default) to inspect its {show}")
    return folder / fname


def artifact_text(folder: Path, show: str) -> str:
    if show == "sass" and not (folder / ARTIFACT["sass"]).is_file():
        return disasm.sass(_needs(folder, "kernel.cubin", "sass"))
    return _needs(folder, ARTIFACT[show], show).read_text()


@click.command("inspect")
@click.argument("kernel")
@click.option("--show", type=click.Choice(SHOWS), default=None,
              help="What to print (default: summary, or sass with --grep).")
@click.option("--grep", "pattern", default=None, help="Only lines matching this regular expression (e.g. QGMMA).")
@click.option("--json", "as_json", is_flag=True, help="With the summary or --histogram: print it as JSON.")
@click.option("--histogram", is_flag=True, help="Count the SASS instructions by opcode (most frequent first).")
@click.option("--full-opcodes", is_flag=True, help="With --histogram: count whole dotted opcodes (QGMMA.64x128x32...).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("generated"), show_default=True)
@guarded
def inspect_cmd(kernel: str, show: str | None, pattern: str | None, as_json: bool, histogram: bool,
                full_opcodes: bool, out_dir: Path) -> None:
    """Print the summary, SASS, PTX, source, resource usage or SASS opcode histogram of a built kernel (folder or
    name)."""
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise click.BadParameter(f"{pattern!r} is not a regular expression ({exc})", param_hint="--grep") from exc
    if histogram and (show is not None or pattern is not None):
        raise click.UsageError("--histogram counts the whole SASS: give it without --show or --grep")
    folder = find_kernel(kernel, out_dir)
    meta = read_meta(folder)
    if histogram:
        counts = compare.histogram(parse(artifact_text(folder, "sass")), full_opcodes)
        rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if as_json:
            echo_json({"name": meta["name"], "total": sum(counts.values()), "opcodes": dict(rows)})
        else:
            click.echo(f"{meta['name']}: {sum(counts.values())} instructions")
            for op, count in rows:
                click.echo(f"  {op:<{40 if full_opcodes else 12}} {count:>6}")
        return
    show = show or ("sass" if pattern is not None else "summary")
    if show == "summary":
        p = meta["problem"]
        s = summary(meta, m=p.get("m"), groups=p.get("groups", 1), from_cache=False, folder=folder, dest=None)
        echo_json(s) if as_json else print_summary(s)
        return
    if show == "resources":
        click.echo(disasm.resource_usage(_needs(folder, "kernel.cubin", "resources")).strip())
        click.echo(f"dynamic shared memory at launch: {meta['resources']['dynamic_smem']} bytes")
        return
    text = artifact_text(folder, show)
    lines = grep(text, pattern) if pattern is not None else text.splitlines()
    if pattern is not None:
        if not lines:
            raise click.ClickException(f"no line of the {show} matches {pattern!r}")
    click.echo("\n".join(lines))


@click.command("nvrtc")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--arch", default="sm_90a", show_default=True)
@guarded
def nvrtc_cmd(source: Path, arch: str) -> None:
    """Compile a .cu file with gemmgen's NVRTC options and print the log (the repro of a compile error)."""
    result = compile_cuda(source.read_text(), source.name, arch)
    click.echo(result.log.strip())
    click.echo(f"{'ok' if result.ok else 'FAILED'} in {result.seconds:.2f} s: {' '.join(result.options)}")
    if not result.ok:
        sys.exit(1)
