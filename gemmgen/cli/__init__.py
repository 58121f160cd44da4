"""The `gemmgen` command line: build, inspect, compare, tune, precompile and manage kernels. None of it needs a GPU or
imports torch, but for `gemmgen tune`'s timing (its --dry-run needs neither).

Every command turns gemmgen's own errors, bad files and bad arguments into a one-line message and a non-zero exit
(`guarded`); a traceback here is a bug.
"""

from __future__ import annotations

import click

from .. import __version__
from .build import build_cmd
from .cache import cache_group
from .diff import diff_cmd
from .inspect import inspect_cmd, nvrtc_cmd
from .precompile import precompile_cmd
from .tune import tune_cmd


@click.group()
@click.version_option(__version__, prog_name="gemmgen")
def main() -> None:
    """gemmgen: generate, compile and inspect Hopper FP8 block-scaled GEMM kernels (dense and MoE grouped)."""


for command in (build_cmd, inspect_cmd, diff_cmd, tune_cmd, nvrtc_cmd, cache_group, precompile_cmd):
    main.add_command(command)

__all__ = ["main"]
