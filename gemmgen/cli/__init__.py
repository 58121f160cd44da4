"""The `gemmgen` command line: build, inspect, compare, tune, precompile and manage kernels. None of it needs a GPU or
imports torch, but for `gemmgen tune`'s timing (its --dry-run needs neither).

Every command turns gemmgen's own errors, bad files and bad arguments into a one-line message and a non-zero exit
(`guarded`); a traceback here is a bug.
"""

from __future__ import annotations

import warnings
from typing import TextIO

import click

from .. import __version__
from ..cache import CacheWarning
from .build import build_cmd
from .cache import cache_group
from .diff import diff_cmd
from .inspect import inspect_cmd, nvrtc_cmd
from .precompile import precompile_cmd
from .tune import tune_cmd


class _Group(click.Group):
    """Every command exits 130 on Ctrl-C (SIGINT), as shells expect, after saying so in one line."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("gemmgen: interrupted", err=True)
            ctx.exit(130)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="gemmgen")
def main() -> None:
    """gemmgen: generate, compile and inspect Hopper FP8 block-scaled GEMM kernels (dense and MoE grouped)."""
    warnings.showwarning = _one_line


_SHOW = warnings.showwarning


def _one_line(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: TextIO | None = None,
              line: str | None = None) -> None:
    """A cache warning on the command line: one line, no source line (the Python API keeps the default)."""
    if issubclass(category, CacheWarning):
        click.echo(f"gemmgen: warning: {message}", err=True)
    else:
        _SHOW(message, category, filename, lineno, file, line)


for command in (build_cmd, inspect_cmd, diff_cmd, tune_cmd, nvrtc_cmd, cache_group, precompile_cmd):
    main.add_command(command)

__all__ = ["main"]
