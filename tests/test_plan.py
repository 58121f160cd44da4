"""The kernel plan: made once by plan_kernel, printed by the templates, read by the launcher, checked by legality.

The central test: the kernel signature the template prints and the parameter block the launcher packs come from
the same `KernelPlan` object; change the plan and both change alike."""

from __future__ import annotations

import ctypes
import dataclasses
import re

import pytest

from gemmgen import __version__
from gemmgen.codegen.render import render
from gemmgen.errors import IllegalConfigError
from gemmgen.ir import (
    H200_SXM,
    DType,
    Extent,
    GemmConfig,
    GemmKind,
    GemmProblem,
    Kernel,
    ParamKind,
    ScaleRecipe,
    SchedulerKind,
)
from gemmgen.legality import BLOCK_SFB_STAGE_BYTES, check, check_plan, smem_bytes, smem_layout
from gemmgen.passes import run_pipeline
from gemmgen.runtime import cdriver
from gemmgen.runtime.launch import ParamBlock

PROBLEMS = {
    "dense": GemmProblem(4096, 7168, 2048),
    "contiguous": GemmProblem(8192, 4096, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=8),
    "masked": GemmProblem(300, 7168, 2048, kind=GemmKind.M_GROUPED_MASKED, groups=4),
    "wgrad": GemmProblem(4096, 7168, 4096, out_dtype=DType.FP32, accumulate=True, scales=ScaleRecipe.A1x128_B1x128),
}
ADDRESSES = {"a": 0x1000, "sa": 0x2000, "b": 0x3000, "sb": 0x4000, "out": 0x5000, "m_indices": 0x6000,
             "masked_m": 0x7000}
ENV = {"m": 1000, "g": 4, "sa_stride_m": 1, "sa_stride_k": 1000, "sa_stride_g": 56000, "sa_tma": 1,
       "sb_stride_n": 32, "sb_stride_k": 1, "sb_tma": 1,
       # the TMA operands' row strides (elements), rows in their 2-D maps and groups' distance in rows (distinct
       # numbers, so a parameter reading the wrong one shows)
       "a_ld": 2176, "a_rows": 4003, "a_gr": 1001, "b_ld": 2192, "b_rows": 28700, "b_gr": 7172,
       "out_ld": 7200, "out_rows": 4009, "out_gr": 1003}


def _kernel(tag: str, **pins: int) -> Kernel:
    return run_pipeline(Kernel(PROBLEMS[tag], forced=tuple(sorted(pins.items()))), H200_SXM)


def _signature(source: str, name: str) -> list[str]:
    """The parameter names of the rendered kernel's signature, in order."""
    body = source[source.index(f"{name}(") + len(name) + 1:source.index(") {", source.index(f"{name}("))]
    decls = [line.split("//")[0].strip().rstrip(",") for line in body.splitlines()]
    return [re.findall(r"\w+", d)[-1] for d in decls if d]


class _Tensor:
    def __init__(self, address: int):
        self.address = address

    def data_ptr(self) -> int:
        return self.address


def _launcher_view(kernel: Kernel, monkeypatch) -> list[tuple[str, object]]:
    """The launcher's real parameter block, filled with a stand-in encoder that writes the map's address into its
    first 8 bytes; read back slot by slot through the `void*[n]` array cuLaunchKernelEx gets."""
    assert kernel.plan is not None

    def fake_encode(self, dst, address, sizes):  # noqa: ARG001
        ctypes.c_uint64.from_address(dst).value = address
        return 0

    monkeypatch.setattr(cdriver.MapEncoder, "encode", fake_encode)
    block = ParamBlock(kernel.plan)
    block.fill({k: _Tensor(v) for k, v in ADDRESSES.items()}, ENV, "test")  # type: ignore[misc]
    view: list[tuple[str, object]] = []
    for p, slot in zip(kernel.plan.params, block.array, strict=True):
        if p.kind is ParamKind.TMAP:
            assert slot % 64 == 0, "a CUtensorMap parameter must be 64-byte aligned"
            view.append(("tmap", ctypes.c_uint64.from_address(slot).value))
        elif p.kind is ParamKind.POINTER:
            view.append(("pointer", ctypes.c_uint64.from_address(slot).value))
        else:
            view.append(("int32", ctypes.c_int32.from_address(slot).value))
    return view


@pytest.mark.parametrize("tag", sorted(PROBLEMS))
def test_template_and_launcher_read_one_abi(tag: str, monkeypatch) -> None:
    kernel = _kernel(tag)
    plan = kernel.plan
    assert plan is not None and kernel.name
    assert _signature(render(kernel, __version__), kernel.name) == [p.name for p in plan.params]
    expected = [(p.kind.value, ADDRESSES[p.source] if p.kind is not ParamKind.INT32 else ENV[p.source])
                for p in plan.params]
    assert _launcher_view(kernel, monkeypatch) == expected
    # Reorder the plan's parameters: the printed signature and the packed block follow the one object.
    swapped = dataclasses.replace(plan, params=tuple(reversed(plan.params)))
    changed = kernel.replace(plan=swapped)
    assert _signature(render(changed, __version__), kernel.name) == [p.name for p in reversed(plan.params)]
    assert _launcher_view(changed, monkeypatch) == list(reversed(expected))


@pytest.mark.parametrize("tag", sorted(PROBLEMS))
def test_template_prints_the_plans_numbers(tag: str) -> None:
    kernel = _kernel(tag)
    plan, text = kernel.plan, render(kernel, __version__)
    assert plan is not None
    for constant, value in (("STAGE_TX_BYTES", plan.barriers.stage_tx_bytes), ("BAR_OFFSET", plan.barriers.offset),
                            ("EMPTY_ARRIVALS", plan.barriers.empty_arrivals), ("D_ATOM_COLS", plan.d_store.atom_cols),
                            ("SFA_OFFSET", plan.smem.sfa_offset), ("K_STEPS", plan.k_steps)):
        assert re.search(rf"\b{constant} = {value}\b", text), constant
    assert "struct Scheduler" in text and f"scheduler {plan.scheduler.value}" in text


def test_tensor_maps_follow_the_kind() -> None:
    dense, contiguous, masked = (_kernel(t).plan for t in ("dense", "contiguous", "masked"))
    assert dense is not None and contiguous is not None and masked is not None
    assert [p.scheduler for p in (dense, contiguous, masked)] == [
        SchedulerKind.DENSE, SchedulerKind.M_GROUPED_CONTIGUOUS, SchedulerKind.M_GROUPED_MASKED]
    env = {"m": 300, "g": 4, "a_rows": 1210, "a_ld": 2064, "b_rows": 16390, "b_ld": 7184, "out_rows": 1220,
           "out_ld": 7232}
    # A, B and D: the rows and row strides the call's checks found (validate.operand_layout: a 3-D operand's groups
    # stacked their own stride apart), whatever the kind
    for plan in (dense, contiguous, masked):
        for operand, elem in (("a", 1), ("b", 1), ("out", 2)):
            m = plan.map(operand)
            assert m.dims[1].value(env) == env[f"{operand}_rows"], operand
            assert m.row_stride.value(env) == env[f"{operand}_ld"] * elem, operand
    # SFA by TMA only in the TMA layout (M-major, stride rounded up to 4 floats; masked: G stacked groups of
    # k-blocks) and only when the call says so; its box is added to the full barrier at run time.
    assert masked.map("sa").row_stride.value({"m": 301, "g": 4}) == 304 * 4
    assert masked.map("sa").dims[1].value(env) == 4 * 16
    assert masked.map("sa").when == "sa_tma" and not masked.map("sa").loaded_per_stage
    assert [p.name for p in dense.params] == ["tmap_a", "tmap_b", "tmap_sfa", "tmap_d", "sfb", "shape_m", "sa_tma",
                                              "sfa", "sfa_stride_m", "sfa_stride_k", "sfa_stride_g"]
    assert [p.name for p in masked.params][-7:] == ["num_groups", "masked_m", "d_out", "d_ld", "a_group_rows",
                                                    "b_group_rows", "d_group_rows"]
    assert [p.name for p in contiguous.params][-5:] == ["num_groups", "m_indices", "d_out", "d_ld", "b_group_rows"]
    assert not dense.d_store.row_predicate and contiguous.d_store.row_predicate and masked.d_store.row_predicate
    assert masked.launch.grid(300, 4) == min(132, 4 * -(-300 // masked.launch.block_m) * masked.launch.n_blocks)


@pytest.mark.parametrize("tag", sorted(PROBLEMS))
def test_plan_is_consistent_and_legal(tag: str) -> None:
    kernel = _kernel(tag)
    plan, c = kernel.plan, kernel.config
    assert plan is not None and c is not None
    assert check_plan(plan, H200_SXM) == []
    p = kernel.problem
    assert plan.smem == smem_layout(c, p.out_dtype.bytes, p.scales, p.a_dtype.bytes)
    assert plan.launch.dynamic_smem == smem_bytes(c, p.out_dtype.bytes, p.scales, p.a_dtype.bytes)
    if plan.b_scale_mode in ("uniform", "aligned", "runtime"):  # the block recipe: two fp32 B scales per stage
        assert plan.smem.sfb_stage_bytes == BLOCK_SFB_STAGE_BYTES and plan.smem.sfb_offset % 16 == 0
        assert plan.barriers.full_arrivals == 2 + plan.sa_gather_threads
        assert plan.smem.sfb_offset + c.stages * BLOCK_SFB_STAGE_BYTES <= plan.smem.barrier_offset
    assert plan.barriers.stage_tx_bytes == sum(m.box_bytes for m in plan.maps if m.loaded_per_stage)
    warps = c.math_warpgroups * 4  # every lane of a warp that reads scales from the slot, else one per warp
    want = warps * (32 + c.cluster - 1) if p.scales.promotes else warps * c.cluster
    assert plan.barriers.empty_arrivals == want


def test_column_scales_plan() -> None:
    """1x128/1x128: an SFB region per stage (block_n floats, 128-aligned, before the barriers), an N-major SB map
    loaded only where the call says so, BLOCK_N / 8 more full-barrier arrivals for the SB gather, three run-time ints
    after the block recipe's parameters; the block recipe's plan has none of them."""
    plan, dense = _kernel("wgrad").plan, _kernel("dense").plan
    assert plan is not None and dense is not None
    c = _kernel("wgrad").config
    assert c is not None and c.block_n is not None and c.stages is not None
    lay = plan.smem
    assert plan.b_scale_mode == "column" and lay.sfb_stage_bytes == -(-c.block_n * 4 // 128) * 128
    assert lay.sfb_offset == lay.sfa_offset + c.stages * lay.sfa_stage_bytes
    assert lay.sfb_offset + c.stages * lay.sfb_stage_bytes <= lay.barrier_offset
    sb = plan.map("sb")
    assert (sb.param, sb.when, sb.loaded_per_stage, sb.box) == ("tmap_sfb", "sb_tma", False, (c.block_n, 1))
    assert sb.dims[0].value({}) == 7168 and sb.dims[1].value({}) == 32 and sb.row_stride.value({}) == 7168 * 4
    assert plan.sb_gather_threads == c.block_n // 8
    assert plan.barriers.full_arrivals == 1 + plan.sa_gather_threads + plan.sb_gather_threads
    assert [p.name for p in plan.params][-3:] == ["sb_tma", "sfb_stride_n", "sfb_stride_k"]
    assert dense.smem.sfb_stage_bytes == BLOCK_SFB_STAGE_BYTES and dense.sb_gather_threads == 0 and "tmap_sfb" not in {
        m.param for m in dense.maps}
    assert "sfb_offset" in "\n".join(plan.render_lines())
    text = render(_kernel("wgrad"), __version__)
    for constant, value in (("SFB_OFFSET", lay.sfb_offset), ("SFB_STAGE_BYTES", lay.sfb_stage_bytes),
                            ("SB_THREADS", plan.sb_gather_threads), ("SFB_TX_BYTES", sb.box_bytes)):
        assert re.search(rf"\b{constant} = {value}\b", text), constant
    broken = dataclasses.replace(plan, smem=dataclasses.replace(lay, sfb_offset=lay.sfb_offset + 4))
    assert any("SFB stages" in e for e in check_plan(broken, H200_SXM))


def test_bf16_contiguous_plan(monkeypatch) -> None:
    """bf16 in the contiguous layout: no scale maps or pointers, shape_m then the grouped layout's parameters (as the
    FP8 contiguous kernel ends), read alike by the template's signature and the launcher's block; the scheduler
    hands tiles a null B-scale pointer; the D map is [M_total, N] bf16 and partial tiles are stored row by row."""
    problem = GemmProblem(4096, 4096, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=4, a_dtype=DType.BF16,
                          b_dtype=DType.BF16, scales=ScaleRecipe.NONE)
    kernel = run_pipeline(Kernel(problem), H200_SXM)
    plan = kernel.plan
    assert plan is not None and kernel.name is not None and kernel.name.startswith("sm90_bf16_bf16_nt_gcontig_")
    names = [p.name for p in plan.params]
    assert names == ["tmap_a", "tmap_b", "tmap_d", "shape_m", "num_groups", "m_indices", "d_out", "d_ld",
                     "b_group_rows"]
    assert check_plan(plan, H200_SXM) == [] and plan.scheduler is SchedulerKind.M_GROUPED_CONTIGUOUS
    assert plan.d_store.row_predicate and plan.d_store.elem_bytes == 2 and plan.m_alignment == 128
    assert plan.map("b").dims[1].value(ENV) == ENV["b_rows"] and plan.map("a").dtype == "bf16"
    assert plan.map("b").row_stride.value(ENV) == 2 * ENV["b_ld"]
    text = render(kernel, __version__)
    assert _signature(text, kernel.name) == names
    assert "set_tile(t, group, 0, group * params.b_group_rows, nullptr)" in text and "params.sfb" not in text
    expected = [(p.kind.value, ADDRESSES[p.source] if p.kind is not ParamKind.INT32 else ENV[p.source])
                for p in plan.params]
    assert _launcher_view(kernel, monkeypatch) == expected


def test_check_plan_reports_broken_plans() -> None:
    plan = _kernel("dense").plan
    assert plan is not None
    bad_tx = dataclasses.replace(plan, barriers=dataclasses.replace(plan.barriers, stage_tx_bytes=1))
    assert any("full barrier expects 1 bytes" in e for e in check_plan(bad_tx, H200_SXM))
    bad_box = dataclasses.replace(plan, maps=(dataclasses.replace(plan.maps[0], box=(128, 512)), *plan.maps[1:]))
    assert any("tmap_a box (128, 512)" in e for e in check_plan(bad_box, H200_SXM))
    bad_params = dataclasses.replace(plan, params=plan.params[1:])
    assert any("tensor maps" in e for e in check_plan(bad_params, H200_SXM))
    split = _kernel("contiguous", cross_tile=1, acc_sets=1).plan
    assert split is not None and split.cross_tile_issue
    split_k = dataclasses.replace(split, launch=dataclasses.replace(split.launch, k_splits=2))
    assert any("cross-tile issue" in e for e in check_plan(split_k, H200_SXM))


def test_cross_tile_issue_where_pinned() -> None:
    """GemmConfig.cross_tile: the next tile's step 0 goes before the epilogue; the rendered kernel issues it
    unconditionally, its slot wait guarded, and waits for the last one after the tile loop. Two accumulator sets
    refuse it (legality)."""
    for tag in PROBLEMS:
        for on in (0, 1):
            kernel = _kernel(tag, cross_tile=on, acc_sets=1, a_shift=0)
            assert kernel.plan is not None and kernel.config is not None
            assert kernel.plan.cross_tile_issue == bool(on) and kernel.name.endswith("_xt") == bool(on), tag
            text = render(kernel, __version__)
            assert ("if (more) mbar_wait" in text) == bool(on), tag
            assert ("tile = next;" in text) == bool(on), tag
            assert ("wgmma_wait<0>();  // the group issued after the last tile" in text) == bool(on), tag
            if on:  # step 0 peeled (retired only) in each main loop, then K_STEPS - 1 steps: a head, whole bodies
                plan = kernel.plan
                loops = max(len(plan.b_scale_splits), 1)
                assert text.count("{  // step 0, issued before the previous tile's epilogue") == loops, tag
                assert text.count(f"for (int step0 = {1 + (plan.k_steps - 1) % plan.unroll}; step0 < K_STEPS;") \
                    == loops
    with pytest.raises(IllegalConfigError, match="cross_tile=1"):
        _kernel("contiguous", cross_tile=1, acc_sets=2, block_n=128)


def test_per_warpgroup_epilogue_where_pinned() -> None:
    """GemmConfig.epilogue_per_wg: each of two math warpgroups stores its own rows: the D box is half the tile, each
    warpgroup syncs on its own named barrier and its first thread stores; one math warpgroup and split-K refuse it."""
    for tag, expected in ((t, bool(on)) for t in PROBLEMS for on in (0, 1)):
        kernel = _kernel(tag, epilogue_per_wg=int(expected))
        assert kernel.plan is not None and kernel.config is not None
        assert kernel.config.math_warpgroups == 2, tag  # every problem here takes two math warpgroups
        plan = kernel.plan
        assert plan.d_store.per_warpgroup == expected, tag
        assert plan.map("out").box[1] == kernel.config.block_m // (2 if expected else 1), tag
        text = render(kernel, __version__)
        assert ("2 + warpgroup, 128" in text) == expected, tag
        assert ("1, NUM_MATH_THREADS" in text) != expected, tag
        # the epilogue's wait for this warpgroup's previous stores, and the exit's for its last ones
        assert text.count("if (threadIdx.x % 128 == 0) bulk_wait_read0();") == (2 if expected else 0), tag
        assert text.count("if (threadIdx.x == 0) bulk_wait_read0();") == (0 if expected else 2), tag
        vote = "named_barrier_and(2 + warpgroup, 128, rows_ok)" if expected else "named_barrier_and(1, "
        assert (vote in text) == plan.d_store.row_predicate, tag
        broken = dataclasses.replace(plan, d_store=dataclasses.replace(plan.d_store, per_warpgroup=not expected))
        assert any("D box" in e for e in check_plan(broken, H200_SXM)), tag
        if expected:  # a half-tile box is right only with two math warpgroups and one K split
            assert not any("D box" in e for e in check_plan(plan, H200_SXM)), tag
            for launch in (dataclasses.replace(plan.launch, k_splits=2), dataclasses.replace(plan.launch, threads=256)):
                assert any("D box" in e for e in check_plan(dataclasses.replace(plan, launch=launch), H200_SXM)), tag
    for forced in ((("block_m", 64),), (("block_m", 128), ("k_splits", 2))):  # one math warpgroup; split-K
        with pytest.raises(IllegalConfigError, match="epilogue_per_wg=1"):
            run_pipeline(Kernel(GemmProblem(256, 2112, 7168), forced=(*forced, ("epilogue_per_wg", 1))), H200_SXM)


def test_extent() -> None:
    assert Extent(7168).value({}) == 7168 and str(Extent(7168)) == "7168"
    assert Extent(1, ("g", "m")).value({"g": 3, "m": 5}) == 15 and str(Extent(1, ("g", "m"))) == "g*m"
    assert Extent(4, ("m",), 4).value({"m": 5}) == 32 and str(Extent(4, ("m",), 4)) == "align(m, 4)*4"


def test_balanced_grid_keeps_the_rounds_on_the_fewest_clusters() -> None:
    """GemmConfig.balanced: 448 units of 256x128 pairs on 66 clusters (7 rounds) launch on 64 clusters; M <= 128 and
    fewer than 3 rounds keep every SM (LaunchPlan.grid); dense launches only."""
    from gemmgen.ir import H200_SXM, GemmKind, GemmProblem, Kernel
    from gemmgen.passes import run_pipeline

    def launch(m: int, n: int, k: int, forced=(("block_m", 256), ("block_n", 128), ("cluster", 2)), **kw):
        return run_pipeline(Kernel(GemmProblem(m, n, k, **kw), forced=forced), H200_SXM).plan.launch

    big = launch(4096, 7168, 16384, forced=(("block_m", 256), ("block_n", 128), ("cluster", 2), ("balanced", 1)))
    assert big.balanced and big.grid(4096, 1) == 128 and big.grid(2304, 1) == 126  # 252 units: 4 rounds of 63
    assert big.grid(256, 1) == 56  # 28 units, one round: one cluster each, as before
    assert big.grid(4352, 1) == 120  # 476 units on 66 clusters: 7.2 rounds, run as 8 rounds of 60
    assert big.grid(1024, 1) == 132  # 112 units: two rounds, not balanced
    # unpaired: 896 tiles, 7 rounds of 128; 952: 8 rounds of 119
    unpaired = launch(4096, 7168, 2048, forced=(("block_m", 256), ("block_n", 128), ("cluster", 1), ("balanced", 1)))
    assert unpaired.cluster == 1 and unpaired.balanced
    assert unpaired.grid(4096, 1) == 128 and unpaired.grid(4352, 1) == 119
    assert not launch(4096, 7168, 16384, forced=(("balanced", 0),)).balanced  # a pin keeps the default grid
    one = launch(128, 32768, 7168, forced=())  # one M block streaming B: a CTA per tile up to every SM
    assert one.grid(128, 1) == min(132, one.tiles(128, 1))
    with pytest.raises(IllegalConfigError, match="balanced=1"):  # a grouped grid is an upper bound
        launch(4096, 7168, 8192, forced=(("balanced", 1),), kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=4)


@pytest.mark.parametrize("cluster,k_splits,max_ctas", [(1, 1, 132), (2, 1, 132), (1, 2, 132), (1, 4, 130),
                                                       (2, 1, 128), (1, 3, 99)])
def test_balanced_grid_is_a_valid_grid_with_the_same_rounds(cluster: int, k_splits: int, max_ctas: int) -> None:
    from gemmgen.ir import LaunchPlan, ceil_div

    ctas_per_cluster = cluster * k_splits
    for n_blocks in (cluster, 7 * cluster, 28 * cluster):
        plain = LaunchPlan(384, 1024, ctas_per_cluster, max_ctas, 128, n_blocks, False, k_splits)
        balanced = LaunchPlan(384, 1024, ctas_per_cluster, max_ctas, 128, n_blocks, False, k_splits, True)
        for m in range(1, 40000, 97):
            old, new = plain.grid(m, 1), balanced.grid(m, 1)
            assert 0 < new <= old <= max_ctas and new % ctas_per_cluster == 0, (m, n_blocks, old, new)
            units = ceil_div(m, 128) * n_blocks * k_splits // ctas_per_cluster
            assert ceil_div(units, new // ctas_per_cluster) == ceil_div(units, old // ctas_per_cluster)


def test_a_tail_shift_where_the_a_slot_holds_the_tile() -> None:
    """GemmConfig.a_shift: the last M block's A box ends at M; the rendered kernel loads A from tile.row - tile.a_skip
    and starts the wgmma descriptors as many rows later. Legal for dense kernels whose A slot holds the whole tile and
    whose B stages hold the last A slot's over-read (grouped rows past a group are real memory); select_features takes
    it wherever legal (it acts only on a partial last M block), check_plan refuses a broken plan."""
    for tag, problem in PROBLEMS.items():
        if problem.kind is GemmKind.NORMAL:
            assert _kernel(tag, a_shift=1).plan.a_tail_shift, tag  # type: ignore[union-attr]
        else:
            with pytest.raises(IllegalConfigError, match="a_shift=1"):
                _kernel(tag, a_shift=1)
    dense = _kernel("dense")  # M a multiple of the tile: no effect here, taken so that one kernel serves every M
    assert dense.plan is not None and dense.plan.a_tail_shift
    assert "a_shift (estimate x1.000: no effect at this M)" in dict(dense.reasons)["select_features"]
    prefill = run_pipeline(Kernel(GemmProblem(264, 7168, 16384)), H200_SXM)
    assert prefill.plan is not None and prefill.plan.a_tail_shift
    text = render(prefill, __version__)
    assert "tile.row - tile.a_skip" in text
    assert text.count("desc_of_stage(desc_a_tile, issue_stage, A_STAGE_BYTES)") >= 1
    assert "desc_of_stage(desc_a0," not in text
    unshifted = render(_kernel("contiguous"), __version__)
    assert "a_skip" not in unshifted and "desc_of_stage(desc_a0, issue_stage, A_STAGE_BYTES)" in unshifted
    bf16 = run_pipeline(Kernel(GemmProblem(300, 4096, 2048, a_dtype=DType.BF16, b_dtype=DType.BF16,
                                           scales=ScaleRecipe.NONE)), H200_SXM)
    assert bf16.plan is not None and bf16.plan.a_tail_shift
    assert "+ tile.a_skip * BLOCK_K_BYTES)" in render(bf16, __version__)  # the whole-K loop's descriptor
    decode = run_pipeline(Kernel(GemmProblem(65, 2112, 7168), forced=(("block_m", 128),)), H200_SXM)
    assert decode.config is not None and decode.config.load_rows < decode.config.block_m  # type: ignore[operator]
    assert decode.plan is not None and not decode.plan.a_tail_shift
    shallow = GemmConfig(block_m=128, block_n=32, stages=3, a_shift=1)  # 96 rows of B stages, a 120-row over-read
    exact = GemmConfig(block_m=128, block_n=40, stages=3, a_shift=1)  # 120 rows: the over-read ends on B's last byte
    assert any("a_shift=1" in e for e in check(GemmProblem(136, 512, 1024), shallow, H200_SXM))
    assert not any("a_shift=1" in e for e in check(GemmProblem(136, 512, 1024), exact, H200_SXM))
    assert not any("a_shift=1" in e for e in check(GemmProblem(300, 512, 1024),
                                                   GemmConfig(block_m=256, block_n=128, stages=3, a_shift=1), H200_SXM))
    plan = prefill.plan
    few_b = dataclasses.replace(plan, smem=dataclasses.replace(plan.smem, b_stage_bytes=1024))
    assert any("shifted A box" in e for e in check_plan(few_b, H200_SXM))
    grouped = _kernel("masked").plan
    assert grouped is not None
    assert any("shifted A box" in e for e in check_plan(dataclasses.replace(grouped, a_tail_shift=True), H200_SXM))


def test_pdl_only_where_asked_and_before_every_global_access() -> None:
    """GemmConfig.pdl: off unless pinned (select_config never turns it on); pinned, the launch plan carries it (the
    launcher's attribute), the name ends in _pdl, and the rendered kernel waits (griddepcontrol.wait) after the
    barrier set-up and before any warp role builds its scheduler (a masked one reads masked_m) or loads a box; the
    TMA thread lets the next kernel launch after its last load."""
    for tag, problem in PROBLEMS.items():
        off = run_pipeline(Kernel(problem), H200_SXM)
        assert off.config is not None and off.plan is not None
        assert off.config.pdl == 0 and not off.plan.launch.pdl and not off.name.endswith("_pdl"), tag
        assert "griddepcontrol" not in render(off, __version__), tag
        on = run_pipeline(Kernel(problem, forced=(("pdl", 1),)), H200_SXM)
        assert on.config is not None and on.plan is not None
        assert on.plan.launch.pdl and on.name == off.name + "_pdl", tag
        assert dataclasses.replace(on.config, pdl=0) == off.config, tag  # nothing else changes
        text = render(on, __version__)
        body = text[text.index(f"{on.name}("):]
        wait, trigger = body.index("griddepcontrol.wait;"), body.index("griddepcontrol.launch_dependents;")
        assert body.index("fence_mbar_init();") < wait < body.index("Scheduler sched"), tag
        # the trigger: the TMA thread, once its tile loop (every load) is done
        tma_thread = body.index("if (threadIdx.x == NUM_MATH_THREADS) {", wait)
        assert body.rindex("tma_load_2d", 0, trigger) > tma_thread, tag
        assert "tma_load" not in body[trigger:], tag
        assert body.rindex("while (sched.next<false>(tile))", 0, trigger) > tma_thread, tag
        assert body.count("griddepcontrol.wait;") == 1 and body.count("griddepcontrol.launch_dependents;") == 1, tag
        assert "tma_load" not in body[:wait] and "__ldg" not in body[:wait], tag
    with pytest.raises(ValueError, match="pdl: expected 0 or 1"):
        GemmConfig(pdl=2)


def test_pdl_launch_attribute() -> None:
    """The launch config carries the cluster attribute, the programmatic-serialization one, or both."""
    enums = cdriver.enums()
    for cluster, pdl in ((1, False), (2, False), (1, True), (2, True)):
        cfg = cdriver.launch_config(132, 384, 1000, 0, cluster, pdl)
        ids = [cfg.attrs[i].id for i in range(cfg.numAttrs)]
        expected = ([enums["cluster_attr"]] if cluster > 1 else []) + ([enums["pdl_attr"]] if pdl else [])
        assert ids == expected, (cluster, pdl)
        if pdl:
            assert cfg.attrs[len(ids) - 1].value[0] == 1
        if cluster > 1:
            assert cfg.attrs[0].value[0] == cluster | (1 << 32) and cfg.attrs[0].value[1] == 1


def test_swap_ab_plan_and_rules() -> None:
    """swap_ab=1 (experimental): tmap_a over the weights, tmap_b over the tokens, the tokens' scales as the SA box of
    block_n columns, one transposed D box; tiles over N's rows, at most block_n tokens; the rules it needs."""
    kernel = run_pipeline(Kernel(GemmProblem(17, 1000, 2320), forced=(("swap_ab", 1),)), H200_SXM)
    c, plan = kernel.config, kernel.plan
    assert c is not None and plan is not None and kernel.name is not None and "_swab" in kernel.name
    assert (c.block_m, c.block_n, c.wave_n, c.k_splits, c.cluster, c.swizzle_d, c.sa_gather) == (64, 32, 32, 1, 1, 0, 0)
    assert plan.swap_ab and not check_plan(plan, H200_SXM)
    assert (plan.map("b").param, plan.map("b").box) == ("tmap_a", (128, 64))
    assert (plan.map("a").param, plan.map("a").box) == ("tmap_b", (128, 32))
    assert plan.map("sa").box == (32, 1) and plan.map("out").box == (64, 32) and plan.map("out").swizzle == 0
    assert plan.sa_gather_threads == 8 and plan.b_scale_mode == "uniform" and not plan.a_tail_shift
    la = plan.launch
    assert (la.n_blocks, la.tile_rows, la.max_m, la.balanced) == (1, 1000, 32, False)
    assert la.grid(17, 1) == 16 and la.grid(1, 1) == 16  # ceil(1000 / 64) tiles whatever M is
    text = render(kernel, __version__)
    assert "(SHAPE_N + BLOCK_M * M_PAIR - 1) / (BLOCK_M * M_PAIR)" in text
    assert "tile.row / 128" in text and "st_shared_u16" in text
    # M = 17 (32 token columns) is not swapped unasked (select_config._swap_pays: M <= 16)
    default = run_pipeline(Kernel(GemmProblem(17, 1000, 2320)), H200_SXM)
    assert default.config is not None and default.config.swap_ab == 0 and "_swab" not in (default.name or "")
    # K split over cluster ranks: each of the ceil(1000 / 64) tiles is a cluster of k_splits CTAs; the partials'
    # live rows are the weights' (N), not M's
    split = run_pipeline(Kernel(GemmProblem(17, 1000, 2304), forced=(("swap_ab", 1), ("k_splits", 3),
                                                                      ("split_global", 0))), H200_SXM)
    assert split.plan is not None and split.config is not None and split.config.k_splits == 3
    assert split.plan.launch.grid(17, 1) == 48 and split.plan.smem.red_bytes == 64 * 32 * 4
    assert split.plan.launch.cluster == 3 and not split.plan.has_param("ws_partials")
    assert "row_in_wg < SHAPE_N;" in render(split, __version__)
    # the same split unpinned meets in the global workspace: no cluster, no DSMEM buffer, one fp32 partial per tile
    # and split and one counter per tile, the split read from the tile
    glob = run_pipeline(Kernel(GemmProblem(17, 1000, 2304), forced=(("swap_ab", 1), ("k_splits", 3))), H200_SXM)
    assert glob.plan is not None and glob.config is not None and glob.config.split_global == 1
    la = glob.plan.launch
    assert (la.cluster, la.grid(17, 1), glob.plan.smem.red_bytes, la.partial_floats) == (1, 48, 0, 64 * 32)
    assert la.workspace_floats(17, 1) == (16 * 3 * 64 * 32, 16) and split.plan.launch.workspace_floats(17, 1) == (0, 0)
    assert glob.plan.has_param("ws_partials") and glob.plan.has_param("ws_counters")
    text = render(glob, __version__)
    assert "t.split = unit % K_SPLITS;" in text and "tile.split * KB_PER_SPLIT" in text and "red_full_bar" not in text
    assert "atom_add_acq_rel_gpu(params.ws_counters + tile.tile_id, 1) == K_SPLITS - 1" in text
    # 128 weight rows: two math warpgroups of 64 rows, one D box of 128 weights across both (no per-warpgroup store)
    tall = run_pipeline(Kernel(GemmProblem(13, 1000, 2304), forced=(("swap_ab", 1), ("block_m", 128),
                                                                 ("k_splits", 1))), H200_SXM)
    assert tall.plan is not None and tall.config is not None and tall.config.math_warpgroups == 2
    assert not tall.plan.d_store.per_warpgroup and tall.plan.map("out").box == (128, 16)
    assert tall.plan.launch.grid(13, 1) == 8 and tall.plan.b_scale_mode == "uniform"
    assert not check_plan(tall.plan, H200_SXM)
    for problem, forced, rule in [
        (GemmProblem(33, 1000, 2320), (), "block_n is the token columns"),
        (GemmProblem(8, 1000, 2320), (("block_n", 16), ("block_m", 192)), "block_m is the tile's weight rows"),
        (GemmProblem(20, 1000, 2320), (("block_n", 16),), "tokens do not fit"),
        (GemmProblem(8, 1000, 2320, out_dtype=DType.FP32), (), "dense e4m3 GEMMs"),
        (GemmProblem(8, 1000, 2304), (("cluster", 2),), "needs cluster=1"),
        (GemmProblem(8, 1000, 2320), (("k_splits", 2),), "must divide the 19 K blocks"),
        (GemmProblem(256, 1024, 2048, kind=GemmKind.M_GROUPED_MASKED, groups=2), (), "dense e4m3 GEMMs"),
    ]:
        with pytest.raises(IllegalConfigError, match=rule):
            run_pipeline(Kernel(problem, forced=(("swap_ab", 1), *forced)), H200_SXM)


@pytest.mark.parametrize("block_n,early", [(64, True), (128, True), (144, True), (152, False), (160, False)])
def test_column_scales_load_early_where_registers_hold_them(block_n: int, early: bool) -> None:
    """1x128/1x128: the column B scales go to registers at the issue when 2 per 8-column group fit beside fin and acc
    (at 232 registers up to 128x144); wider tiles load them in the promotion. Other recipes never do."""
    wgrad = GemmProblem(4096, 7168, 4096, out_dtype=DType.FP32, accumulate=True, scales=ScaleRecipe.A1x128_B1x128)
    forced = {"block_m": 128, "block_n": block_n, "cluster": 1, "k_splits": 1, "swap_ab": 0, "acc_sets": 1}
    kernel = run_pipeline(Kernel(wgrad, forced=tuple(sorted(forced.items()))), H200_SXM)
    assert kernel.plan.early_column_scales is early
    assert ("column B scales loaded at the issue" in "\n".join(kernel.plan.render_lines())) is early
    block = run_pipeline(Kernel(GemmProblem(4096, 7168, 4096)), H200_SXM)
    assert not block.plan.early_column_scales


PINGPONG_PROBLEMS = {
    "bf16": GemmProblem(4096, 7168, 2048, a_dtype=DType.BF16, b_dtype=DType.BF16, scales=ScaleRecipe.NONE),
    "tensor": GemmProblem(1000, 7168, 1536, scales=ScaleRecipe.TENSOR),
    "channel-fp32": GemmProblem(300, 1000, 2320, scales=ScaleRecipe.CHANNEL, out_dtype=DType.FP32, accumulate=True),
    "bf16-contiguous": GemmProblem(4096, 4096, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=4,
                                   a_dtype=DType.BF16, b_dtype=DType.BF16, scales=ScaleRecipe.NONE),
    "bf16-masked": GemmProblem(150, 1024, 512, kind=GemmKind.M_GROUPED_MASKED, groups=3, a_dtype=DType.BF16,
                               b_dtype=DType.BF16, scales=ScaleRecipe.NONE),
}


@pytest.mark.parametrize("tag", list(PINGPONG_PROBLEMS))
@pytest.mark.parametrize("block_m,cluster", [(128, 1), (64, 1), (128, 2)])
def test_pingpong_plan(tag: str, block_m: int, cluster: int) -> None:
    """GemmConfig.pingpong: each math warpgroup owns whole block_m x block_n tiles: its own D tile in shared memory
    (twice the cooperative D region), a D box of the tile's rows stored at the tile's row, one warpgroup's releases
    per slot, two turn barriers after the ring's, and the main loop handing the turn over after its last issue."""
    problem = PINGPONG_PROBLEMS[tag]
    pins = {"block_m": block_m, "block_n": 128, "cluster": cluster, "stages": 3}
    coop, pp = (run_pipeline(Kernel(problem, forced=tuple(sorted({**pins, "pingpong": on}.items()))), H200_SXM)
                for on in (0, 1))
    c, plan = pp.config, pp.plan
    assert c is not None and plan is not None and coop.plan is not None
    assert (c.math_warpgroups, c.rows_per_math_wg, c.waves) == (2, block_m, block_m // 64)
    assert plan.pingpong and plan.d_store.per_warpgroup and "_pp" in pp.name and "_pp" not in coop.name
    assert plan.map("out").box[1] == block_m and plan.d_store.atom_bytes == 2 * block_m * plan.d_store.row_bytes
    assert plan.smem.d_bytes == 2 * coop.plan.smem.d_bytes
    assert plan.smem.total - plan.barriers.offset == coop.plan.smem.total - coop.plan.barriers.offset + 16
    assert plan.barriers.empty_arrivals == 4 * cluster  # one warpgroup's warps, per cluster CTA
    assert not check_plan(plan, H200_SXM)
    text = render(pp, __version__)
    assert text.count("mbar_arrive(turn_bar(smem, warpgroup ^ 1));") == 1
    assert text.count("mbar_wait(turn_bar(smem, warpgroup), turn_phase);") == 1
    assert "mbar_init(turn_bar(smem, w), 128)" in text
    assert "warpgroup * ROWS_PER_WG + row_in_wg) * D_ROW_BYTES" in text  # staged in its own rows of the D tile
    assert "+ warpgroup * ROWS_PER_WG * D_ROW_BYTES, tile.n0 + j * D_ATOM_COLS, " in text  # stored from there
    assert "warpgroup * ROWS_PER_WG + w * 64" not in text and "warpgroup * ROWS_PER_WG * BLOCK_K_BYTES" not in text
    assert "turn_bar" not in render(coop, __version__)
    broken = dataclasses.replace(plan, d_store=dataclasses.replace(plan.d_store, per_warpgroup=False))
    assert any("D box" in e for e in check_plan(broken, H200_SXM))


@pytest.mark.parametrize("problem,pins,match", [
    (GemmProblem(4096, 7168, 2048), {"block_m": 64, "block_n": 96, "acc_sets": 2}, "acc_sets=2: a promoting"),
    (GemmProblem(4096, 7168, 2048), {"block_m": 128, "block_n": 128, "cross_tile": 1}, "cross_tile=0"),
    (GemmProblem(4096, 7168, 2048, out_dtype=DType.E4M3), {"block_m": 128, "block_n": 128}, "plain epilogues"),
    (PROBLEMS["wgrad"], {"block_m": 64, "block_n": 160}, "registers: block 64x160"),
    (PINGPONG_PROBLEMS["bf16"], {"block_m": 256}, "block_m is one math warpgroup's tile"),
    (PINGPONG_PROBLEMS["bf16"], {"block_m": 128, "block_n": 64, "k_splits": 2}, "k_splits=1"),
    (PINGPONG_PROBLEMS["bf16"], {"block_m": 128, "epilogue_per_wg": 1}, "epilogue_per_wg=0"),
    (PINGPONG_PROBLEMS["bf16"], {"block_m": 128, "block_n": 256}, "registers: block 128x256"),
])
def test_pingpong_rules(problem: GemmProblem, pins: dict[str, int], match: str) -> None:
    """What the ping-pong consumer does not implement is refused by name; a warpgroup's own 128x256 tile needs 256
    accumulator registers, and its scales beside the tile PINGPONG_SCALE_REGS more: the register rule refuses those."""
    with pytest.raises(IllegalConfigError, match=re.escape(match)):
        run_pipeline(Kernel(problem, forced=tuple(sorted({**pins, "pingpong": 1}.items()))), H200_SXM)


@pytest.mark.parametrize("tag", ["bf16", "tensor", "channel-fp32"])
def test_multicast_b_plan(tag: str) -> None:
    """GemmConfig.multicast_b: a cluster of two M-neighbours sharing the B tile. Rank 0 multicasts B and each CTA
    loads its own A; the scheduler pairs M blocks (M_PAIR 2) where the A pair pairs N blocks; the grid counts an odd
    M-block count's last pair whole (its second tile past M); the name says which operand the pair shares."""
    problem = PINGPONG_PROBLEMS[tag]
    pins = {"block_m": 128, "block_n": 128, "cluster": 2, "stages": 3}
    mca, mcb = (run_pipeline(Kernel(problem, forced=tuple(sorted({**pins, "multicast_b": on}.items()))), H200_SXM)
                for on in (0, 1))
    assert mcb.plan is not None and mca.plan is not None and "_mc2b_" in mcb.name and "_mc2a_" in mca.name
    assert mcb.plan.launch.m_pair == 2 and mca.plan.launch.m_pair == 1
    assert mcb.plan.barriers.empty_arrivals == mca.plan.barriers.empty_arrivals  # both CTAs release every slot
    assert not check_plan(mcb.plan, H200_SXM)
    m_blocks = (problem.m + 127) // 128
    assert mcb.plan.launch.tiles(problem.m, 1) == (m_blocks + 1) // 2 * 2 * problem.n_blocks(128)
    text, a_text = render(mcb, __version__), render(mca, __version__)
    assert "constexpr int M_PAIR = 2;" in text and "constexpr int M_PAIR = 1;" in a_text
    assert "tma_load_2d_multicast(smem + B_OFFSET" in text and "tma_load_2d_multicast(a_dst" not in text
    assert "tma_load_2d_multicast(a_dst" in a_text and "tma_load_2d_multicast(smem + B_OFFSET" not in a_text
    assert "m_block = (local / width) * M_PAIR + static_cast<int>(cta_rank);" in text


@pytest.mark.parametrize("problem,pins,match", [
    (PINGPONG_PROBLEMS["bf16"], {"cluster": 1}, "needs cluster=2"),
    (PINGPONG_PROBLEMS["bf16-contiguous"], {"cluster": 2, "block_m": 128}, "of a dense GEMM"),
    (PINGPONG_PROBLEMS["bf16"], {"cluster": 2, "evict_first": 1}, "evict_first=0"),
    (PINGPONG_PROBLEMS["bf16"], {"cluster": 2, "a_shift": 1}, "a_shift=0"),
])
def test_multicast_b_rules(problem: GemmProblem, pins: dict[str, int], match: str) -> None:
    """What the B-multicast pair does not implement is refused by name: a grouped layout (its M-neighbours may be
    different experts), no pair, the evict_first policy on the shared load, the shifted last A box."""
    with pytest.raises(IllegalConfigError, match=re.escape(match)):
        run_pipeline(Kernel(problem, forced=tuple(sorted({**pins, "multicast_b": 1}.items()))), H200_SXM)
