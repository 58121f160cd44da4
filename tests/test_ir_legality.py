"""IR validation (__post_init__, parse_overrides) and every rule of legality.check, one isolating test each."""

from __future__ import annotations

import dataclasses

import pytest

from gemmgen.ir import (
    H200_SXM,
    LEGAL_N,
    DType,
    GemmConfig,
    GemmKind,
    GemmProblem,
    ScaleRecipe,
    Target,
    WgmmaShape,
    parse_overrides,
)
from gemmgen.legality import SMEM_ALIGN, b_scale_blocks_spanned, check, smem_bytes, smem_layout

# A target with effectively unlimited shared memory, to isolate rules that large configs also trip on smem.
BIG_SMEM = dataclasses.replace(H200_SXM, name="big-smem", smem_per_block=10**8)
PROBLEM = GemmProblem(4096, 7168, 7168)  # 7168 / 128 = 56 N blocks: even, so cluster=2 is legal
GOOD = GemmConfig(256, 128, 3, cluster=2, swizzle_ab=128, swizzle_d=128, producer_regs=40, math_regs=232,
                  acc_sets=1, raster_group=8, num_sms=132, wave_n=128, a_rows=256, sa_gather=0, pdl=0, swap_ab=0,
                  evict_first=0, split_global=0, epilogue_per_wg=0, balanced=0, cross_tile=0, a_shift=0, pingpong=0,
                  multicast_b=0)


# ---------------------------------------------------------------- IR __post_init__

@pytest.mark.parametrize("m,n,k,field", [
    (-1, 128, 128, "GemmProblem.m"),
    (1, 0, 128, "GemmProblem.n"),
    (1, 12, 128, "GemmProblem.n"),  # N % 8
    (1, 128, 0, "GemmProblem.k"),
    (1, 128, 24, "GemmProblem.k"),  # K % 16
])
def test_problem_rejects_bad_dims(m: int, n: int, k: int, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        GemmProblem(m, n, k)


def test_problem_accepts_edge_dims() -> None:
    p = GemmProblem(0, 8, 16)
    assert (p.m, p.n, p.k) == (0, 8, 16)
    assert GemmProblem(7, 24, 1296).k_blocks == 11  # ceil(1296 / 128)
    assert GemmProblem(7, 136, 16).n_scale_blocks == 2


@pytest.mark.parametrize("field", ["block_m", "block_n", "stages", "cluster", "block_k"])
@pytest.mark.parametrize("bad", [0, -64])
def test_config_rejects_non_positive(field: str, bad: int) -> None:
    kwargs = {"block_m": 128, "block_n": 128, "stages": 4, field: bad}
    with pytest.raises(ValueError, match=f"GemmConfig.{field}"):
        GemmConfig(**kwargs)


def test_config_derived_counts() -> None:
    assert (GemmConfig(64, 128, 4).math_warpgroups, GemmConfig(64, 128, 4).num_threads) == (1, 256)
    c = GemmConfig(256, 128, 4)
    assert (c.math_warpgroups, c.rows_per_math_wg, c.waves, c.num_threads) == (2, 128, 2, 384)
    assert not c.is_complete and GOOD.is_complete


def test_target_validation() -> None:
    with pytest.raises(ValueError, match="Target.arch"):
        dataclasses.replace(H200_SXM, arch="sm_80")
    with pytest.raises(ValueError, match="Target.num_sms"):
        dataclasses.replace(H200_SXM, num_sms=0)
    with pytest.raises(ValueError, match="Target.smem_per_block"):
        Target("x", "sm_90a", 132, -1, 65536, 255, 8)


@pytest.mark.parametrize("n", [0, 4, 12, 260, 264])
def test_wgmma_rejects_illegal_n(n: int) -> None:
    with pytest.raises(ValueError, match="WgmmaShape.n"):
        WgmmaShape(n)


def test_wgmma_table() -> None:
    assert LEGAL_N == tuple(range(8, 257, 8)) and len(LEGAL_N) == 32
    for n in LEGAL_N:
        assert WgmmaShape(n).accum_regs == n // 2  # 64 x N fp32 over 128 threads
    s = WgmmaShape(136)
    assert s.mnemonic == "wgmma.mma_async.sync.aligned.m64n136k32.f32.e4m3.e4m3"
    assert s.sass_opcode == "QGMMA.64x136x32.F32.E4M3.E4M3"
    regs, outs = WgmmaShape(16).asm_operands()
    assert regs == "%0, %1, %2, %3, %4, %5, %6, %7" and outs.count('"+f"') == 8


# ---------------------------------------------------------------- parse_overrides

def test_parse_overrides_ok() -> None:
    assert parse_overrides(["block-n=64", " stages = 5", "cluster=2"]) == {"block_n": 64, "stages": 5, "cluster": 2}
    assert parse_overrides([]) == {}


@pytest.mark.parametrize("pair,needle", [
    ("block_x=64", "unknown field 'block_x'"),
    ("stages", "expected key=value"),
    ("stages=four", "expected an integer value, got 'four'"),
    ("stages=4.5", "expected an integer value"),
])
def test_parse_overrides_errors(pair: str, needle: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_overrides(["block_n=64", pair])
    assert needle in str(info.value) and repr(pair) in str(info.value)


# ---------------------------------------------------------------- legality.check: one rule at a time

def test_known_good_config_is_legal() -> None:
    assert check(PROBLEM, GOOD, H200_SXM) == []
    assert check(GemmProblem(64, 2112, 7168), GemmConfig(64, 16, 8), H200_SXM) == []


# (problem, config, target, the one expected message's distinctive text)
ISOLATED = {
    "block_k": (PROBLEM, GOOD.replace(block_k=64, swizzle_ab=None), H200_SXM, "block_k=64"),
    "block_m": (PROBLEM, GemmConfig(192, 128, 3), H200_SXM, "block_m=192"),
    "block_n_not_wgmma": (PROBLEM, GemmConfig(128, 12, 3), H200_SXM, "block_n=12"),
    "block_n_spans_3_scale_blocks": (GemmProblem(128, 1600, 512), GemmConfig(64, 200, 3), H200_SXM,
                                     "block_n=200: a tile may span 3 B-scale blocks"),
    "stages_low": (PROBLEM, GOOD.replace(stages=2), H200_SXM, "stages=2"),
    "stages_high": (PROBLEM, GemmConfig(64, 8, 33), BIG_SMEM, "stages=33"),
    "cluster_size": (PROBLEM, GemmConfig(128, 128, 3, cluster=4), H200_SXM, "cluster=4"),
    "cluster_odd_n_blocks": (GemmProblem(4096, 384, 512), GemmConfig(128, 128, 3, cluster=2), H200_SXM,
                             "cluster=2: ceil(N/block_n) = 3 N blocks"),
    "cluster_grid": (PROBLEM, GOOD.replace(num_sms=131), H200_SXM, "cluster=2: the grid of 131 SMs"),
    "num_sms": (PROBLEM, GemmConfig(128, 128, 3, num_sms=133), H200_SXM, "num_sms=133"),
    "smem": (PROBLEM, GemmConfig(256, 128, 8), H200_SXM, "shared memory:"),
    "producer_regs": (PROBLEM, GOOD.replace(producer_regs=20), H200_SXM, "producer_regs=20"),
    "math_regs_not_8": (PROBLEM, GemmConfig(64, 128, 3, producer_regs=40, math_regs=250), H200_SXM, "math_regs=250"),
    "regs_per_cta": (PROBLEM, GemmConfig(128, 128, 3, producer_regs=40, math_regs=248), H200_SXM,
                     "registers: 68608 per CTA"),  # 128 * (40 + 2 * 248) > 65536
    "spill": (GemmProblem(128, 256, 512), GemmConfig(128, 256, 3), H200_SXM,
              "registers: block 128x256 needs ~296"),  # 128 acc * (1 + 1 wave) + 40; with wave_n=128: 64 * (1 + 2) + 40
    "swizzle_ab": (PROBLEM, GOOD.replace(swizzle_ab=64), H200_SXM, "swizzle_ab=64"),
    "swizzle_d_value": (PROBLEM, GOOD.replace(swizzle_d=16), H200_SXM, "swizzle_d=16: expected 0, 32, 64 or 128"),
    "swizzle_d_divides": (GemmProblem(128, 112, 512), GemmConfig(64, 56, 3, swizzle_d=32), H200_SXM,
                          "swizzle_d=32: must divide the D tile row of 112 bytes"),
    "raster_group": (PROBLEM, GOOD.replace(raster_group=0), H200_SXM, "raster_group=0"),
    "a_rows_atoms": (GemmProblem(4, 2112, 7168), GemmConfig(64, 32, 8, a_rows=12), H200_SXM,
                     "a_rows=12: expected a multiple of 8"),
    "a_rows_holds_m": (GemmProblem(9, 2112, 7168), GemmConfig(64, 32, 8, a_rows=8), H200_SXM,
                       "a_rows=8: M=9 rows would not be loaded"),
    "a_rows_256_rows": (GemmProblem(4, 2112, 7168), GemmConfig(256, 128, 3, a_rows=8), H200_SXM,
                        "a_rows=8: fewer A rows than the tile is for dense 64- and 128-row tiles"),
    "a_rows_grouped": (GemmProblem(4, 2112, 7168, kind=GemmKind.M_GROUPED_MASKED, groups=2),
                       GemmConfig(64, 32, 8, a_rows=8), H200_SXM, "masked"),
    "a_rows_overrun_128": (GemmProblem(5, 512, 1024), GemmConfig(128, 8, 14, a_rows=8), H200_SXM,
                           "a_rows=8: the last A slot's 128-row wgmma read would run past B's stages"),
    "a_rows_overrun": (GemmProblem(4, 2112, 7168), GemmConfig(64, 8, 3, a_rows=8), H200_SXM,
                       "a_rows=8: the last A slot's 64-row wgmma read would run past B's stages"),
    # column waves (wave_n < block_n): wave_n 128 dividing block_n; the block recipe's promotion; no split; bf16 D
    "wave_n_width": (GemmProblem(128, 256, 512), GemmConfig(128, 256, 3, wave_n=64), H200_SXM,
                     "wave_n=64: column waves are implemented with wave_n=128"),
    "wave_n_recipe": (GemmProblem(128, 256, 512, scales=ScaleRecipe.TENSOR), GemmConfig(128, 256, 3, wave_n=128),
                      H200_SXM, "wave_n=128: column waves are implemented for the 1x128/128x128"),
    "wave_n_split": (GemmProblem(64, 2048, 7168), GemmConfig(64, 256, 3, k_splits=2, wave_n=128), H200_SXM,
                     "wave_n=128: column waves are not implemented with split-K"),
    "wave_n_out": (GemmProblem(64, 2048, 2048, out_dtype=DType.FP32), GemmConfig(64, 256, 3, wave_n=128), H200_SXM,
                   "wave_n=128: column waves are verified with a bf16 or e4m3 D only"),
    # column halves (wave_n = block_n / 2 on a 192-wide tile): two accumulator sets, dense only; other halves no
    "halves_one_set": (GemmProblem(64, 2048, 2048), GemmConfig(64, 192, 3, wave_n=96, acc_sets=1), H200_SXM,
                       "wave_n=96: column halves run as two accumulator sets"),
    "halves_grouped": (GemmProblem(256, 2048, 2048, kind=GemmKind.M_GROUPED_MASKED, groups=2),
                       GemmConfig(64, 192, 3, wave_n=96, acc_sets=2), H200_SXM,
                       "wave_n=96: column halves are GPU-tested on dense GEMMs only"),
    "halves_width": (GemmProblem(64, 2048, 2048), GemmConfig(64, 160, 3, wave_n=80, acc_sets=1), H200_SXM,
                     "wave_n=80: column waves are implemented with wave_n=128"),
}


@pytest.mark.parametrize("rule", sorted(ISOLATED))
def test_each_rule_alone(rule: str) -> None:
    problem, config, target, needle = ISOLATED[rule]
    errors = check(problem, config, target)
    assert len(errors) == 1, errors
    assert needle in errors[0], errors


def test_column_waves_need_one_row_wave() -> None:
    errors = check(GemmProblem(512, 256, 512), GemmConfig(256, 256, 3, wave_n=128), BIG_SMEM)
    assert any("wave_n=128: column waves need one m64 row wave per math warpgroup" in e for e in errors), errors
    assert not check(GemmProblem(128, 256, 512), GemmConfig(128, 256, 3, wave_n=128), H200_SXM)


def test_b_scale_blocks_spanned() -> None:
    # tiles start at multiples of block_n, so within a 128-row scale block they start at multiples of gcd(bn, 128)
    assert [b_scale_blocks_spanned(n) for n in (8, 64, 128, 24, 136, 192, 256, 200, 224)] == [1, 1, 1, 2, 2, 2, 2, 3, 3]
    spanning = [n for n in LEGAL_N if b_scale_blocks_spanned(n) > 2]
    assert spanning and all(n > 128 for n in spanning)
    for n in spanning:
        assert any(f"block_n={n}" in e for e in check(PROBLEM, GemmConfig(64, n, 3), BIG_SMEM))


def test_smem_and_registers_both_reported() -> None:
    errors = check(PROBLEM, GemmConfig(256, 256, 8), H200_SXM)
    assert any(e.startswith("shared memory: ") and "block 256x256, 8 stages" in e for e in errors), errors
    assert any(e.startswith("registers: block 256x256") for e in errors), errors


def test_several_violations_all_listed() -> None:
    errors = check(PROBLEM, GemmConfig(128, 128, 2, block_k=64, swizzle_d=16), H200_SXM)
    assert {e.split(":")[0] for e in errors} == {"block_k=64", "stages=2", "swizzle_d=16"}


# ---------------------------------------------------------------- shared-memory budget

def test_smem_bytes_by_hand() -> None:
    # block 128x128, 4 stages:
    #   D tile  128*128*2 = 32768 (a multiple of 1024)          -> A at 32768
    #   A ring  4 * 128*128 = 65536                             -> B at 98304
    #   B ring  4 * 128*128 = 65536                             -> SFA at 163840 (already 128-aligned)
    #   SFA     4 * align(128*4, 128) = 4 * 512 = 2048          -> SFB at 165888
    #   SFB     4 * 8 (the tile's two B scales per stage) = 32 -> barriers at 165920
    #   bars    2 * 4 * 8 = 64                                  -> total 165984
    #   launch  165984 + 1024 alignment slack = 167008
    layout = smem_layout(GemmConfig(128, 128, 4))
    assert (layout.a_offset, layout.b_offset, layout.sfa_offset) == (32768, 98304, 163840)
    assert (layout.sfb_offset, layout.barrier_offset, layout.total) == (165888, 165920, 165984)
    assert smem_bytes(GemmConfig(128, 128, 4)) == 167008


@pytest.mark.parametrize("block_m", [64, 128, 256])
def test_smem_stage_offsets_1024_aligned(block_m: int) -> None:
    for block_n in LEGAL_N:
        for stages in (3, 5, 8):
            lay = smem_layout(GemmConfig(block_m, block_n, stages))
            starts = [lay.a_offset + i * lay.a_stage_bytes for i in range(stages)]
            starts += [lay.b_offset + i * lay.b_stage_bytes for i in range(stages)]
            assert all(s % SMEM_ALIGN == 0 for s in starts), (block_m, block_n, stages, lay)
            assert lay.sfa_offset % 128 == 0 and lay.barrier_offset % 8 == 0
            assert lay.sfa_offset >= lay.b_offset + stages * lay.b_stage_bytes
            assert lay.total == lay.barrier_offset + 16 * stages


# ---------------------------------------------------------------- grouped problems

def test_grouped_problem_validation() -> None:
    contiguous, masked = GemmKind.M_GROUPED_CONTIGUOUS, GemmKind.M_GROUPED_MASKED
    assert GemmProblem(1024, 4096, 7168, kind=contiguous, groups=8).total_rows == 1024
    assert GemmProblem(300, 4096, 7168, kind=masked, groups=4).total_rows == 1200
    assert GemmProblem(300, 4096, 7168, kind=masked, groups=4).m_blocks(128) == 12  # 3 per group
    with pytest.raises(ValueError, match="GemmProblem.groups: expected groups == 1 for a dense GEMM"):
        GemmProblem(128, 128, 128, groups=2)
    with pytest.raises(ValueError, match="GemmProblem.groups: expected groups >= 1"):
        GemmProblem(128, 128, 128, kind=masked, groups=0)
    with pytest.raises(ValueError, match="GemmProblem.m: a contiguous grouped layout has M_total a multiple of 128"):
        GemmProblem(200, 128, 128, kind=contiguous, groups=2)


@pytest.mark.parametrize("bad", [1.5, True, "64", None])
def test_problem_dims_must_be_integers(bad) -> None:
    with pytest.raises(ValueError, match="GemmProblem.m: expected an integer"):
        GemmProblem(bad, 16, 16)


def test_contiguous_tile_must_divide_the_alignment() -> None:
    problem = GemmProblem(4096, 4096, 1024, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=4)
    errors = check(problem, GemmConfig(256, 64, 3), H200_SXM)
    assert len(errors) == 1 and "block_m=256: a contiguous grouped layout aligns experts to 128 rows" in errors[0]
    assert check(problem, GemmConfig(64, 64, 3), H200_SXM) == check(problem, GemmConfig(128, 64, 3), H200_SXM) == []


def test_draft_and_decide() -> None:
    draft = GemmConfig.draft({"block_n": 112})
    assert draft.block_n == 112 and draft.block_m is None and draft.cluster is None and not draft.has_tile
    decided = draft.decide(block_m=128, block_n=64, cluster=2)
    assert (decided.block_m, decided.block_n, decided.cluster) == (128, 112, 2)  # a decided field keeps its value
    with pytest.raises(ValueError, match="GemmConfig.stages: expected an integer"):
        GemmConfig(128, 128, 4.0)  # type: ignore[arg-type]


def test_split_k_rules() -> None:
    from gemmgen.ir import H200_SXM, GemmConfig, GemmKind, GemmProblem
    from gemmgen.legality import check

    base = GemmConfig(block_m=64, block_n=128, stages=4, cluster=1, block_k=128, k_splits=2)
    assert not check(GemmProblem(1, 7168, 16384), base, H200_SXM)
    errors = check(GemmProblem(1, 7168, 16384 + 128), base, H200_SXM)  # 129 K blocks: 2 does not divide
    assert any("k_splits=2" in e and "divide" in e for e in errors)
    errors = check(GemmProblem(1, 7168, 16384), base.replace(k_splits=16), H200_SXM)
    assert any("at most 8" in e for e in errors)
    errors = check(GemmProblem(1, 7168, 16384), base.replace(cluster=2), H200_SXM)
    assert any("cluster=1" in e for e in errors)
    grouped = GemmProblem(256, 4096, 7168, kind=GemmKind.M_GROUPED_MASKED, groups=4)
    assert any("dense GEMMs only" in e for e in check(grouped, base, H200_SXM))


def test_output_rules() -> None:
    from gemmgen.ir import DType

    cfg = GemmConfig(block_m=128, block_n=128, stages=4, cluster=1, block_k=128)
    assert not check(GemmProblem(256, 4096, 2048, out_dtype=DType.FP32, accumulate=True), cfg, H200_SXM)
    errors = check(GemmProblem(256, 4096, 2048, accumulate=True), cfg, H200_SXM)
    assert any("accumulate" in e and "float32" in e for e in errors)
    grouped = GemmProblem(256, 4096, 2048, kind=GemmKind.M_GROUPED_MASKED, groups=2, out_dtype=DType.FP32)
    assert any("dense and k-grouped GEMMs only" in e for e in check(grouped, cfg.replace(block_m=64), H200_SXM))
    # the D tile doubles with fp32: the shared-memory budget sees it
    big = GemmConfig(block_m=256, block_n=128, stages=3, cluster=1, block_k=128)
    fp32 = check(GemmProblem(4096, 4096, 2048, out_dtype=DType.FP32), big, H200_SXM)
    bf16 = check(GemmProblem(4096, 4096, 2048), big, H200_SXM)
    assert any("shared memory" in e for e in fp32) and not any("shared memory" in e for e in bf16)
    with pytest.raises(ValueError, match="accumulate"):
        GemmProblem(64, 128, 128, accumulate=1)  # type: ignore[arg-type]



def test_recipes_on_grouped_kinds_and_unimplemented_recipes_are_rejected() -> None:
    from gemmgen.ir import ScaleRecipe
    with pytest.raises(ValueError, match="dense GEMMs only"):
        GemmProblem(256, 512, 1024, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=2, scales=ScaleRecipe.TENSOR)
    with pytest.raises(ValueError, match="bf16 inputs take the 'none' recipe"):
        GemmProblem(256, 512, 1024, scales=ScaleRecipe.NONE)
    with pytest.raises(ValueError, match="bf16 inputs take the 'none' recipe"):
        GemmProblem(256, 512, 1024, a_dtype=DType.BF16, b_dtype=DType.BF16)
    with pytest.raises(ValueError, match="or both bf16"):
        GemmProblem(256, 512, 1024, a_dtype=DType.BF16, scales=ScaleRecipe.NONE)
    p = GemmProblem(256, 512, 1024, scales=ScaleRecipe.CHANNEL)
    assert "scales channel" in p.short()
    # bf16 (no scales) is implemented for both m-grouped layouts too, not for the k-grouped one
    bf16 = {"a_dtype": DType.BF16, "b_dtype": DType.BF16, "scales": ScaleRecipe.NONE}
    contiguous = GemmProblem(256, 512, 1024, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=2, **bf16)
    assert contiguous.k_block == 64 and "scales none" in contiguous.short()
    masked = GemmProblem(256, 512, 1024, kind=GemmKind.M_GROUPED_MASKED, groups=2, **bf16)
    assert masked.k_block == 64 and "scales none" in masked.short()
    with pytest.raises(ValueError, match="tensor recipe is implemented for dense GEMMs only"):
        GemmProblem(256, 512, 1024, kind=GemmKind.M_GROUPED_MASKED, groups=2, scales=ScaleRecipe.TENSOR)
    cfg = GemmConfig(block_m=128, block_n=128, stages=4, cluster=1, block_k=64)
    fp32 = GemmProblem(256, 512, 1024, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=2, out_dtype=DType.FP32, **bf16)
    errors = check(fp32, cfg, H200_SXM)
    assert any(e.startswith("out_dtype=fp32: implemented for dense and k-grouped GEMMs only") for e in errors)
    assert not check(contiguous, cfg, H200_SXM)


# ---------------------------------------------------------------- the 1x128/1x128 (weight-gradient) recipe

def _wgrad(out_dtype: str = "fp32", **kw) -> GemmProblem:
    from gemmgen.ir import DType, ScaleRecipe

    return GemmProblem(4096, 7168, 4096, out_dtype=DType(out_dtype), scales=ScaleRecipe.A1x128_B1x128, **kw)


def test_column_recipe_rules() -> None:
    from gemmgen.ir import DType, ScaleRecipe

    cfg = GemmConfig(block_m=128, block_n=128, stages=4, cluster=2, block_k=128)
    assert not check(_wgrad(accumulate=True), cfg, H200_SXM)
    assert not check(_wgrad(), cfg, H200_SXM)  # overwrite (accumulate=False) is fine too
    errors = check(_wgrad("bf16"), cfg, H200_SXM)
    assert any(e.startswith("scales 1x128/1x128") and "float32" in e for e in errors), errors
    split = check(GemmProblem(64, 4096, 8192, out_dtype=DType.FP32, scales=ScaleRecipe.A1x128_B1x128),
                  cfg.replace(block_m=64, cluster=1, k_splits=2), H200_SXM)
    assert any(e.startswith("k_splits=2") and "1x128/1x128" in e for e in split), split
    # column scales have no 128-row blocks: a tile spanning three is fine (the block recipe rejects it)
    wide = cfg.replace(block_n=200, stages=3, cluster=1)
    assert not any("B-scale blocks" in e for e in check(_wgrad(), wide, BIG_SMEM))
    assert any("B-scale blocks" in e for e in check(PROBLEM, wide, BIG_SMEM))
    with pytest.raises(ValueError, match="dense GEMMs only"):
        GemmProblem(1024, 4096, 4096, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=4, out_dtype=DType.FP32,
                    scales=ScaleRecipe.A1x128_B1x128)
    with pytest.raises(ValueError, match="dense GEMMs only"):
        GemmProblem(256, 4096, 4096, kind=GemmKind.M_GROUPED_MASKED, groups=4, scales=ScaleRecipe.A1x128_B1x128)


def test_column_recipe_budgets() -> None:
    """An SFB region of block_n floats per stage (128-byte aligned) and 17 more registers per math thread."""
    from gemmgen.ir import ScaleRecipe
    from gemmgen.legality import COLUMN_SCALE_REG_OVERHEAD, math_regs_needed

    column = ScaleRecipe.A1x128_B1x128
    cfg = GemmConfig(128, 152, 4)
    block, col = smem_layout(cfg, 4), smem_layout(cfg, 4, column)
    assert (block.sfb_stage_bytes, col.sfb_stage_bytes) == (8, 640)  # the block recipe's two; align(152 * 4, 128)
    assert col.sfb_offset == col.sfa_offset + 4 * col.sfa_stage_bytes
    assert col.barrier_offset == block.barrier_offset + 4 * (640 - 8)
    assert smem_bytes(cfg, 4, column) == smem_bytes(cfg, 4) + 4 * (640 - 8)
    two = GemmConfig(128, 128, 4, acc_sets=2)
    assert math_regs_needed(two, column) == math_regs_needed(two) + COLUMN_SCALE_REG_OVERHEAD == 249
    errors = check(_wgrad(), two.replace(cluster=1, math_regs=232), H200_SXM)
    assert any(e.startswith("registers: block 128x128 needs ~249") and "+ 57" in e for e in errors), errors
