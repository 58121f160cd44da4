"""Template rendering against golden .cu files for canonical configs (refresh on purpose: --update-golden)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemmgen import __version__
from gemmgen.codegen.render import render
from gemmgen.ir import FEATURES, H200_SXM, DType, GemmKind, GemmProblem, Kernel, ScaleRecipe
from gemmgen.legality import b_scale_mode
from gemmgen.passes import run_pipeline

GOLDEN = Path(__file__).resolve().parent / "golden"
# Canonical kernels: large-M multicast 256x128; small-M single math warpgroup with a 32B D swizzle and two
# accumulator sets; a partial-everything shape whose 112-wide tiles straddle B-scale blocks (run-time split, no
# multicast); the two grouped schedulers (contiguous with multicast, masked with a run-time B-scale split); the
# weight-gradient recipe (column B scales in shared memory, fp32 reduce-add, multicast; and a 128-wide tile whose column
# B scales are loaded at the issue).
CANONICAL = {
    "m4096_n7168_k16384": GemmProblem(4096, 7168, 16384),
    "m64_n2112_k7168": GemmProblem(64, 2112, 7168),
    "m4097_n4104_k7296": GemmProblem(4097, 4104, 7296),
    "gcontig_g4_m32768_n4096_k7168": GemmProblem(32768, 4096, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=4),
    "gmasked_g4_m256_n7168_k2048": GemmProblem(256, 7168, 2048, kind=GemmKind.M_GROUPED_MASKED, groups=4),
    "wgrad_m4096_n7168_k4096": GemmProblem(4096, 7168, 4096, out_dtype=DType.FP32, accumulate=True,
                                           scales=ScaleRecipe.A1x128_B1x128),
    "wgrad_n128_m4096_n7168_k4096": GemmProblem(4096, 7168, 4096, out_dtype=DType.FP32, accumulate=True,
                                                scales=ScaleRecipe.A1x128_B1x128),
}


# Each canonical kernel's schedule, forced, so that the goldens pin the templates rather than selection's picks.
FORCED = {
    "m4096_n7168_k16384": {"block_m": 256, "block_n": 128, "cluster": 2, "k_splits": 1, "swap_ab": 0, "stages": 3},
    "m64_n2112_k7168": {"block_m": 64, "block_n": 32, "cluster": 1, "k_splits": 2, "swap_ab": 0, "stages": 16},
    "m4097_n4104_k7296": {"block_m": 256, "block_n": 128, "cluster": 1, "k_splits": 1, "swap_ab": 0, "stages": 3},
    "gcontig_g4_m32768_n4096_k7168": {"block_m": 128, "block_n": 256, "cluster": 1, "k_splits": 1, "swap_ab": 0,
                                      "stages": 3},
    "gmasked_g4_m256_n7168_k2048": {"block_m": 128, "block_n": 192, "cluster": 1, "k_splits": 1, "swap_ab": 0,
                                    "stages": 4},
    "wgrad_m4096_n7168_k4096": {"block_m": 128, "block_n": 152, "cluster": 2, "k_splits": 1, "swap_ab": 0,
                                "stages": 4},
    # column B scales loaded at the issue (plan.early_column_scales: they fit in registers at 128 columns)
    "wgrad_n128_m4096_n7168_k4096": {"block_m": 128, "block_n": 128, "cluster": 1, "k_splits": 1, "swap_ab": 0,
                                     "stages": 4},
}


# and its features (ir.config.FEATURES), the values the kernels had when the goldens were first written
OFF = dict.fromkeys(FEATURES, 0)
FEATURES_OF = {
    "m4096_n7168_k16384": {**OFF, "epilogue_per_wg": 1, "balanced": 1},
    "m64_n2112_k7168": {**OFF, "evict_first": 1, "sa_gather": 1, "balanced": 1, "a_shift": 1},
    "m4097_n4104_k7296": {**OFF, "epilogue_per_wg": 1, "balanced": 1},
    "gcontig_g4_m32768_n4096_k7168": {**OFF, "epilogue_per_wg": 1, "cross_tile": 1},
    "gmasked_g4_m256_n7168_k2048": {**OFF, "epilogue_per_wg": 1},
    "wgrad_m4096_n7168_k4096": OFF,
    "wgrad_n128_m4096_n7168_k4096": OFF,
}


@pytest.mark.parametrize("tag", sorted(CANONICAL))
def test_render_matches_golden(tag: str, request: pytest.FixtureRequest) -> None:
    forced = tuple(sorted({**FORCED[tag], **FEATURES_OF[tag]}.items()))
    kernel = run_pipeline(Kernel(CANONICAL[tag], forced=forced), H200_SXM)
    text = render(kernel, __version__)
    path = GOLDEN / f"{tag}.cu"
    if request.config.getoption("--update-golden"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"missing golden {path}; run pytest --update-golden once"
    assert text == path.read_text(), f"{tag}: rendered source differs from {path} (intended? --update-golden)"


def test_render_embeds_ir_and_name() -> None:
    kernel = run_pipeline(Kernel(GemmProblem(128, 4096, 7168)), H200_SXM)
    text = render(kernel, __version__)
    assert f"{kernel.name}(" in text
    assert "// kernel " + str(kernel.name) in text  # the IR dump heads the file
    assert "//   plan" in text  # ... with the plan
    assert f"setmaxnreg.inc.sync.aligned.u32 {kernel.config.math_regs}" in text


def test_render_does_not_depend_on_rows_or_groups() -> None:
    """Rows and groups are run-time arguments: kernels chosen for different M (or G) share one source."""
    def text(m: int, groups: int) -> str:
        problem = GemmProblem(m, 7168, 2048, kind=GemmKind.M_GROUPED_MASKED, groups=groups)
        forced = (("block_m", 64), ("block_n", 128), ("cluster", 1))
        return render(run_pipeline(Kernel(problem, forced=forced), H200_SXM), __version__)

    assert text(200, 2) == text(300, 6)


@pytest.mark.parametrize("block_n,mode", [(128, "uniform"), (64, "uniform"), (256, "aligned"), (112, "runtime"),
                                          (160, "runtime")])
def test_b_scale_mode(block_n: int, mode: str) -> None:
    assert b_scale_mode(block_n) == mode


def test_bytecode_cache_folder_may_vanish(tmp_path) -> None:
    """A cleared cache under a live process must not fail a build (seen on the H200 before the fix)."""
    import shutil

    from gemmgen.codegen import render

    folder = tmp_path / "bc"
    env = render._environment(folder)
    shutil.rmtree(folder)
    env.get_template("split_k_reduce.cu.j2")  # compiles and writes its bytecode: the folder is made again
    assert any(folder.iterdir())
