"""`gemmgen cache`: list, verify and clear the kernel cache (GEMMGEN_CACHE_DIR, default ~/.cache/gemmgen)."""

from __future__ import annotations

import click

from ..cache import KernelCache, age
from ..settings import Settings
from .common import guarded


def _cache() -> KernelCache:
    return KernelCache(Settings.from_env().cache_dir)


@click.group("cache")
def cache_group() -> None:
    """List, verify or clear the kernel cache."""


@cache_group.command("list")
@guarded
def cache_list() -> None:
    """Every cached kernel with its size, date and state."""
    cache = _cache()
    entries = cache.entries()
    for e in entries:
        state = "ok" if not e.problems else "DAMAGED: " + "; ".join(e.problems)
        click.echo(f"{age(e.modified)}  {e.bytes / 1e6:8.2f} MB  {e.folder.name}  {state}")
    click.echo(f"{len(entries)} kernel(s), {sum(e.bytes for e in entries) / 1e6:.2f} MB in {cache.root}")


@cache_group.command("verify")
@guarded
def cache_verify() -> None:
    """Check every entry's artifacts against their recorded sha256; exit 1 if any is damaged."""
    entries = _cache().entries()
    damaged = [e for e in entries if e.problems]
    for e in damaged:
        click.echo(f"{e.folder}: {'; '.join(e.problems)}")
    click.echo(f"{len(entries) - len(damaged)} of {len(entries)} kernel(s) intact"
               + (" (a damaged entry is rebuilt on its next use)" if damaged else ""))
    if damaged:
        raise SystemExit(1)


@cache_group.command("clear")
@guarded
def cache_clear() -> None:
    """Remove every cached kernel (and failed compiles and locks)."""
    cache = _cache()
    removed, failed = cache.clear()
    click.echo(f"removed {removed} kernel(s) from {cache.root}")
    for line in failed:
        click.echo(f"not removed: {line}", err=True)
    if failed:
        raise SystemExit(1)
