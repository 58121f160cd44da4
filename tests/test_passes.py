"""Each pass on its own (before/after), then the whole pipeline over the compile matrix."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from shapes import COMPILE_SHAPES, WGRAD_TARGETS

from gemmgen import passes
from gemmgen.errors import IllegalConfigError
from gemmgen.ir import H200_SXM, DType, GemmConfig, GemmKind, GemmProblem, Kernel, ScaleRecipe
from gemmgen.legality import check
from gemmgen.passes import (
    name_kernel,
    pipeline_wgmma,
    rasterize,
    register_split,
    select_config,
    select_sa_load,
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
def test_select_config_small_m_uses_block_m_64(m: int) -> None:
    cfg = _selected(m, 4096, 7168)
    assert cfg.block_m == 64
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


def test_select_config_cluster_by_m() -> None:
    assert _selected(4096, 7168, 7168).cluster == 2  # large M, even number of N blocks: A multicast
    assert _selected(4096, 7168, 2048).cluster == 1  # a 256-row dense tile over a short K: unpaired
    assert _selected(128, 7168, 7168).cluster == 1  # small M: no multicast


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


# ---------------------------------------------------------------- select_sa_load

@pytest.mark.parametrize("problem,tile,gather", [
    (GemmProblem(32, 4096, 7168), (64, 32), 1),  # measured x1.081
    (GemmProblem(64, 4096, 7168), (64, 32), 1),  # x1.072
    (GemmProblem(32, 7168, 2048), (64, 64), 0),  # x0.999
    (GemmProblem(128, 2112, 7168), (128, 32), 0),  # x0.894
    (GemmProblem(4096, 7168, 2048), (256, 128), 0),  # x0.868
    (GemmProblem(32, 4096, 7168, scales=ScaleRecipe.A1x128_B1x128), (64, 32), 0),  # not measured: TMA kept
    (GemmProblem(256, 4096, 7168, kind=GemmKind.M_GROUPED_MASKED, groups=2), (64, 32), 0),  # not measured
    (GemmProblem(32, 4096, 7168, scales=ScaleRecipe.TENSOR), (64, 32), 0),  # no per-stage SA at all
    (GemmProblem(4096, 64, 7168), (64, 32), 0),  # a 64x32 prefill tile: not measured
])
def test_select_sa_load(problem: GemmProblem, tile: tuple[int, int], gather: int) -> None:
    out = select_sa_load.run(Kernel(problem, config=GemmConfig(*tile, 4)), H200_SXM)
    assert out.config is not None and out.config.sa_gather == gather
    assert dataclasses.replace(out.config, sa_gather=None) == GemmConfig(*tile, 4)
    if problem.scales.promotes:
        assert out.reasons[-1][0] == "select_sa_load" and ("gathered by" in out.reasons[-1][1]) == bool(gather)


def test_select_sa_load_keeps_forced_and_names_it() -> None:
    forced = (("sa_gather", 1), ("block_m", 128), ("block_n", 64))
    kernel = passes.run_pipeline(Kernel(GemmProblem(129, 136, 1280), forced=forced), H200_SXM)
    assert kernel.config is not None and kernel.config.sa_gather == 1 and kernel.name.endswith("_sag")
    assert dict(kernel.reasons)["select_sa_load"].endswith("(forced)")
    paired = passes.run_pipeline(Kernel(GemmProblem(4096, 64, 7168), forced=(("block_n", 32),)), H200_SXM)
    assert paired.config is not None and paired.config.sa_gather == 0, paired.name  # no prefill tile gathers
    default = passes.run_pipeline(Kernel(GemmProblem(32, 7168, 2048)), H200_SXM)
    assert default.config is not None and default.config.sa_gather == 0 and "_sag" not in default.name
    with pytest.raises(IllegalConfigError, match="sa_gather=1"):
        passes.run_pipeline(Kernel(GemmProblem(64, 256, 512, scales=ScaleRecipe.TENSOR), forced=(("sa_gather", 1),)),
                            H200_SXM)


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
                      swap_ab=0, evict_first=0, split_global=0)


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
                            "04_select_sa_load.ir.txt", "05_select_l2_hint.ir.txt", "06_register_split.ir.txt",
                            "07_pipeline_wgmma.ir.txt", "08_rasterize.ir.txt", "09_plan_kernel.ir.txt",
                            "10_name_kernel.ir.txt"]
    assert sorted(p.name for p in dump.iterdir()) == expected
    assert "block_m = None" in (dump / "00_input.ir.txt").read_text()  # the draft: nothing decided yet
    assert "swizzle_d = None" in (dump / "01_select_config.ir.txt").read_text()
    assert "  plan" not in (dump / "08_rasterize.ir.txt").read_text()
    assert "tma tmap_a" in (dump / "09_plan_kernel.ir.txt").read_text()
    assert (dump / "10_name_kernel.ir.txt").read_text() == out.render_text()


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

def test_grouped_selection() -> None:
    # (N = 7168: 128x192 pads it by 1.8%, so no column-wave tile replaces the wave rule's pick, which pairs)
    contiguous = GemmProblem(32768, 7168, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=4)
    cfg = select_config.run(_draft(contiguous), H200_SXM).config
    assert cfg is not None and cfg.block_m in (64, 128) and cfg.cluster == 2
    # the pair needs >= CONTIGUOUS_PAIR_MIN_ROWS (512) rows per expert on average: 32 experts of 320 rows stay
    # unpaired (as the bench's 32 x 256 case, measured x1.015-1.023 unpaired), 16 x 512 and 4 x 8192 pair, 16 x 504
    # does not; the reason says which
    for groups, m_total, cluster in ((32, 10240, 1), (16, 8192, 2), (16, 8064, 1), (4, 32768, 2)):
        kernel = select_config.run(_draft(GemmProblem(m_total, 7168, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS,
                                                      groups=groups)), H200_SXM)
        assert kernel.config.cluster == cluster, (groups, m_total)
        said = " ".join(why for _, why in kernel.reasons)
        assert ("rows per expert" in said) and (("unpaired" in said) == (cluster == 1)), said
    masked_small = select_config.run(_draft(GemmProblem(64, 4096, 7168, kind=GemmKind.M_GROUPED_MASKED,
                                                        groups=2)), H200_SXM).config
    assert masked_small is not None and masked_small.block_m == 64 and masked_small.cluster == 1
    # expected_m steers the tile: 4 groups x 1024 expected rows take 128-row tiles; a masked layout is never paired
    # (the pair measured 3-4% slower on every masked case swept, bench/results/2026-11-30-511d8dd)
    big = select_config.run(_draft(GemmProblem(1024, 4096, 7168, kind=GemmKind.M_GROUPED_MASKED, groups=4)),
                            H200_SXM).config
    assert big is not None and big.cluster == 1 and big.block_m == 128


def test_column_waves_picked_for_few_rows_per_expert_only() -> None:
    # a contiguous layout's 128-row expert alignment rules out 256x128: with few rows per expert its 128x256 tile
    # runs as two m64n128 column waves (wave_n 128), legal at 64 x (1 + 2) + 40 = 232 registers where m64n256 would
    # need ~296 (measured x1.049 / x1.005 at 32 x 256)
    few = GemmProblem(8192, 4096, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=32)
    contiguous = select_config.run(_draft(few), H200_SXM).config
    assert contiguous is not None and (contiguous.block_m, contiguous.block_n, contiguous.wave_n) == (128, 256, 128)
    assert not check(few, contiguous.replace(stages=3, swizzle_ab=128, swizzle_d=128, producer_regs=40,
                                             math_regs=232, acc_sets=1, raster_group=8), H200_SXM)
    # dense and masked keep one wgmma per tile width (dense 128x256 x0.984-0.998 against 256x128), and so does a
    # contiguous layout with many rows per expert where 128x192 pads N by less than 2.5% (7168: 1.8%, measured level)
    for problem in (GemmProblem(32768, 7168, 2048, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=4),
                    GemmProblem(32768, 1536, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=8),
                    GemmProblem(4096, 7168, 16384), GemmProblem(8192, 8192, 8192),
                    GemmProblem(1024, 4096, 7168, kind=GemmKind.M_GROUPED_MASKED, groups=4)):
        cfg = select_config.run(_draft(problem), H200_SXM).config
        assert cfg is not None and cfg.wave_n == cfg.block_n, problem
    # a forced 256-wide block-recipe tile anywhere gets the column waves; other recipes keep the m64n256 wgmma
    forced = passes.run_pipeline(Kernel(GemmProblem(4096, 7168, 2048), forced=(("block_m", 128), ("block_n", 256))),
                                 H200_SXM)
    assert forced.config is not None and forced.config.wave_n == 128 and forced.name.endswith("_wn128")
    tensor = passes.run_pipeline(Kernel(GemmProblem(4096, 7168, 2048, scales=ScaleRecipe.TENSOR),
                                        forced=(("block_m", 128), ("block_n", 256))), H200_SXM)
    assert tensor.config is not None and tensor.config.wave_n == 256 and "_wn" not in tensor.name


def test_column_waves_save_the_padding_of_many_rows_per_expert() -> None:
    # many rows per expert: 128x192 pads N = 4096 (and 2048) by 3.1%, so the 128x256 column-wave tile replaces it
    # (select_config._column_wave_tile), unpaired (measured x1.012-1.025 over the pair at 4096x7168)
    for n in (4096, 2048):
        problem = GemmProblem(32768, n, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=4)
        kernel = passes.run_pipeline(Kernel(problem), H200_SXM)
        cfg = kernel.config
        assert cfg is not None and (cfg.block_m, cfg.block_n, cfg.wave_n, cfg.cluster) == (128, 256, 128, 1), n
        assert any("column waves of 128" in why and "pads N by 3.1%" in why and "unpaired: measured" in why
                   for _, why in kernel.reasons), kernel.reasons
    # a pinned pair stays; a pinned 256-wide tile elsewhere keeps the cluster rule (paired at 7168x2048, where the
    # pair measured ahead)
    paired = passes.run_pipeline(Kernel(GemmProblem(32768, 4096, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=4),
                                        forced=(("cluster", 2),)), H200_SXM).config
    assert paired is not None and (paired.block_n, paired.cluster) == (256, 2)
    pinned = passes.run_pipeline(Kernel(GemmProblem(32768, 7168, 2048, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=4),
                                        forced=(("block_n", 256),)), H200_SXM).config
    assert pinned is not None and (pinned.wave_n, pinned.cluster) == (128, 2)
    # a pinned width or tile height is the user's: the rule stays out
    for forced in ((("block_n", 192),), (("block_m", 128),), (("wave_n", 192),)):
        kernel = passes.run_pipeline(Kernel(GemmProblem(32768, 4096, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS,
                                                        groups=4), forced=forced), H200_SXM)
        assert kernel.config is not None and kernel.config.wave_n == kernel.config.block_n == 192, forced
    # only what was measured: e4m3 inputs and K >= 2048 (e5m2 and K = 1536 keep the wave rule's pick); and only at no
    # more rounds x area (1 expert of 512 rows at N = 1280 keeps its 64x96, which the padding alone would replace)
    for problem in (GemmProblem(32768, 4096, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=4, a_dtype=DType.E5M2,
                                b_dtype=DType.E5M2),
                    GemmProblem(32768, 4096, 1536, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=4),
                    GemmProblem(512, 1280, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=1)):
        cfg = passes.run_pipeline(Kernel(problem), H200_SXM).config
        assert cfg is not None and cfg.wave_n == cfg.block_n != 256, problem
    # other recipes have no column waves (wave_n_for): they keep the wave rule's pick
    bf16 = passes.run_pipeline(Kernel(GemmProblem(32768, 4096, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=4,
                                                  scales=ScaleRecipe.NONE, a_dtype=DType.BF16, b_dtype=DType.BF16)),
                               H200_SXM)
    assert bf16.config is not None and bf16.config.wave_n == bf16.config.block_n


def test_masked_blocks_per_group_distribution() -> None:
    from gemmgen.passes.masked_model import blocks_per_group

    # 1024 expected rows: x uniform in [716.8, 1331.2), int(x) rows: 6 blocks of 128 for x < 769, then 7 .. 11
    dist = blocks_per_group(1024, 128)
    assert sorted(dist) == [6, 7, 8, 9, 10, 11] and abs(sum(dist.values()) - 1) < 1e-9
    assert abs(dist[6] - (769 - 716.8) / 614.4) < 1e-9 and abs(dist[8] - 128 / 614.4) < 1e-9
    assert abs(dist[11] - (1331.2 - 1281) / 614.4) < 1e-9
    # 80 expected rows: 56..104 rows, always one 128-row block; 99: int(x) <= 128, still one (x < 128.7)
    assert blocks_per_group(80, 128) == {1: 1.0} and blocks_per_group(99, 128) == {1: 1.0}
    # 100 expected rows: int(x) = 129 or 130 for x in [129, 130): two blocks with probability 1/60
    assert abs(blocks_per_group(100, 128)[2] - 1 / 60) < 1e-9
    # 64 expected rows in 64-row blocks: 44..83 rows, two blocks from x = 65 on: (83.2 - 65) / 38.4
    assert abs(blocks_per_group(64, 64)[2] - (83.2 - 65) / 38.4) < 1e-9


def test_masked_normal_law_matches_the_exact_sum() -> None:
    from gemmgen.passes.masked_model import block_sum, expected_waves

    # the normal law of the sum of the groups' M blocks against the exact convolution, each asked for explicitly:
    # within 1% in expected waves where one group spreads over 2+ blocks
    for groups, expected, n in ((9, 300, 4096), (12, 200, 7168), (16, 1024, 4096), (40, 700, 7168), (64, 150, 2048)):
        for bm, bn in ((128, 160), (128, 128), (64, 192)):
            nb = -(-n // bn)
            exact = expected_waves(block_sum(expected, bm, groups, exact=True), nb, 132)
            normal = expected_waves(block_sum(expected, bm, groups, exact=False), nb, 132)
            assert block_sum(expected, bm, groups, exact=False).exact is None
            assert abs(normal / exact - 1) < 0.01, (groups, expected, bm, bn, normal, exact)


def test_masked_model_is_quick_on_extreme_sizes() -> None:
    import time

    start = time.perf_counter()
    for groups, expected in ((1024, 2**31 - 1), (1, 2**31 - 1), (1024, 10**6), (8, 10**7), (256, 4096)):
        cfg = select_config.run(_draft(GemmProblem(expected, 7168, 2048, kind=GemmKind.M_GROUPED_MASKED,
                                                   groups=groups)), H200_SXM).config
        assert cfg is not None and cfg.block_m == 128
    assert time.perf_counter() - start < 5, "the masked model should take milliseconds, not seconds"


def test_masked_pick_keeps_a_fixed_b_scale_split_first() -> None:
    from gemmgen.passes import masked_model

    # 1 group x 200 rows, N 7168: 128x112 (a B-scale split selected at run time) models 11% cheaper than the pick,
    # but a fixed split comes first, as in the wave rule
    problem = GemmProblem(200, 7168, 7168, kind=GemmKind.M_GROUPED_MASKED, groups=1)
    cfg = select_config.run(_draft(problem), H200_SXM).config
    assert cfg is not None and cfg.block_n is not None and not select_config._selects_split(problem, cfg.block_n)
    assert select_config._selects_split(problem, 112)
    assert masked_model.masked_cost(problem, 128, 112, 132) < masked_model.masked_cost(problem, 128, cfg.block_n, 132)


def test_masked_tile_follows_the_spread_of_group_sizes() -> None:
    # 2 groups x 512 expected rows, N 4096: at exactly 512 rows 128x128 makes 256 tiles (1.94 waves); with sizes
    # spread about 512 it often makes 288+ (a third wave), where 128x160 stays under two waves more often. Measured
    # over 8 draws (bench/results/2026-11-30-717cde7-masked): 128x160 1.047x the best's mean time, 128x128 1.20x.
    cfg = select_config.run(_draft(GemmProblem(512, 4096, 7168, kind=GemmKind.M_GROUPED_MASKED, groups=2)),
                            H200_SXM)
    assert cfg.config is not None and (cfg.config.block_m, cfg.config.block_n) == (128, 160)
    assert "masked: group sizes taken as int(expected_m x uniform(0.7, 1.3))" in cfg.reasons[-1][1]
    # at 64 expected rows or fewer too (decode MoE; bench/NOTES.md v0.11 section 6)
    small = select_config.run(_draft(GemmProblem(64, 4096, 7168, kind=GemmKind.M_GROUPED_MASKED, groups=2)),
                              H200_SXM)
    assert "masked:" in small.reasons[-1][1] and small.config is not None and small.config.block_m == 64
    # a pinned field is kept by the masked rule too
    pinned = select_config.run(_draft(GemmProblem(512, 4096, 7168, kind=GemmKind.M_GROUPED_MASKED, groups=2),
                                      (("block_n", 128),)), H200_SXM)
    assert pinned.config is not None and pinned.config.block_n == 128


def test_every_deciding_pass_records_why() -> None:
    from gemmgen.ir import H200_SXM, GemmProblem, Kernel
    from gemmgen.passes import run_pipeline

    kernel = run_pipeline(Kernel(GemmProblem(4096, 7168, 16384)), H200_SXM)
    passes = [who for who, _ in kernel.reasons]
    assert passes == ["select_config", "select_swizzle", "select_sa_load", "register_split", "pipeline_wgmma",
                      "rasterize", "plan_kernel"]
    assert "wave" in kernel.reasons[0][1] and "232" in kernel.reasons[3][1] and "SA by TMA" in kernel.reasons[2][1]
    assert "unrolled by 8 (4 k-blocks per body)" in kernel.reasons[6][1] and "epilogue" not in kernel.reasons[6][1]
    assert "reasons" in kernel.render_text() and "reasons" not in kernel.render_text(with_m=False)


def test_decode_rule_splits_k_to_fill_the_sms() -> None:
    """1x2112x7168: 66 tiles of 64x32 leave half the SMs idle; two K splits fill all 132 (measured 10.8 us, the
    best of the sweep, bench/results/2026-11-30-f416dca/sweep_decode.json). Decode tiles load only M's rows of A."""
    from gemmgen.ir import H200_SXM, GemmProblem, Kernel
    from gemmgen.passes import run_pipeline
    from gemmgen.passes.select_config import stream_seconds

    kernel = run_pipeline(Kernel(GemmProblem(1, 2112, 7168), forced=UNSWAPPED), H200_SXM)
    assert kernel.config is not None and (kernel.config.block_n, kernel.config.k_splits) == (32, 2)
    # the splits are independent CTAs meeting in the workspace (select_split_reduce), not clusters
    assert kernel.config.split_global == 1 and "_ks2g_" in (kernel.name or "")
    assert kernel.plan is not None and kernel.plan.launch.cluster == 1 and kernel.plan.launch.grid(1, 1) == 132
    assert "decode" in kernel.reasons[0][1]
    assert kernel.config.a_rows == 8 and kernel.plan.smem.a_stage_bytes == 8 * 128 and kernel.plan.maps[0].box == (
        128, 8)
    p = GemmProblem(1, 2112, 7168)
    assert stream_seconds(p, 32, 2, 16, 132) < stream_seconds(p, 32, 1, 16, 132)  # type: ignore[operator]
    assert stream_seconds(p, 32, 7, 16, 132) is None  # clusters of 7 are not tried (measured: two waves)
    # then M rounded up to 8 rows (the block recipe): A's box ends inside M (measured x1.04-1.44 at M = 33..100)
    for m, rows in ((1, 8), (9, 16), (32, 32), (33, 40), (64, 64), (65, 72), (100, 104), (127, 128)):
        decode = run_pipeline(Kernel(GemmProblem(m, 7168, 16384), forced=UNSWAPPED), H200_SXM)
        assert decode.config is not None and decode.config.load_rows == rows, (m, decode.name)
        assert decode.plan is not None and decode.plan.maps[0].box == (128, rows), decode.name
    for scales, rows in ((ScaleRecipe.TENSOR, 72), (ScaleRecipe.CHANNEL, 72), (ScaleRecipe.A1x128_B1x128, 128)):
        out = DType.FP32 if scales is ScaleRecipe.A1x128_B1x128 else DType.BF16  # the wgrad recipe writes fp32
        other = run_pipeline(Kernel(GemmProblem(65, 7168, 16384, scales=scales, out_dtype=out)), H200_SXM)
        assert other.config is not None and other.config.load_rows == rows, other.name
    bf16 = run_pipeline(Kernel(GemmProblem(65, 7168, 16384, a_dtype=DType.BF16, b_dtype=DType.BF16,
                                           scales=ScaleRecipe.NONE)), H200_SXM)
    assert bf16.config is not None and bf16.config.load_rows == 72 and bf16.plan is not None
    assert bf16.plan.maps[0].box == (64, 72), bf16.name  # 64 bf16 = 128 bytes per row
    # a pinned ring too shallow for M's rows (the last slot's read would pass B's stages): the whole tile, still decode
    shallow = run_pipeline(Kernel(GemmProblem(65, 7168, 2048), forced=(("block_n", 16), ("stages", 3))), H200_SXM)
    assert shallow.config is not None and shallow.config.a_rows == shallow.config.block_m == 128
    assert "decode" in shallow.reasons[0][1]
    # up to M = 128 the problem is one 128-row tile streaming B (measured 42.7 us against the wave rule's 47.6 at
    # 128x7168x16384); from 129 rows the wave rule
    stream = run_pipeline(Kernel(GemmProblem(128, 7168, 16384)), H200_SXM)
    assert stream.config is not None and (stream.config.block_m, stream.config.block_n) == (128, 64)
    assert "decode" in stream.reasons[0][1]
    assert "decode" not in run_pipeline(Kernel(GemmProblem(129, 7168, 16384)), H200_SXM).reasons[0][1]
    # prefill keeps the wave rule, no split and whole A tiles
    big = run_pipeline(Kernel(GemmProblem(4096, 7168, 16384)), H200_SXM)
    assert big.config is not None and big.config.k_splits == 1 and big.config.a_rows == big.config.block_m


@pytest.mark.parametrize("m,n,tile", [(128, 2112, (64, 32, 16)), (104, 4096, (64, 64, 13)), (128, 4096, (64, 64, 13))])
def test_decode_k_split_of_128_rows_becomes_two_m_blocks(m: int, n: int, tile: tuple[int, int, int]) -> None:
    """A 128-row decode tile's 2 K splits run as 2 unsplit 64-row M blocks with a deeper ring: the same CTAs
    (against the 128-row tile with its A box ending inside M: x1.035-1.067 at M = 112..128, x0.98 / x1.02 at 104,
    x0.81 / x0.97 at 96); below M = 104 the 128-row tile, larger splits and a forced block_m or k_splits stay. At
    K = 4096: from 56 k-blocks _wide_splits' workspace splits take these shapes (test_wide_splits)."""
    kernel = passes.run_pipeline(Kernel(GemmProblem(m, n, 4096)), H200_SXM)
    c = kernel.config
    assert c is not None and (c.block_m, c.block_n, c.stages, c.k_splits) == (*tile, 1), kernel.name
    assert "2 M blocks of 64 rows" in kernel.reasons[0][1] and c.sa_gather == int(tile[1] == 32)
    for shape, forced, want in [((128, 7168, 16384), (), (128, 64, 1)), ((128, 576, 7168), (), (128, 32, 4)),
                                ((103, n, 4096), (), (128, tile[1], 2)),
                                ((m, n, 4096), (("k_splits", 2),), (128, tile[1], 2)),
                                ((m, n, 4096), (("block_m", 128),), (128, tile[1], 2))]:
        kept = passes.run_pipeline(Kernel(GemmProblem(*shape), forced=forced), H200_SXM)
        assert kept.config is not None and (kept.config.block_m, kept.config.block_n, kept.config.k_splits) == want
        assert "M blocks of 64" not in kept.reasons[0][1]
    bf16 = passes.run_pipeline(Kernel(GemmProblem(m, n, 4096, a_dtype=DType.BF16, b_dtype=DType.BF16,
                                                  scales=ScaleRecipe.NONE)), H200_SXM)
    assert bf16.config is not None and "M blocks of 64" not in bf16.reasons[0][1]  # measured: the block recipe only


@pytest.mark.parametrize("m,n,k,tile", [
    (65, 2112, 7168, (64, 4, 10)), (128, 2112, 7168, (64, 4, 7)), (112, 1536, 7168, (64, 4, 7)),
    (80, 4096, 7168, (64, 2, 9)), (128, 4096, 7168, (64, 2, 7)), (128, 4096, 16384, (64, 2, 7)),
    (96, 1024, 4096, (32, 4, 12)), (128, 1024, 4096, (32, 4, 9))])
def test_wide_splits(m: int, n: int, k: int, tile: tuple[int, int, int]) -> None:
    """M = 65..128 over >= 56 k-blocks (or 32 where it doubles the CTAs): 128-row tiles in workspace K splits, the
    most CTAs the grid holds, the wider tile on ties (x1.008-1.305 measured at 28 shapes), the ring the depth
    measured (room left for a cluster hand-over's partial tile; the workspace's deeper ring measured x0.972-1.013)."""
    kernel = passes.run_pipeline(Kernel(GemmProblem(m, n, k)), H200_SXM)
    c = kernel.config
    assert c is not None and (c.block_m, c.block_n, c.k_splits, c.stages, c.split_global) == (128, *tile, 1), \
        kernel.name
    assert "_wide_splits" in kernel.reasons[0][1] and c.swap_ab == 0


@pytest.mark.parametrize("m,n,k,tile", [
    (65, 256, 7168, (64, 32)), (128, 256, 7168, (64, 32)), (96, 256, 16384, (64, 32)), (128, 256, 4096, (64, 32)),
    (96, 384, 7168, (128, 32)), (128, 512, 7168, (128, 32)), (100, 448, 7168, (128, 32)), (65, 384, 16384, (128, 32)),
    (96, 512, 4096, (128, 32, 4))])  # 128-row tiles in 8 splits of 4 k-blocks: level (x0.990): the 4-split pick
def test_wide_splits_few_tiles(m: int, n: int, k: int, tile: tuple[int, ...]) -> None:
    """Where 2 or 4 splits of 128-row tiles leave over half the grid idle (N <= 512): 8 splits, of 64-row tiles in two
    M blocks where those fit the grid (N <= 256), else of 128-row tiles of >= 7 k-blocks a split (measured x1.008-1.593
    over the picks before)."""
    kernel = passes.run_pipeline(Kernel(GemmProblem(m, n, k)), H200_SXM)
    c = kernel.config
    few = len(tile) == 2
    splits = 8 if few else tile[2]
    assert c is not None and (c.block_m, c.block_n, c.k_splits, c.split_global) == (*tile[:2], splits, 1), kernel.name
    assert "_wide_splits" in kernel.reasons[0][1] and ("few weight tiles" in kernel.reasons[0][1]) == few
    if not few:
        return
    # a pinned block_m keeps the few-tile choices of that height only (and its reason's numbers)
    for bm in (64, 128):
        pinned = passes.run_pipeline(Kernel(GemmProblem(m, n, k), forced=(("block_m", bm), ("a_rows", bm))),
                                     H200_SXM)
        pc = pinned.config
        assert pc is not None and pc.block_m == bm
        if pc.k_splits == 8:
            assert f" {bm}x32 tiles in 8 K splits" in pinned.reasons[0][1], pinned.reasons[0][1]
            assert 64 <= -(-m // bm) * -(-n // 32) * 8 <= H200_SXM.num_sms
    ctas = -(-m // c.block_m) * -(-n // c.block_n) * c.k_splits
    assert 64 <= ctas <= H200_SXM.num_sms


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


@pytest.mark.parametrize("m,n,k,rows", [(1, 24576, 1536, 8), (8, 32768, 512, 8), (16, 24576, 1536, 16),
                                         (17, 24576, 1536, 64), (32, 32768, 512, 64)])
def test_prefill_rule_small_m_loads_m_rows(m: int, n: int, k: int, rows: int) -> None:
    """N too wide for the decode rule: the wave rule's 64-row tile still loads only M's rows of A up to M = 16
    (measured x1.016-1.037 at M = 1 and 8, neutral at 32), and deeper rings fill the freed shared memory. (M <= 16
    swaps A and B unpinned: test_decode_swaps_a_and_b_over_many_weight_tiles.)"""
    kernel = passes.run_pipeline(Kernel(GemmProblem(m, n, k), forced=UNSWAPPED), H200_SXM)
    assert kernel.config is not None and "decode" not in kernel.reasons[0][1]
    assert kernel.config.block_m == 64 and kernel.config.a_rows == rows, kernel.name
    whole = passes.run_pipeline(Kernel(GemmProblem(64, n, k)), H200_SXM)
    assert whole.config is not None and whole.config.a_rows == 64
    if rows < 64:  # (K = 512 at M <= 32 rings one tile instead: test_short_k_at_small_m_rings_one_tile...)
        assert f"_ar{rows}" in kernel.name
        assert kernel.config.stages >= whole.config.stages or k <= 512
    tensor = passes.run_pipeline(Kernel(GemmProblem(m, n, k, scales=ScaleRecipe.TENSOR)), H200_SXM)
    assert tensor.config is not None and tensor.config.a_rows == tensor.config.block_m  # measured: the block recipe


@pytest.mark.parametrize("m,n,k,stages,trimmed", [
    (1, 7168, 16384, 10, True), (32, 7168, 16384, 10, True), (64, 7168, 16384, 10, True), (1, 4096, 7168, 9, True),
    (32, 7168, 2048, 8, True),
    # not measured trimmed: 64x32 tiles (also at K = 2048), 4-way splits, 128-row tiles; two M blocks over one B
    (32, 4096, 7168, 16, False), (1, 2112, 7168, 16, False), (32, 4096, 2048, 16, False), (1, 1536, 7168, 16, False),
    (96, 7168, 2048, 10, False), (128, 4096, 4096, 13, False), (128, 7168, 16384, 8, False)])
def test_stream_ring_trimmed_to_the_b_in_flight(m: int, n: int, k: int, stages: int, trimmed: bool) -> None:
    """A stream tile's ring holds ~9 MiB of B over the grid, not the deepest that fits (64x64 on 112 CTAs at K = 16384:
    10 stages, measured x1.006-1.040 against 16 / 13), ~7 MiB over a split of <= 16 k-blocks (K = 2048: 8 stages);
    only the tiles measured (64 rows, 64-128 columns, <= 2 K splits): 64x32 tiles (4 KB of B a stage) keep 16; two M
    blocks over one B count it once (128x4096x7168 kept 13: trimmed to 9 it measured x0.958; now K = 4096's)."""
    kernel = passes.run_pipeline(Kernel(GemmProblem(m, n, k), forced=UNSWAPPED), H200_SXM)
    c = kernel.config
    assert c is not None and c.stages == stages, kernel.name
    assert ("ring trimmed" in kernel.reasons[0][1]) == trimmed, kernel.reasons[0][1]
    # pinned stages stay; the tensor recipe's tile is trimmed alike (measured x1.006-1.015); the 1x128/1x128 recipe
    # (slots held through the promotion) and fp32 D tiles were not measured and keep the deepest ring
    pinned = passes.run_pipeline(Kernel(GemmProblem(m, n, k), forced=(("stages", 16),)), H200_SXM)
    assert pinned.config is not None and "ring trimmed" not in pinned.reasons[0][1]
    tensor = passes.run_pipeline(Kernel(GemmProblem(m, n, k, scales=ScaleRecipe.TENSOR)), H200_SXM)
    assert tensor.config is not None and ("ring trimmed" in tensor.reasons[0][1]) == trimmed
    for scales in (ScaleRecipe.A1x128_B1x128, ScaleRecipe.A1x128_B128x128):
        fp32 = passes.run_pipeline(Kernel(GemmProblem(m, n, k, scales=scales, out_dtype=DType.FP32)), H200_SXM)
        assert fp32.config is not None and "ring trimmed" not in fp32.reasons[0][1]


@pytest.mark.parametrize("m,n,k,forced,tile", [
    # bf16 (64 columns of K = one 128-byte row): 64x128 in 2 K splits on 112 CTAs over 16 k-blocks per split: the
    # 7 MiB aim asks for 4 stages, the floor (STREAM_MIN_DEPTH) keeps 8 (measured x1.008 at M = 1)
    (8, 7168, 2048, (), (64, 128, 2, 8)),
    (32, 7168, 16384, (), (64, 64, 1, 10)),  # bf16, 256 k-blocks: the 9 MiB aim (x1.014)
    # a grid capped at 64 CTAs: 56 N tiles of 128 read B at once: 56 x 16 KB x 10 stages ~ 9 MiB
    (1, 7168, 16384, (("num_sms", 64), ("swap_ab", 0)), (64, 128, 1, 10)),
])
def test_stream_ring_trim_counts_bytes_and_capped_grids(m: int, n: int, k: int, forced: tuple,
                                                        tile: tuple[int, int, int, int]) -> None:
    from gemmgen.passes.select_config import STREAM_MIN_DEPTH

    bf16 = not forced
    problem = GemmProblem(m, n, k, a_dtype=DType.BF16, b_dtype=DType.BF16, scales=ScaleRecipe.NONE) if bf16 \
        else GemmProblem(m, n, k)
    kernel = passes.run_pipeline(Kernel(problem, forced=forced), H200_SXM)
    c = kernel.config
    assert c is not None and (c.block_m, c.block_n, c.k_splits, c.stages) == tile, kernel.name
    assert "ring trimmed" in kernel.reasons[0][1]
    if tile == (64, 128, 2, 8):
        assert c.stages == STREAM_MIN_DEPTH and "= 14.0 MiB of B in flight" in kernel.reasons[0][1]


@pytest.mark.parametrize("m,tile", [(1, (64, 2)), (8, (64, 2)), (32, (32, 1)), (64, (32, 1))])
def test_decode_rule_at_4096x7168(m: int, tile: tuple[int, int]) -> None:
    """The refitted decode model (BW 3.0 TB/s): 32 and 64 rows take 64x32 unsplit (measured 14.27 / 14.37 us against
    15.20 / 15.46 for 64x64 split in 2, bench/results/2026-11-30-decode-4096x7168); 1 and 8 rows keep 64x64 split in
    2 (M = 1 measured 14.79 against 15.96 unsplit 64x32)."""
    from gemmgen.ir import H200_SXM, GemmProblem, Kernel
    from gemmgen.passes import run_pipeline

    cfg = run_pipeline(Kernel(GemmProblem(m, 4096, 7168), forced=UNSWAPPED), H200_SXM).config
    assert cfg is not None and (cfg.block_n, cfg.k_splits) == tile


@pytest.mark.parametrize("m,n,k,block_m,stages", [
    # the ring: ~9 MiB of weights over the reading CTAs (7 MiB at <= 16 k-blocks), 8..16 stages
    (1, 24576, 1536, 64, 8), (8, 4352, 7168, 64, 16), (8, 32768, 512, 64, 8), (1, 7168, 16384, 64, 10),
    (16, 7168, 2048, 64, 8), (9, 24576, 1536, 64, 8),
    # 17..32 rows (32 token columns): only over several filled rounds, K >= 12 k-blocks (_swap_pays_wide)
    (17, 24576, 1536, 64, 8), (32, 24576, 1536, 64, 8), (24, 16384, 7168, 64, 9), (32, 32768, 2048, 64, 8),
    (32, 4096, 7168, 0, 0), (32, 7168, 16384, 0, 0), (32, 18432, 1536, 0, 0), (32, 32768, 512, 0, 0),
    (32, 36864, 1536, 0, 0),  # fill 0.87 of 5 rounds: mixed (x1.039 at K = 1536, x0.982 at 7168)
    (33, 24576, 1536, 0, 0), (64, 24576, 1536, 0, 0),
    # more than one round of 132 CTAs: the last round's fill (64 rows: 0.61 / 0.73 lost, 0.87 won); where 64 rows
    # fill unevenly, 128 rows in one round (10240 / 12288 wide won), else unswapped (18432: 0.55 of two rounds)
    (8, 10240, 7168, 128, 8), (16, 10240, 7168, 128, 8), (1, 12288, 7168, 128, 8), (8, 18432, 7168, 0, 0),
    (8, 36864, 1536, 64, 8)])
def test_decode_swaps_a_and_b_over_many_weight_tiles(m: int, n: int, k: int, block_m: int, stages: int) -> None:
    """select_config._swap_pays: M <= 16 tokens over >= 64 tiles of 64 weight rows, else of 128 (one round of CTAs,
    or rounds >= 85% filled), run swapped (M's 8 or 16 token columns, one K split, the stream budget's ring;
    `stages` 0: not swapped); 17..32 tokens (32 columns) over more than one such round of 64-row tiles; a pinned tile
    field, another recipe or dtype keeps the unswapped kernel."""
    from gemmgen.passes.select_config import SWAP_MIN_TILES

    swapped = stages > 0
    kernel = passes.run_pipeline(Kernel(GemmProblem(m, n, k)), H200_SXM)
    c = kernel.config
    assert c is not None and c.swap_ab == int(swapped) and kernel.name is not None
    assert ("_swab" in kernel.name) == swapped and ("_swap_pays" in kernel.reasons[0][1]) == swapped
    if not swapped:
        return
    columns = 8 if m <= 8 else 16 if m <= 16 else 32
    assert (c.block_m, c.block_n, c.k_splits, c.cluster, c.stages) == (block_m, columns, 1, 1, stages)
    assert -(-n // block_m) >= SWAP_MIN_TILES
    pinned = passes.run_pipeline(Kernel(GemmProblem(m, n, k), forced=(("swap_ab", 1),)), H200_SXM)
    assert pinned.config == c  # swap_ab=1 pinned: the same kernel
    # a GemmConfig object carries cluster=1 and k_splits=1: the values the swapped kernel takes, so it still swaps
    from gemmgen.stages import forced_fields

    obj = passes.run_pipeline(Kernel(GemmProblem(m, n, k), forced=forced_fields(GemmConfig(pdl=1))), H200_SXM)
    assert obj.config is not None and obj.config.swap_ab == 1 and obj.config.pdl == 1
    pdl = passes.run_pipeline(Kernel(GemmProblem(m, n, k), forced=(("pdl", 1),)), H200_SXM)
    assert pdl.config is not None and pdl.config.swap_ab == 1 and pdl.config.pdl == 1  # launch attributes are not
    for forced in ((("block_n", 64),), (("stages", 8),), (("k_splits", 2),), (("swap_ab", 0),)):  # tile fields are
        kept = passes.run_pipeline(Kernel(GemmProblem(m, n, k), forced=forced), H200_SXM)
        assert kept.config is not None and kept.config.swap_ab == 0, forced
    for other in (GemmProblem(m, n, k, scales=ScaleRecipe.TENSOR), GemmProblem(m, n, k, out_dtype=DType.FP32),
                  GemmProblem(m, n, k, a_dtype=DType.E5M2)):
        kept = passes.run_pipeline(Kernel(other), H200_SXM)
        assert kept.config is not None and kept.config.swap_ab == 0 and not check(other, kept.config, H200_SXM)


@pytest.mark.parametrize("m,n,k,splits", [
    (8, 2112, 7168, 4), (1, 576, 7168, 8), (16, 1536, 7168, 4), (8, 4032, 1792, 2),  # 132 / 72 / 96 / 126 CTAs
    (8, 256, 7168, 0),  # 4 tiles x 8 splits: 32 CTAs, fewer than SWAP_FEW_MIN_CTAS
    (8, 4032, 1536, 0),  # 12 k-blocks: 2 splits of 6 are shorter than SWAP_FEW_MIN_KB_PER_SPLIT
    (17, 2112, 7168, 0),  # 32 token columns: not swapped
])
def test_decode_swaps_few_weight_tiles_with_k_splits_in_the_workspace(m: int, n: int, k: int, splits: int) -> None:
    """select_config._few_tile_splits: under 64 weight tiles, swapped where the most K splits (<= 8, >= 7 k-blocks
    each) whose CTAs fit the grid give >= 64 CTAs; the splits meet in the global workspace (`splits` 0: unswapped)."""
    kernel = passes.run_pipeline(Kernel(GemmProblem(m, n, k)), H200_SXM)
    c = kernel.config
    assert c is not None and c.swap_ab == int(splits > 0), kernel.name
    if splits:
        assert (c.block_m, c.k_splits, c.split_global) == (64, splits, 1), kernel.name
        assert "_few_tile_splits" in kernel.reasons[0][1] and "_ks" in (kernel.name or "")


@pytest.mark.parametrize("forced", [(("k_splits", 1),), (("split_global", 0),)])
def test_few_tile_swap_needs_its_splits_in_the_workspace(forced: tuple) -> None:
    """A pinned k_splits=1 or split_global=0 keeps few-tile problems unswapped (one split over 33 tiles, or 4-8
    cluster ranks, both measured slower)."""
    for m, n, k in ((8, 2112, 7168), (1, 576, 7168)):
        c = passes.run_pipeline(Kernel(GemmProblem(m, n, k), forced=forced), H200_SXM).config
        assert c is not None and c.swap_ab == 0, (m, n, k, forced)


def test_swap_wide_only_the_measured_kind() -> None:
    """_swap_pays_wide (17..32 rows) was measured for e4m3 with the block recipe into bf16 only: other kinds at the same
    shape are not offered the swap, whatever the legality rules would allow."""
    from gemmgen.passes.select_config import _swap_pays_wide

    draft = GemmConfig.draft()
    assert _swap_pays_wide(GemmProblem(32, 24576, 1536), draft, H200_SXM)
    for kw in ({"scales": ScaleRecipe.CHANNEL}, {"scales": ScaleRecipe.TENSOR}, {"out_dtype": DType.FP32},
               {"a_dtype": DType.E5M2, "b_dtype": DType.E5M2},
               {"a_dtype": DType.BF16, "b_dtype": DType.BF16, "scales": ScaleRecipe.NONE}):
        assert not _swap_pays_wide(GemmProblem(32, 24576, 1536, **kw), draft, H200_SXM), kw


def test_decode_swap_edges() -> None:
    """_swap_pays at its edges: 4 weight tiles (N = 256: 32 CTAs in 8 splits) stay unswapped, 8 swap (64 CTAs);
    fewer than 4 k-blocks (the shortest
    K timed) stay unswapped; the rounds' fill counts a pinned grid (288 tiles: 0.73 of 3 rounds of 132 CTAs, but 3
    whole rounds of 96); over one round M = 16 swaps and 17 does not, over several filled ones M = 32 and 33 not."""
    def swapped(m: int, n: int, k: int, forced: tuple = ()) -> bool:
        cfg = passes.run_pipeline(Kernel(GemmProblem(m, n, k), forced=forced), H200_SXM).config
        assert cfg is not None
        return cfg.swap_ab == 1

    assert not swapped(8, 256, 7168) and swapped(8, 512, 7168) and swapped(8, 4096, 7168)
    assert not swapped(8, 24576, 384) and swapped(8, 24576, 512)
    assert not swapped(8, 18432, 7168) and swapped(8, 18432, 7168, (("num_sms", 96),))
    assert swapped(16, 4096, 7168) and not swapped(17, 4096, 7168)  # one round: swapped to M = 16 only
    assert swapped(32, 24576, 1536) and not swapped(33, 24576, 1536)  # several filled rounds: to M = 32
    assert swapped(32, 24576, 1536 + 128) and not swapped(32, 24576, 1536 - 128)  # 12 k-blocks, not 11
    assert not swapped(8, 24576, 1536, (("cluster", 2),)) and not swapped(8, 24576, 1536, (("sa_gather", 1),))


@pytest.mark.parametrize("m,n,k,forced,splits", [
    (8, 4096, 7168, (), 2), (1, 4224, 7168, (), 2),  # 64 / 66 tiles x 2 fill <= 132 CTAs, 56 k-blocks
    (8, 4352, 7168, (), 1),  # 68 tiles: 136 CTAs would not fit one round
    (8, 4096, 4096, (), 1),  # 32 k-blocks: not measured
    (8, 4096, 7168, (("swap_ab", 1), ("stages", 16)), 1), (8, 4096, 7168, (("k_splits", 1),), 1),  # pinned: stays
    (8, 4096, 7168, (("swap_ab", 1),), 2),
])
def test_swapped_few_tiles_split_k(m: int, n: int, k: int, forced: tuple, splits: int) -> None:
    """select_config._swap_splits: swapped tiles filling at most half the grid over >= 56 k-blocks split K in 2."""
    c = passes.run_pipeline(Kernel(GemmProblem(m, n, k), forced=forced), H200_SXM).config
    assert c is not None and c.swap_ab == 1 and c.k_splits == splits and c.block_m == 64


@pytest.mark.parametrize("m,forced,block_m", [
    (8, (), 128), (8, (("swap_ab", 1),), 128),  # the rule's height, pinned or not
    # fields sized for one math warpgroup, or a K split, keep 64 rows (found in review: these failed to build)
    (8, (("swap_ab", 1), ("stages", 16)), 64), (8, (("swap_ab", 1), ("a_rows", 64)), 64),
    (8, (("swap_ab", 1), ("math_regs", 248)), 64), (8, (("swap_ab", 1), ("k_splits", 2)), 64),
    (24, (("swap_ab", 1),), 64),  # 32 token columns: 128 rows not measured there
    (1, (("math_regs", 248),), 0),  # not swapped unasked: 64-row tiles do not fill their rounds at 10240
])
def test_swap_height_respects_pinned_fields(m: int, forced: tuple, block_m: int) -> None:
    """select_config._swap_height: 128 weight rows only where nothing pinned was sized for 64 (10240 wide: 80 tiles
    of 128 fill one round, 160 of 64 fill 0.61 of two); every such request builds (legal config)."""
    kernel = passes.run_pipeline(Kernel(GemmProblem(m, 10240, 7168), forced=forced), H200_SXM)
    c = kernel.config
    assert c is not None and c.swap_ab == int(block_m > 0)
    if block_m:
        assert c.block_m == block_m


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


@pytest.mark.parametrize("m,n,k", WGRAD_TARGETS, ids=[f"{m}x{n}x{k}" for m, n, k in WGRAD_TARGETS])
def test_select_config_wgrad_targets(m: int, n: int, k: int) -> None:
    """1x128/1x128: 128-row tiles with >= 4 stages (a slot is held through its promotion), multicast where the N
    blocks pair up (M >= 1024), one accumulator set (the column promotion's registers), the reason recorded."""
    problem = GemmProblem(m, n, k, out_dtype=DType.FP32, accumulate=True, scales=ScaleRecipe.A1x128_B1x128)
    kernel = passes.run_pipeline(Kernel(problem), H200_SXM)
    c = kernel.config
    assert c is not None and c.block_n is not None and c.stages is not None
    assert c.block_m == 128 and c.stages >= select_config.COLUMN_MIN_STAGES and c.k_splits == 1
    pairs = problem.n_blocks(c.block_n) % 2 == 0 and m >= select_config.MULTICAST_MIN_M
    assert c.cluster == (2 if pairs else 1)
    assert c.acc_sets == 1 and not check(problem, c, H200_SXM)
    assert any(who == "select_config" and "1x128/1x128" in why for who, why in kernel.reasons)


def test_narrow_n_takes_the_least_padded_tile() -> None:
    """N = 16 at M = 4096: every block_n >= 16 gives 64 tiles; the widest (64x192) did 12x the wgmma work."""
    from gemmgen.ir import H200_SXM, GemmProblem, Kernel
    from gemmgen.passes import run_pipeline

    kernel = run_pipeline(Kernel(GemmProblem(4096, 16, 7168)), H200_SXM)
    assert kernel.config is not None and kernel.config.block_n == 16
    wide = run_pipeline(Kernel(GemmProblem(4096, 7168, 16384)), H200_SXM)  # unpadded ties keep the widest
    assert wide.config is not None and (wide.config.block_m, wide.config.block_n) == (256, 128)


@pytest.mark.parametrize("m", [1, 8, 16, 32])
def test_short_k_at_small_m_rings_one_tile_on_the_fewest_ctas(m: int) -> None:
    """N x K = 32768 x 512 at M <= 32 (256 tiles of 64x128: two rounds of 132 SMs): a ring of the 4 k-blocks of one
    tile on 128 CTAs, the fewest that keep the two rounds (select_config._short_k, as DeepGEMM runs it). Not a K of
    2048, not with stages or the grid pinned, not one round."""
    c = _selected(m, 32768, 512, UNSWAPPED)
    assert (c.block_m, c.block_n, c.stages, c.num_sms, c.cluster) == (64, 128, 4, 128, 1)
    assert _selected(m, 32768, 2048, UNSWAPPED).num_sms == 132
    assert _selected(m, 16384, 512, UNSWAPPED).num_sms == 132  # 128 tiles: one round
    pinned = _selected(m, 32768, 512, (("stages", 6),))
    assert pinned.stages == 6 and pinned.num_sms == 132
    assert _selected(m, 32768, 512, (("num_sms", 130), *UNSWAPPED)).stages == 8
    assert _selected(m, 32768, 256).num_sms == 132  # 2 k-blocks: not measured
    wide = _selected(m, 32768, 512, (("block_m", 128),))  # 128x128: measured at 65..128 rows only (below)
    assert (wide.block_n, wide.num_sms) == (128, 132)
    e5m2 = select_config.run(_draft(GemmProblem(m, 32768, 512, a_dtype=DType.E5M2)), H200_SXM).config
    assert e5m2 is not None and e5m2.num_sms == 132


@pytest.mark.parametrize(("m", "block_m"), [(33, 64), (48, 64), (64, 64), (65, 128), (96, 128), (128, 128)])
def test_short_k_above_32_rows_on_the_measured_tiles(m: int, block_m: int) -> None:
    """Above 32 rows the ring of one tile's k-blocks is taken on the tiles the wave rule picks at 32768 x 512, over
    the rows each was measured at: 64x128 at 33..64, 128x128 at 65..128. Pinned outside those rows: not taken."""
    c = _selected(m, 32768, 512)
    assert (c.block_m, c.block_n, c.stages, c.num_sms) == (block_m, 128, 4, 128)
    other = 128 if block_m == 64 else 64  # the other measured tile, pinned at rows it was not measured over
    pinned = _selected(m, 32768, 512, (("block_m", other), ("block_n", 128)))
    assert (pinned.block_m, pinned.num_sms) == (other, 132)
    assert _selected(256, 32768, 512, (("block_m", 128), ("block_n", 128))).num_sms == 132  # above 128 rows


def test_dense_256_row_tiles_over_short_k_run_unpaired() -> None:
    """Dense 256x128 block-recipe e4m3-into-bf16 tiles over K = 385..2048 at M >= 2048 take no A-multicast pair
    (measured faster unpaired, select_config.UNPAIRED_*); outside what was measured the pair stays."""
    for m, n, k in [(4096, 32768, 512), (2048, 32768, 512), (4096, 7168, 2048), (4096, 24576, 1536)]:
        c = _selected(m, n, k)
        assert (c.block_m, c.block_n, c.cluster) == (256, 128, 1), (m, n, k)
    for m, n, k in [(4096, 7168, 2176), (4096, 7168, 16384), (8192, 8192, 8192), (4096, 4096, 7168),
                    (1024, 7168, 2048), (4096, 7168, 256)]:  # a longer K, fewer rows, a shorter K
        c = _selected(m, n, k)
        assert (c.block_m, c.block_n, c.cluster) == (256, 128, 2), (m, n, k)
    assert _selected(4096, 7168, 2048, (("block_m", 128), ("block_n", 128))).cluster == 2  # 128x128 keeps the pair
    assert _selected(4096, 7168, 2048, (("block_n", 64),)).cluster == 2  # 256x64: not measured
    assert _selected(4096, 7168, 2048, (("cluster", 2),)).cluster == 2  # a pinned pair stays
    for kw in ({"a_dtype": DType.E5M2}, {"out_dtype": DType.FP32}, {"accumulate": True, "out_dtype": DType.FP32}):
        forced = (("block_m", 256), ("block_n", 128))
        c = select_config.run(_draft(GemmProblem(4096, 7168, 2048, **kw), forced), H200_SXM).config
        assert c is not None and c.cluster == 2, kw


def _cluster_reason(m: int, n: int, k: int, forced: tuple[tuple[str, int], ...] = ()) -> str:
    kernel = select_config.run(_draft(GemmProblem(m, n, k), forced), H200_SXM)
    return next(text for name, text in kernel.reasons if name == "select_config")


def test_cluster_reason_names_the_rule_that_decided() -> None:
    assert "unpaired: dense 256x128 tiles over K <= 2048" in _cluster_reason(4096, 7168, 2048)
    assert "unpaired" not in _cluster_reason(4096, 4224, 2048)  # 33 N blocks cannot pair anyway
    assert _cluster_reason(4096, 7168, 2048, (("cluster", 1),)).endswith("cluster 1 (pinned)")
    assert _cluster_reason(512, 7168, 2048, (("cluster", 2),)).endswith("cluster 2 (pinned)")
    assert "A multicast: M >= 1024" in _cluster_reason(4096, 7168, 16384)


@pytest.mark.parametrize("m,n,k", [(384, 4096, 7168), (768, 2112, 7168), (512, 3072, 1536), (640, 2112, 7168),
                                   (577, 2112, 7168), (321, 4096, 7168)])
def test_two_warpgroups_for_a_one_set_64x192_tile(m: int, n: int, k: int) -> None:
    """The wave rule's 64x192 (one math warpgroup, one accumulator set) becomes 128x96 (two warpgroups, two sets, the
    same area) where the waves are the same and the last wave nearly as full (measured x1.044-1.053)."""
    kernel = passes.run_pipeline(Kernel(GemmProblem(m, n, k)), H200_SXM)
    c = kernel.config
    assert c is not None and (c.block_m, c.block_n, c.acc_sets, c.cluster) == (128, 96, 2, 1), kernel.name
    assert "two math warpgroups" in kernel.reasons[0][1]
    # the wave rule's own pick when anything it decides is pinned
    for forced in ((("block_n", 192),), (("acc_sets", 1),), (("num_sms", 132),), (("block_m", 64),),
                   (("wave_n", 192),), (("cluster", 1),), (("stages", 6),)):
        pinned = passes.run_pipeline(Kernel(GemmProblem(m, n, k), forced=forced), H200_SXM).config
        assert pinned is not None and (pinned.block_m, pinned.block_n) == (64, 192), forced


def test_two_warpgroups_not_taken_outside_what_was_measured() -> None:
    """Kept: an A-multicast pair (1024x1536x7168 measured x0.988), fewer waves for 64x192 (192x7168x2048: 114 tiles
    against 150), 64x160 (its 128x80 measured x0.964-1.049), other recipes and kinds."""
    assert (_selected(1024, 1536, 7168).block_m, _selected(1024, 1536, 7168).cluster) == (64, 2)
    assert (_selected(192, 7168, 2048).block_m, _selected(192, 7168, 2048).block_n) == (64, 192)
    assert (_selected(768, 1536, 7168).block_m, _selected(768, 1536, 7168).block_n) == (64, 160)
    for kw in ({"scales": ScaleRecipe.TENSOR}, {"out_dtype": DType.FP32}, {"a_dtype": DType.E5M2}):
        c = select_config.run(_draft(GemmProblem(384, 4096, 7168, **kw)), H200_SXM).config
        assert c is not None and (c.block_m, c.block_n) != (128, 96), kw
    # The rule itself, on the wave rule's 64x192 at 1024x1352x7168 (128 tiles; 128x96: 120, unpaired): a last wave
    # 94% as full is not taken; a pair, a K split or another tile never is.
    problem = GemmProblem(1024, 1352, 7168)
    draft = GemmConfig.draft()
    pick = GemmConfig(64, 192, 6, cluster=1, block_k=128, k_splits=1, num_sms=132)
    assert select_config._two_warpgroups(problem, draft, H200_SXM, pick) is None
    threshold = select_config.TWO_WG_MIN_LAST_WAVE
    try:
        select_config.TWO_WG_MIN_LAST_WAVE = 0.9
        two = select_config._two_warpgroups(problem, draft, H200_SXM, pick)
        assert two is not None and (two.block_m, two.block_n, two.cluster) == (128, 96, 1)
        for other in (pick.replace(cluster=2), pick.replace(k_splits=2), pick.replace(block_n=160)):
            assert select_config._two_warpgroups(problem, draft, H200_SXM, other) is None, other
    finally:
        select_config.TWO_WG_MIN_LAST_WAVE = threshold


def test_balanced_grid_reason_says_whether_it_applies_to_this_m() -> None:
    """The kernel is shared by every M; its reason says where the balanced grid does not change this M's launch."""
    def plan_reason(m: int, n: int, k: int) -> str:
        kernel = passes.run_pipeline(Kernel(GemmProblem(m, n, k), forced=UNSWAPPED), H200_SXM)
        return next(why for who, why in kernel.reasons if who == "plan_kernel")

    assert "grid balanced at launch" in plan_reason(4096, 7168, 16384)
    assert "not at M = " not in plan_reason(4096, 7168, 16384)
    assert "; not at M = 8" in plan_reason(8, 2112, 7168)


@pytest.mark.parametrize("m,n,k,hint", [
    (1, 7168, 16384, 1), (128, 2112, 7168, 1),  # decode: every tile
    (256, 4096, 7168, 1), (160, 4096, 7168, 1), (512, 7168, 2048, 1), (256, 24576, 1536, 1),  # >= 96 wide, <= 512 rows
    (256, 2112, 7168, 0), (512, 2112, 7168, 0),  # 64-wide tiles: measured x0.915 / x0.965
    (768, 4096, 7168, 0), (2048, 7168, 2048, 0), (4096, 7168, 2048, 0)])  # from 768 rows: mixed, then lost
def test_weights_evict_first_where_measured(m: int, n: int, k: int, hint: int) -> None:
    """select_l2_hint: the weights' TMA loads carry evict_first up to 128 rows, and up to 512 on tiles >= 96 wide."""
    kernel = passes.run_pipeline(Kernel(GemmProblem(m, n, k)), H200_SXM)
    assert kernel.config is not None and kernel.config.evict_first == hint, kernel.name
    assert ("_ef" in kernel.name.split("_")[-3:] or kernel.name.endswith("_ef")) == bool(hint), kernel.name
    if m > 128:  # 129..512 rows: measured on e4m3 with the block recipe into bf16 only
        bf16 = passes.run_pipeline(Kernel(GemmProblem(m, n, k, a_dtype=DType.BF16, b_dtype=DType.BF16,
                                                      scales=ScaleRecipe.NONE)), H200_SXM)
        assert bf16.config is not None and bf16.config.evict_first == 0
    grouped = passes.run_pipeline(Kernel(GemmProblem(m, n, k, kind=GemmKind.M_GROUPED_MASKED, groups=2)), H200_SXM)
    assert grouped.config is not None and grouped.config.evict_first == 0  # grouped kinds: not measured faster
