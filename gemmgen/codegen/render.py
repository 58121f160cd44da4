"""Render a finished Kernel IR to CUDA C++ (STYLE.md #7): Python computes every number, templates hold text."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import jinja2

from ..ir import Kernel, WgmmaShape
from ..legality import smem_layout

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"
# The device helpers contain PTX like "{%3, %4}" that Jinja would parse, so they are pasted verbatim.
HELPERS_FILE = TEMPLATE_DIR / "device_helpers.cuh"


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def sfb_mode(block_n: int) -> str:
    """How a tile's columns map to 128-row B-scale blocks: one block, a compile-time split, or a run-time split."""
    if 128 % block_n == 0:
        return "uniform"
    if block_n % 128 == 0:
        return "aligned"
    return "runtime"


def template_context(kernel: Kernel, version: str) -> dict[str, object]:
    p, c = kernel.problem, kernel.config
    assert c is not None and c.is_complete and kernel.name, "render needs a finished kernel (run the pipeline)"
    assert c.swizzle_d is not None
    shape = WgmmaShape(c.block_n)
    regs, outs = shape.asm_operands()
    ir_comment = "\n".join(f"// {line}" for line in kernel.render_text(with_m=False).rstrip().splitlines())
    return {
        "version": version,
        "name": kernel.name,
        "p": p,
        "c": c,
        "L": smem_layout(c),
        "wgmma": shape,
        "wgmma_regs": "{" + regs + "}",
        "wgmma_outs": outs,
        "num_k_blocks": p.k_blocks,
        "num_sfb_rows": p.n_scale_blocks,
        "num_n_blocks": p.n_blocks(c.block_n),
        "d_atom_cols": c.swizzle_d // 2 if c.swizzle_d else c.block_n,
        "d_swizzle_mask": max(c.swizzle_d // 16 - 1, 0),
        "sfb_mode": sfb_mode(c.block_n),
        "ir_comment": ir_comment,
        "device_helpers": HELPERS_FILE.read_text(),
    }


def render(kernel: Kernel, version: str) -> str:
    return _environment().get_template("kernel.cu.j2").render(**template_context(kernel, version))


def template_sources() -> dict[str, str]:
    """Every template's text, for the cache key: editing a template invalidates cached kernels."""
    return {p.name: p.read_text() for p in sorted(TEMPLATE_DIR.iterdir()) if p.is_file()}
