"""Each pass on its own (before/after), then the whole pipeline over the compile matrix."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from shapes import COMPILE_SHAPES

from gemmgen import passes
from gemmgen.errors import IllegalConfigError
from gemmgen.ir import FEATURES, H200_SXM, DType, GemmConfig, GemmKind, GemmProblem, Kernel, ScaleRecipe
from gemmgen.legality import check
from gemmgen.passes import (
    name_kernel,
    pipeline_wgmma,
    rasterize,
    register_split,
    select_config,
    select_swizzle,
)


def _draft(problem: GemmProblem, forced: tuple[tuple[str, int], ...] = ()) -> Kernel:
    """The kernel as run_pipeline hands it to the first pass: the forced fields applied to the draft config."""
    return Kernel(problem, config=GemmConfig.draft(dict(forced)), forced=forced)


UNSWAPPED = (("swap_ab", 0),)  # the unswapped decode rules at M <= 16 (select_config._swap_pays swaps wide N there)


def _selected(m: int, n: int, k: int, forced: tuple[tuple[str, int], ...] = ()) -> GemmConfig:
    out = select_config.run(_draft(GemmProblem(m, n, k), forced), H200_SXM)
    assert out.config is not None
    return out.config


def _with_config(config: GemmConfig, forced: tuple[tuple[str, int], ...] = (), n: int = 7168) -> Kernel:
    return Kernel(GemmProblem(4096, n, 7168), config=config, forced=forced)


# ---------------------------------------------------------------- select_config

@pytest.mark.parametrize("m", [0, 1, 7, 64])
def test_select_config_small_m_takes_one_m_block(m: int) -> None:
    cfg = _selected(m, 4096, 7168)
    tokens = cfg.block_n if cfg.swap_ab else cfg.block_m  # swapped, the tokens are wgmma's N
    assert tokens is not None and tokens >= m and (cfg.swap_ab or cfg.block_m == 64)
    assert check(GemmProblem(m, 4096, 7168), cfg, H200_SXM) == []


def test_select_config_leaves_later_fields_undecided() -> None:
    cfg = _selected(4096, 4096, 7168)
    assert (cfg.swizzle_ab, cfg.swizzle_d, cfg.producer_regs, cfg.math_regs, cfg.raster_group) == (None,) * 5
    assert cfg.num_sms == H200_SXM.num_sms and cfg.block_k == 128 and 3 <= cfg.stages <= 8


@pytest.mark.parametrize("forced", [
    (("block_n", 64),),
    (("block_m", 128), ("block_n", 96)),
    (("stages", 4),),
    (("cluster", 1),),
    (("num_sms", 66),),
])
def test_select_config_keeps_forced_fields(forced: tuple[tuple[str, int], ...]) -> None:
    cfg = _selected(4096, 7168, 7168, forced)
    for field, value in forced:
        assert getattr(cfg, field) == value, (field, cfg)


def test_select_config_does_not_mutate_input() -> None:
    kernel = _draft(GemmProblem(128, 256, 512))
    out = select_config.run(kernel, H200_SXM)
    assert kernel.config == GemmConfig.draft() and out.config is not None and out.problem == kernel.problem
    assert out.config.has_tile


# ---------------------------------------------------------------- select_swizzle

@pytest.mark.parametrize("block_n,swizzle_d", [(128, 128), (256, 128), (96, 64), (112, 32), (56, 0), (8, 0)])
def test_select_swizzle(block_n: int, swizzle_d: int) -> None:
    out = select_swizzle.run(_with_config(GemmConfig(128, block_n, 4)), H200_SXM)
    assert out.config is not None
    assert (out.config.swizzle_ab, out.config.swizzle_d) == (128, swizzle_d)
    assert dataclasses.replace(out.config, swizzle_ab=None, swizzle_d=None) == GemmConfig(128, block_n, 4)


def test_select_swizzle_keeps_forced() -> None:
    out = select_swizzle.run(_with_config(GemmConfig(128, 128, 4, swizzle_d=0)), H200_SXM)
    assert out.config is not None and out.config.swizzle_d == 0


# ---------------------------------------------------------------- select_features

FEATURE_PROBLEMS = [GemmProblem(1, 7168, 16384), GemmProblem(32, 4096, 7168), GemmProblem(264, 7168, 16384),
                    GemmProblem(4096, 7168, 2048), GemmProblem(8192, 4096, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS,
                                                               groups=8),
                    GemmProblem(300, 7168, 2048, kind=GemmKind.M_GROUPED_MASKED, groups=4),
                    GemmProblem(3000, 7168, 2048, out_dtype=DType.FP32, scales=ScaleRecipe.A1x128_B1x128)]


@pytest.mark.parametrize("problem", FEATURE_PROBLEMS, ids=lambda p: p.short())
def test_select_features_takes_what_the_model_estimates_faster(problem: GemmProblem) -> None:
    """Each feature is on where legal and estimated faster than without it: flipping any one decided feature gives
    an illegal kernel or one the model estimates no faster (tuning/cost.py)."""
    from gemmgen.tuning import cost, space

    kernel = passes.run_pipeline(Kernel(problem), H200_SXM)
    assert kernel.config is not None and all(getattr(kernel.config, f) in (0, 1) for f in FEATURES)
    coeffs = cost.coefficients(H200_SXM)
    base = cost.estimate(kernel, coeffs)[0]
    for flipped in space.flips(kernel, H200_SXM):
        (feature,) = [f for f in FEATURES if getattr(flipped.kernel.config, f) != getattr(kernel.config, f)]
        seconds = cost.estimate(flipped.kernel, coeffs)[0]
        assert seconds >= base * (1 - 1e-9) or getattr(kernel.config, feature) == 0 and seconds >= base, feature
    why = dict(kernel.reasons)["select_features"]
    assert all(f in why for f in FEATURES if getattr(kernel.config, f)), why


def test_select_features_keeps_pins_and_refuses_illegal_ones() -> None:
    forced = (("sa_gather", 1), ("block_m", 128), ("block_n", 64))
    kernel = passes.run_pipeline(Kernel(GemmProblem(129, 136, 1280), forced=forced), H200_SXM)
    assert kernel.config is not None and kernel.config.sa_gather == 1 and "_sag" in kernel.name
    off = passes.run_pipeline(Kernel(GemmProblem(1, 7168, 16384), forced=(("evict_first", 0),)), H200_SXM)
    assert off.config is not None and off.config.evict_first == 0 and "_ef" not in off.name
    with pytest.raises(IllegalConfigError, match="sa_gather=1"):
        passes.run_pipeline(Kernel(GemmProblem(64, 256, 512, scales=ScaleRecipe.TENSOR), forced=(("sa_gather", 1),)),
                            H200_SXM)
    with pytest.raises(IllegalConfigError, match="balanced=1"):
        passes.run_pipeline(Kernel(FEATURE_PROBLEMS[4], forced=(("balanced", 1),)), H200_SXM)


def test_feature_terms_move_the_estimate_the_way_they_should() -> None:
    """The model's feature terms: evict_first pays where the weights are read once and costs where many M blocks
    re-read them; a partial last M block's shifted box saves its zero fill, a full one changes nothing."""
    from gemmgen.tuning import cost

    coeffs = cost.coefficients(H200_SXM)

    def est(problem: GemmProblem, **pins: int) -> float:
        kernel = passes.run_pipeline(Kernel(problem, forced=tuple(sorted(pins.items()))), H200_SXM)
        return cost.estimate(kernel, coeffs)[0]

    tile = {"block_m": 128, "block_n": 128, "cluster": 1, "k_splits": 1}
    decode, prefill = GemmProblem(1, 7168, 16384), GemmProblem(4096, 7168, 2048)
    narrow = {**tile, "block_m": 64, "block_n": 64}  # a streaming decode tile (128x128 would be compute-bound)
    assert est(decode, **narrow, evict_first=1) < est(decode, **narrow, evict_first=0)
    assert est(prefill, **tile, evict_first=1) >= est(prefill, **tile, evict_first=0)
    assert est(GemmProblem(264, 7168, 2048), **tile, a_shift=1) < est(GemmProblem(264, 7168, 2048), **tile, a_shift=0)
    assert est(GemmProblem(256, 7168, 2048), **tile, a_shift=1) == est(GemmProblem(256, 7168, 2048), **tile, a_shift=0)

# ---------------------------------------------------------------- register_split

@pytest.mark.parametrize("block_m,split", [(64, (40, 248)), (128, (40, 232)), (256, (40, 232))])
def test_register_split(block_m: int, split: tuple[int, int]) -> None:
    out = register_split.run(_with_config(GemmConfig(block_m, 128, 4)), H200_SXM)
    assert out.config is not None
    assert (out.config.producer_regs, out.config.math_regs) == split
    # the split always fits the register file
    assert 128 * (split[0] + out.config.math_warpgroups * split[1]) <= H200_SXM.regs_per_sm


def test_register_split_keeps_forced() -> None:
    out = register_split.run(_with_config(GemmConfig(128, 128, 4, producer_regs=24, math_regs=200)), H200_SXM)
    assert out.config is not None and (out.config.producer_regs, out.config.math_regs) == (24, 200)


# ---------------------------------------------------------------- rasterize

@pytest.mark.parametrize("block_m,block_n,cluster", [(256, 128, 2), (64, 16, 1), (128, 192, 1), (64, 256, 2)])
def test_rasterize_picks_8_or_16(block_m: int, block_n: int, cluster: int) -> None:
    out = rasterize.run(_with_config(GemmConfig(block_m, block_n, 3, cluster=cluster, num_sms=132)), H200_SXM)
    assert out.config is not None and out.config.raster_group in (8, 16)


def test_rasterize_prefers_smaller_footprint() -> None:
    # tiny N tiles: B rows are cheap, A rows dominate -> the wider group (16) re-reads fewer A rows
    narrow = rasterize.run(_with_config(GemmConfig(64, 16, 3, num_sms=132)), H200_SXM)
    wide = rasterize.run(_with_config(GemmConfig(64, 256, 3, num_sms=132)), H200_SXM)
    assert narrow.config is not None and wide.config is not None
    assert (narrow.config.raster_group, wide.config.raster_group) == (16, 8)


def test_rasterize_keeps_forced() -> None:
    out = rasterize.run(_with_config(GemmConfig(256, 128, 3, num_sms=132, raster_group=4)), H200_SXM)
    assert out.config is not None and out.config.raster_group == 4


def test_forced_raster_group_zero_is_reported() -> None:
    with pytest.raises(IllegalConfigError, match="raster_group=0"):
        passes.run_pipeline(Kernel(GemmProblem(128, 256, 512), forced=(("raster_group", 0),)), H200_SXM)


# ---------------------------------------------------------------- name_kernel

COMPLETE = GemmConfig(256, 128, 3, cluster=2, swizzle_ab=128, swizzle_d=128, producer_regs=40, math_regs=232,
                      acc_sets=1, raster_group=8, num_sms=132, wave_n=128, a_rows=256, sa_gather=0, pdl=0,
                      swap_ab=0, evict_first=0, split_global=0, epilogue_per_wg=0, balanced=0, cross_tile=0, a_shift=0,
                      pingpong=0, multicast_b=0)


def _name(config: GemmConfig, n: int = 7168) -> str:
    out = name_kernel.run(_with_config(config, n=n), H200_SXM)
    assert out.name
    return out.name


def test_name_is_deterministic() -> None:
    assert _name(COMPLETE) == _name(dataclasses.replace(COMPLETE)) == _name(COMPLETE)
    assert _name(COMPLETE).startswith("sm90_e4m3_bf16_nt_n7168k7168_m256n128k128_s3_mc2a")
    # M is a run-time argument: it must not change the name
    a = name_kernel.run(Kernel(GemmProblem(4096, 7168, 7168), config=COMPLETE), H200_SXM)
    b = name_kernel.run(Kernel(GemmProblem(1, 7168, 7168), config=COMPLETE), H200_SXM)
    assert a.name == b.name


@pytest.mark.parametrize("change", [
    {"block_m": 128}, {"block_n": 112}, {"stages": 4}, {"cluster": 1}, {"swizzle_d": 64},
    {"producer_regs": 24}, {"math_regs": 224}, {"raster_group": 16}, {"a_rows": 64}, {"wave_n": 64}, {"evict_first": 1},
    {"sa_gather": 1}, {"epilogue_per_wg": 1}, {"balanced": 1}, {"cross_tile": 1}, {"a_shift": 1}, {"pingpong": 1},
])
def test_name_differs_per_field(change: dict[str, int]) -> None:
    assert _name(COMPLETE.replace(**change)) != _name(COMPLETE)


def test_name_differs_per_problem_n() -> None:
    assert _name(COMPLETE, n=4096) != _name(COMPLETE)


def test_name_differs_for_num_sms() -> None:
    assert _name(COMPLETE.replace(num_sms=66)) != _name(COMPLETE)


def test_name_says_where_k_splits_meet() -> None:
    split = COMPLETE.replace(cluster=1, k_splits=2)
    assert "_ks2_" in _name(split) and "_ks2g_" in _name(split.replace(split_global=1))


# ---------------------------------------------------------------- the pipeline

@pytest.mark.parametrize("m,n,k", COMPILE_SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in COMPILE_SHAPES])
def test_pipeline_complete_and_legal(m: int, n: int, k: int) -> None:
    problem = GemmProblem(m, n, k)
    out = passes.run_pipeline(Kernel(problem), H200_SXM)
    assert out.config is not None and out.config.is_complete
    assert check(problem, out.config, H200_SXM) == []
    assert out.name == name_kernel.kernel_name(out, H200_SXM) and out.problem == problem


def test_pipeline_dump_dir(tmp_path: Path) -> None:
    dump = tmp_path / "ir"
    out = passes.run_pipeline(Kernel(GemmProblem(128, 256, 512)), H200_SXM, dump_dir=dump)
    expected = ["00_input.ir.txt"] + [f"{i:02d}_{mod.__name__.rsplit('.', 1)[-1]}.ir.txt"
                                      for i, (mod, _) in enumerate(passes.PIPELINE, start=1)]
    assert expected[1:] == ["01_select_config.ir.txt", "02_select_split_reduce.ir.txt", "03_select_swizzle.ir.txt",
                            "04_register_split.ir.txt", "05_pipeline_wgmma.ir.txt", "06_rasterize.ir.txt",
                            "07_select_features.ir.txt", "08_plan_kernel.ir.txt", "09_name_kernel.ir.txt"]
    assert sorted(p.name for p in dump.iterdir()) == expected
    assert "block_m = None" in (dump / "00_input.ir.txt").read_text()  # the draft: nothing decided yet
    assert "swizzle_d = None" in (dump / "01_select_config.ir.txt").read_text()
    assert "  plan" not in (dump / "07_select_features.ir.txt").read_text()
    assert "tma tmap_a" in (dump / "08_plan_kernel.ir.txt").read_text()
    assert (dump / "09_name_kernel.ir.txt").read_text() == out.render_text()


def test_illegal_forced_config_lists_every_violation() -> None:
    kernel = Kernel(GemmProblem(128, 256, 512), forced=(("stages", 2), ("block_k", 64)))
    with pytest.raises(IllegalConfigError) as info:
        passes.run_pipeline(kernel, H200_SXM)
    assert any("stages=2" in v for v in info.value.violations), info.value.violations
    assert any("block_k=64" in v for v in info.value.violations), info.value.violations
    assert "stages=2" in str(info.value) and "block_k=64" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_illegal_forced_tile_raises() -> None:
    kernel = Kernel(GemmProblem(128, 256, 512), forced=(("block_m", 256), ("block_n", 256)))
    with pytest.raises(IllegalConfigError, match="registers: block 256x256"):
        passes.run_pipeline(kernel, H200_SXM)


# ---------------------------------------------------------------- pipeline_wgmma

def _after_split(config: GemmConfig, **forced: int) -> GemmConfig:
    k = register_split.run(_with_config(config.replace(**forced)), H200_SXM)
    out = pipeline_wgmma.run(k, H200_SXM).config
    assert out is not None
    return out


@pytest.mark.parametrize("block_m,block_n,sets", [(64, 16, 2), (64, 112, 2), (128, 128, 2), (128, 192, 1),
                                                  (256, 64, 1), (256, 128, 1)])
def test_pipeline_wgmma_takes_two_sets_when_one_wave_and_registers_fit(block_m, block_n, sets) -> None:
    assert _after_split(GemmConfig(block_m, block_n, 4)).acc_sets == sets


def test_pipeline_wgmma_keeps_forced() -> None:
    assert _after_split(GemmConfig(64, 64, 4), acc_sets=1).acc_sets == 1


def test_two_sets_with_two_waves_is_illegal() -> None:
    cfg = GemmConfig(256, 64, 3, swizzle_ab=128, swizzle_d=128, producer_regs=40, math_regs=232, acc_sets=2,
                     raster_group=8, num_sms=132)
    assert any("acc_sets=2" in e for e in check(GemmProblem(4096, 4096, 4096), cfg, H200_SXM))


# ---------------------------------------------------------------- forced fields: applied once, kept by every pass

FORCEABLE = {"block_m": 128, "block_n": 96, "stages": 4, "cluster": 1, "swizzle_d": 64, "producer_regs": 32,
             "math_regs": 224, "acc_sets": 1, "raster_group": 4, "num_sms": 66}


@pytest.mark.parametrize("field", sorted(FORCEABLE))
def test_each_forced_field_reaches_the_final_config(field: str) -> None:
    out = passes.run_pipeline(Kernel(GemmProblem(4096, 7168, 2048), forced=((field, FORCEABLE[field]),)), H200_SXM)
    assert out.config is not None and getattr(out.config, field) == FORCEABLE[field]


def test_a_pass_overriding_a_forced_field_is_caught(monkeypatch) -> None:
    original = select_swizzle.run
    monkeypatch.setattr(select_swizzle, "run", lambda k, t: original(k, t).replace(
        config=original(k, t).config.replace(swizzle_d=32)))
    with pytest.raises(AssertionError, match="changed the forced field swizzle_d"):
        passes.run_pipeline(Kernel(GemmProblem(4096, 7168, 2048), forced=(("swizzle_d", 64),)), H200_SXM)


# ---------------------------------------------------------------- grouped selection


def test_masked_model_is_quick_on_extreme_sizes() -> None:
    import time

    start = time.perf_counter()
    for groups, expected in ((1024, 2**31 - 1), (1, 2**31 - 1), (1024, 10**6), (8, 10**7), (256, 4096)):
        cfg = select_config.run(_draft(GemmProblem(expected, 7168, 2048, kind=GemmKind.M_GROUPED_MASKED,
                                                   groups=groups)), H200_SXM).config
        assert cfg is not None and cfg.block_m == 128
    assert time.perf_counter() - start < 5, "the masked model should take milliseconds, not seconds"


def test_every_deciding_pass_records_why() -> None:
    from gemmgen.ir import H200_SXM, GemmProblem, Kernel
    from gemmgen.passes import run_pipeline

    kernel = run_pipeline(Kernel(GemmProblem(4096, 7168, 16384)), H200_SXM)
    passes = [who for who, _ in kernel.reasons]
    assert passes == ["select_config", "select_swizzle", "register_split", "pipeline_wgmma", "rasterize",
                      "select_features", "plan_kernel"]
    assert "estimate" in kernel.reasons[0][1] and "232" in kernel.reasons[2][1] and "x1." in kernel.reasons[5][1]
    assert "k-blocks per body)" in kernel.reasons[6][1]
    assert "reasons" in kernel.render_text() and "reasons" not in kernel.render_text(with_m=False)


_E5M2 = {"a_dtype": DType.E5M2, "b_dtype": DType.E5M2}


@pytest.mark.parametrize("m,n,k,forced,kw", [
    (128, 4096, 4096, (), {}),  # 32 k-blocks, the same 128 CTAs as the model's 64-row halves: measured x0.93
    (96, 2112, 3072, (), {}), (128, 4096, 3584, (), {}),  # under 32 k-blocks: measured x0.76-0.93
    (64, 2112, 7168, (), {}),  # 64-row decode: the model's picks (x0.83-0.93 against a workspace refit)
    (128, 96, 7168, (), {}),  # 3 tiles: 8 splits of two 64-row M blocks = 48 CTAs, under WIDE_SPLIT_MIN_CTAS
    (128, 256, 7168 - 128, (), {}),  # 55 k-blocks: no 2-, 4- or 8-way split divides them
    (128, 2112, 7168, (("block_n", 32),), {}), (128, 2112, 7168, (("k_splits", 2),), {}),
    (128, 2112, 7168, (("split_global", 0),), {}), (128, 2112, 7168, (("block_m", 64),), {}),
    # kinds not measured: bf16, e5m2, per-channel and per-tensor scales, fp32 out, accumulate
    (128, 2112, 7168, (), {"a_dtype": DType.BF16, "b_dtype": DType.BF16, "scales": ScaleRecipe.NONE}),
    (128, 2112, 7168, (), _E5M2), (128, 2112, 7168, (), {"scales": ScaleRecipe.CHANNEL}),
    (128, 2112, 7168, (), {"scales": ScaleRecipe.TENSOR}), (128, 2112, 7168, (), {"out_dtype": DType.FP32}),
    (128, 2112, 7168, (), {"out_dtype": DType.FP32, "accumulate": True})])
def test_wide_splits_not_taken(m: int, n: int, k: int, forced: tuple, kw: dict) -> None:
    """Short K, equal CTAs under 56 k-blocks, 64-row decode, too few CTAs, pinned tile fields and the kinds not
    measured keep the decode model's pick."""
    kernel = passes.run_pipeline(Kernel(GemmProblem(m, n, k, **kw), forced=forced), H200_SXM)
    assert "_wide_splits" not in kernel.reasons[0][1], kernel.name


@pytest.mark.parametrize("num_sms", [1, 2, 3, 5, 132])
def test_a_capped_grid_never_launches_empty(num_sms: int) -> None:
    """set_num_sms(2) once made the decode rule pick 4 K splits: a grid of 0 CTAs (found in review)."""
    from gemmgen.ir import H200_SXM, GemmProblem, Kernel
    from gemmgen.passes import run_pipeline

    for m, n, k in ((1, 2112, 7168), (1, 7168, 16384), (64, 576, 7168), (4096, 7168, 2048)):
        kernel = run_pipeline(Kernel(GemmProblem(m, n, k), forced=(("num_sms", num_sms),)), H200_SXM)
        assert kernel.plan is not None and kernel.plan.launch.grid(m, 1) >= 1, kernel.name


def test_split_wider_than_the_grid_is_illegal() -> None:
    from gemmgen.ir import H200_SXM, GemmConfig, GemmProblem
    from gemmgen.legality import check

    cfg = GemmConfig(block_m=64, block_n=128, stages=4, cluster=1, block_k=128, k_splits=4, num_sms=3)
    assert any("num_sms=3" in e for e in check(GemmProblem(1, 7168, 16384), cfg, H200_SXM))


def _cluster_reason(m: int, n: int, k: int, forced: tuple[tuple[str, int], ...] = ()) -> str:
    kernel = select_config.run(_draft(GemmProblem(m, n, k), forced), H200_SXM)
    return next(text for name, text in kernel.reasons if name == "select_config")


def test_balanced_grid_reason_says_whether_it_applies_to_this_m() -> None:
    """The kernel is shared by every M; its reason says where the balanced grid does not change this M's launch."""
    def plan_reason(m: int, n: int, k: int, pins: tuple[tuple[str, int], ...] = ()) -> str:
        kernel = passes.run_pipeline(Kernel(GemmProblem(m, n, k), forced=(*UNSWAPPED, *pins)), H200_SXM)
        return next(why for who, why in kernel.reasons if who == "plan_kernel")

    assert "grid balanced at launch" in plan_reason(4096, 7168, 16384)
    assert "not at M = " not in plan_reason(4096, 7168, 16384)
    assert ", not at M = 8" in plan_reason(8, 2112, 7168, (("balanced", 1),))


