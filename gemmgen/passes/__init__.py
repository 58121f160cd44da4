"""The pass pipeline: one flat tuple, a reason on each line (docs/CONVENTIONS.md #5).

`run_pipeline` runs it, verifying after every pass.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from ..errors import IllegalConfigError
from ..ir import GemmConfig, Kernel, Target
from ..legality import check, check_plan
from . import (
    name_kernel,
    pipeline_wgmma,
    plan_kernel,
    rasterize,
    register_split,
    select_config,
    select_features,
    select_split_reduce,
    select_swizzle,
)

PIPELINE: tuple[tuple[ModuleType, str], ...] = (
    (select_config, "tile, stages and cluster first: every later decision is sized from them"),
    (select_split_reduce, "where K splits meet follows from how many there are"),
    (select_swizzle, "swizzles follow from block_k and block_n"),
    (register_split, "the setmaxnreg split follows from the number of math warpgroups"),
    (pipeline_wgmma, "a second accumulator set is affordable only once the register split is known"),
    (rasterize, "the L2-friendly tile order needs the tile shape, cluster and grid"),
    (select_features, "each on/off feature is estimated on the otherwise finished config"),
    (plan_kernel, "the ABI and memory map follow from the finished config; templates and launcher read only it"),
    (name_kernel, "the name is a function of the finished IR, so it comes last"),
)


def verify(kernel: Kernel, target: Target) -> None:
    """Legality after a pass: the config's rules once its tile is decided, the plan's rules once it exists."""
    config = kernel.config
    assert config is not None
    for field, value in kernel.forced:  # passes only fill undecided fields (GemmConfig.decide)
        assert getattr(config, field) == value, f"a pass changed the forced field {field}"
    errors = check(kernel.problem, config, target) if config.has_tile else []
    if kernel.plan is not None and not errors:
        errors = check_plan(kernel.plan, target)
    if errors:
        raise IllegalConfigError(f"problem {kernel.problem.short()}", errors)


def run_pipeline(kernel: Kernel, target: Target, dump_dir: Path | None = None,
                 tuned: tuple[dict[str, int], str] | None = None) -> Kernel:
    """Run every pass in order from the draft config (the forced fields, applied once here), verifying after each;
    with `dump_dir`, write NN_<pass>.ir.txt after each. `tuned`: a tuned table row's fields and why (stages.build):
    decided in the draft under the forced ones, as data, so the passes fill only what neither names."""
    if kernel.config is None:
        decided = {**(tuned[0] if tuned else {}), **kernel.forced_dict()}
        kernel = kernel.replace(config=GemmConfig.draft(decided))
        if tuned:
            kernel = kernel.because("tuned", tuned[1])
    if dump_dir is not None:
        dump_dir.mkdir(parents=True, exist_ok=True)
        (dump_dir / "00_input.ir.txt").write_text(kernel.render_text())
    for index, (module, _why) in enumerate(PIPELINE, start=1):
        kernel = module.run(kernel, target)
        verify(kernel, target)
        if dump_dir is not None:
            short = module.__name__.rsplit(".", 1)[-1]
            (dump_dir / f"{index:02d}_{short}.ir.txt").write_text(kernel.render_text())
    assert kernel.config is not None and kernel.config.is_complete and kernel.plan is not None and kernel.name
    return kernel
