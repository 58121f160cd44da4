"""Render a finished Kernel IR to CUDA C++ (docs/CONVENTIONS.md #7).

The plan holds every number; the templates hold text.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import jinja2

from ..ir import Kernel, WgmmaShape
from ..legality import A_SHIFT_ROWS

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"
# The device helpers contain PTX like "{%3, %4}" that Jinja would parse, so they are pasted verbatim.
HELPERS_FILE = TEMPLATE_DIR / "device_helpers.cuh"
# Helpers only the column-scale (1x128/1x128) kernels use: pasted after the shared ones for those kernels alone, so
# the other kernels' text (and their cache keys) stay as they were.
COLUMN_HELPERS_FILE = TEMPLATE_DIR / "device_helpers_column_scales.cuh"
# Helpers only the swapped (A and B) decode kernels use (with the column helpers' paired scale load).
SWAP_HELPERS_FILE = TEMPLATE_DIR / "device_helpers_swap_ab.cuh"
# Helpers only the kernels whose K splits meet in a global workspace use (GemmConfig.split_global).
SPLIT_GLOBAL_HELPERS_FILE = TEMPLATE_DIR / "device_helpers_split_global.cuh"
# Helpers only the fused epilogues use (DStorePlan.fused: SwiGLU, e4m3 D with its scales).
FUSED_HELPERS_FILE = TEMPLATE_DIR / "device_helpers_fused_epilogue.cuh"


class _TolerantBytecodeCache(jinja2.FileSystemBytecodeCache):
    """A bytecode cache that is only ever an optimisation: the folder may vanish under a live process (`gemmgen
    cache clear`, a test's temporary cache), so it is recreated on write and a failed write is ignored (seen on
    the H200: FileNotFoundError from a cleared cache failed 24 builds of a newly included template)."""

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            Path(self.directory).mkdir(parents=True, exist_ok=True)
            super().dump_bytecode(bucket)
        except OSError:
            pass


@lru_cache(maxsize=4)
def _environment(bytecode_dir: Path | None = None) -> jinja2.Environment:
    """The one Jinja environment. With `bytecode_dir`, compiled templates are kept there (keyed by their source's
    checksum): compiling the templates is ~40 ms of every cold `gemmgen build` process otherwise."""
    bytecode_cache = None
    if bytecode_dir is not None:
        bytecode_dir.mkdir(parents=True, exist_ok=True)
        bytecode_cache = _TolerantBytecodeCache(str(bytecode_dir))
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        bytecode_cache=bytecode_cache,
    )


def template_context(kernel: Kernel, version: str) -> dict[str, object]:
    c, plan = kernel.config, kernel.plan
    assert c is not None and c.is_complete and plan is not None and kernel.name, \
        "render needs a finished kernel (run the pipeline)"
    assert c.block_n is not None
    shape = WgmmaShape(c.wgmma_n, kernel.problem.a_dtype.value, kernel.problem.b_dtype.value)
    regs, outs = shape.asm_operands()
    ir_comment = "\n".join(f"// {line}" for line in kernel.render_text(with_m=False).rstrip().splitlines())
    return {
        "version": version,
        "name": kernel.name,
        "p": kernel.problem,
        "c": c,
        "plan": plan,
        "wgmma": shape,
        "wgmma_regs": "{" + regs + "}",
        "wgmma_outs": outs,
        "ir_comment": ir_comment,
        "a_shift_rows": A_SHIFT_ROWS,  # the shifted last-M-block box's row granularity (plan_kernel.a_tail_shift)
        "device_helpers": HELPERS_FILE.read_text() + (
            COLUMN_HELPERS_FILE.read_text() if plan.b_scale_mode == "column" or plan.swap_ab else "") + (
            SWAP_HELPERS_FILE.read_text() if plan.swap_ab else "") + (
            SPLIT_GLOBAL_HELPERS_FILE.read_text() if c.split_global else "") + (
            FUSED_HELPERS_FILE.read_text() if plan.d_store.fused else ""),
    }


def render(kernel: Kernel, version: str, bytecode_dir: Path | None = None) -> str:
    return _environment(bytecode_dir).get_template("kernel.cu.j2").render(**template_context(kernel, version))


def template_sources() -> dict[str, str]:
    """Every template's text, for the cache key: editing a template invalidates cached kernels."""
    return {p.name: p.read_text() for p in sorted(TEMPLATE_DIR.iterdir()) if p.is_file()}
