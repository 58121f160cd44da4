"""Selection as data (gemmgen/tuning/): the candidate space (every candidate legal, pins a filter), the cost model's
properties, tuned tables (lookup, precedence, the user's pins over a row, an illegal row skipped, `off`), and the
tune command's CPU paths (--dry-run, errors). No GPU."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import gemmgen
from gemmgen.cli import main
from gemmgen.ir import H100_SXM, H200_SXM, DType, GemmKind, GemmProblem, ScaleRecipe
from gemmgen.legality import check, check_plan
from gemmgen.settings import Settings
from gemmgen.stages import decide
from gemmgen.tuning import cost, space, table

SAMPLE = [GemmProblem(4096, 7168, 2048), GemmProblem(8, 2112, 7168), GemmProblem(64, 4096, 7168),
          GemmProblem(4096, 4096, 7168, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=4),
          GemmProblem(256, 7168, 2048, kind=GemmKind.M_GROUPED_MASKED, groups=4),
          GemmProblem(512, 1024, 4096, out_dtype=DType.FP32, accumulate=True, scales=ScaleRecipe.A1x128_B1x128),
          GemmProblem(128, 4096, 7168, a_dtype=DType.BF16, b_dtype=DType.BF16, scales=ScaleRecipe.NONE)]


@pytest.mark.parametrize("problem", SAMPLE, ids=[p.short() for p in SAMPLE])
def test_every_candidate_is_legal_and_distinct(problem: GemmProblem) -> None:
    cands = space.candidates(problem, H100_SXM)
    assert len(cands) >= 8, problem.short()
    assert len({c.name for c in cands}) == len(cands)
    for c in cands:
        assert check(problem, c.kernel.config, H100_SXM) == [] and check_plan(c.kernel.plan, H100_SXM) == []
        assert all(getattr(c.kernel.config, k) == v for k, v in c.pins)


def test_pingpong_is_a_dimension_of_the_whole_k_recipes() -> None:
    """The ping-pong consumer is enumerated for the whole-K recipes (one K split, 64/128-row tiles, two tiles or more
    per CTA) and never for a promoting one; the model hides the share 1 - pingpong_exposed of a ping-pong tile's
    epilogue, but for the CTA's last."""
    bf16 = SAMPLE[-1]
    pp = [c for c in space.candidates(bf16, H100_SXM) if c.kernel.config.pingpong]
    assert pp and all(c.kernel.config.block_m in (64, 128) and c.kernel.config.k_splits == 1 for c in pp)
    assert all(bf16.m_blocks(c.kernel.config.block_m) * bf16.n_blocks(c.kernel.config.block_n) >= 2 * 132 for c in pp)
    assert all(" pp" in space.label(c) for c in pp)
    assert not any(c.kernel.config.pingpong for p in SAMPLE[:-1] for c in space.candidates(p, H100_SXM)
                   if p.scales.promotes)
    coeffs = cost.coefficients(H100_SXM)
    big = GemmProblem(4096, 7168, 2048, a_dtype=DType.BF16, b_dtype=DType.BF16, scales=ScaleRecipe.NONE)
    kernel = decide(big, (("block_m", 128), ("block_n", 128), ("pingpong", 1)), H100_SXM,
                    Settings.from_env({"GEMMGEN_TUNED": "off"}))
    hidden = cost.estimate(kernel, dataclasses.replace(coeffs, pingpong_exposed=0.2))[0]
    exposed = cost.estimate(kernel, dataclasses.replace(coeffs, pingpong_exposed=1.0))[0]
    assert hidden < exposed
    # a CTA with one tile has no second tile for its other warpgroup: no ping-pong candidate there
    small = GemmProblem(64, 2048, 7168, a_dtype=DType.BF16, b_dtype=DType.BF16, scales=ScaleRecipe.NONE)
    assert not any(c.kernel.config.pingpong for c in space.candidates(small, H100_SXM))


def test_pins_filter_the_space() -> None:
    problem = GemmProblem(64, 4096, 7168)
    pinned = space.candidates(problem, H100_SXM, {"block_n": 64, "k_splits": 2})
    assert pinned and all(c.kernel.config.block_n == 64 and c.kernel.config.k_splits == 2 for c in pinned)
    assert len(pinned) < len(space.candidates(problem, H100_SXM))


def test_the_model_grows_with_the_work() -> None:
    coeffs = cost.coefficients(H200_SXM)
    assert cost.coefficients(H100_SXM).stream_bytes_per_s < coeffs.stream_bytes_per_s  # the H100's own data

    def seconds(p: GemmProblem) -> float:
        kernel = decide(p, (("block_m", 128), ("block_n", 128)), H200_SXM, Settings.from_env({"GEMMGEN_TUNED": "off"}))
        return cost.estimate(kernel, coeffs)[0]

    short, long_k = seconds(GemmProblem(4096, 4096, 2048)), seconds(GemmProblem(4096, 4096, 8192))
    few, many = seconds(GemmProblem(1024, 4096, 4096)), seconds(GemmProblem(8192, 4096, 4096))
    assert 0 < short < long_k and 0 < few < many
    kernel = decide(GemmProblem(4096, 7168, 16384), (), H200_SXM, Settings.from_env({"GEMMGEN_TUNED": "off"}))
    est, terms = cost.estimate(kernel, coeffs)
    assert terms["rounds"] >= 1 and est >= terms["compute"] and "estimate" in cost.describe(est, terms)


def _row(problem: GemmProblem, m: tuple[int, int], config: dict[str, int], gain: float = 1.05) -> dict:
    return {**table.problem_key(problem), "m": list(m), "config": config,
            "provenance": {"gpu": "test", "date": "2026-12-06", "gain": gain}}


@pytest.fixture
def tables(monkeypatch, tmp_path: Path):
    """A clean process table list and cache folder for each test."""
    fresh = table.Tables()
    monkeypatch.setattr(table, "TABLES", fresh)
    monkeypatch.setattr("gemmgen.stages.TABLES", fresh)
    return fresh, tmp_path


def test_a_table_row_decides_the_fields_it_names(tables) -> None:
    fresh, tmp = tables
    p = GemmProblem(64, 4096, 7168)
    path = tmp / "t.json"
    table.write_rows(path, H100_SXM, [_row(p, (33, 64), {"block_m": 64, "block_n": 128, "k_splits": 1})])
    settings = Settings.from_env({"GEMMGEN_CACHE_DIR": str(tmp / "cache"), "GEMMGEN_TUNED": str(path)})
    k = decide(p, (), H100_SXM, settings)
    assert (k.config.block_n, k.config.k_splits) == (128, 1) and k.reasons[0][0] == "tuned"
    assert "1.050x the default" in k.reasons[0][1]
    outside = decide(GemmProblem(65, 4096, 7168), (), H100_SXM, settings)  # M past the row's range
    assert not any(who == "tuned" for who, _ in outside.reasons)
    other_n = decide(GemmProblem(64, 2048, 7168), (), H100_SXM, settings)  # another problem class
    assert not any(who == "tuned" for who, _ in other_n.reasons)
    pinned = decide(p, (("block_n", 64),), H100_SXM, settings)  # the user's pins win over the row
    assert pinned.config.block_n == 64 and "skipped, timed with block_n=" in dict(pinned.reasons)["tuned"]
    off = decide(p, (), H100_SXM, Settings.from_env({"GEMMGEN_CACHE_DIR": str(tmp / "cache"), "GEMMGEN_TUNED": "off"}))
    assert not any(who == "tuned" for who, _ in off.reasons)


def test_precedence_and_an_illegal_row(tables) -> None:
    fresh, tmp = tables
    p = GemmProblem(64, 4096, 7168)
    env_path, loaded = tmp / "env.json", tmp / "loaded.json"
    table.write_rows(env_path, H100_SXM, [_row(p, (64, 64), {"block_n": 96})])
    table.write_rows(loaded, H100_SXM, [_row(p, (1, 128), {"block_n": 160})])
    settings = Settings.from_env({"GEMMGEN_CACHE_DIR": str(tmp / "cache"), "GEMMGEN_TUNED": str(env_path)})
    assert decide(p, (), H100_SXM, settings).config.block_n == 96
    user = table.user_table(settings.cache_dir, H100_SXM)  # the user table comes after GEMMGEN_TUNED
    table.write_rows(user, H100_SXM, [_row(p, (1, 4096), {"block_n": 112})])
    assert decide(p, (), H100_SXM, settings).config.block_n == 96
    table.load_tuned(loaded)  # a loaded table comes first
    assert decide(p, (), H100_SXM, settings).config.block_n == 160
    bad = tmp / "bad.json"
    table.write_rows(bad, H100_SXM, [_row(p, (1, 128), {"block_m": 256, "block_n": 256, "stages": 31})])
    table.load_tuned(bad)
    k = decide(p, (), H100_SXM, settings)
    assert "skipped, illegal" in k.reasons[0][1] and k.config.stages != 31


def test_write_rows_replaces_covered_rows_and_broken_tables_are_named(tables) -> None:
    _fresh, tmp = tables
    p = GemmProblem(64, 4096, 7168)
    path = tmp / "t.json"
    table.write_rows(path, H100_SXM, [_row(p, (64, 64), {"block_n": 96})])
    table.write_rows(path, H100_SXM, [_row(p, (1, 128), {"block_n": 160})])
    rows = table.read_rows(path)
    assert len(rows) == 1 and rows[0].config == {"block_n": 160}
    (tmp / "x.json").write_text("[1, 2]")
    with pytest.raises(table.TableError, match="x.json"):
        table.read_rows(tmp / "x.json")
    (tmp / "y.json").write_text(json.dumps({"format": table.FORMAT, "rows": [{"kind": "normal"}]}))
    with pytest.raises(table.TableError, match=r"y.json row 0: missing"):
        gemmgen.load_tuned(tmp / "y.json")
    row = _row(p, (1, 2), {"block_q": 1})
    (tmp / "z.json").write_text(json.dumps({"format": table.FORMAT, "rows": [row]}))
    with pytest.raises(table.TableError, match="unknown field 'block_q'"):
        table.read_rows(tmp / "z.json")


def test_tune_dry_run_and_errors(settings, monkeypatch) -> None:
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(settings.cache_dir))
    runner = CliRunner()
    res = runner.invoke(main, ["tune", "--shape", "64x2112x7168", "--dry-run", "--top", "3", "--target", "h100"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert "the default, its feature flips and the model's top 3" in lines[0] and "[default]" in lines[1]
    bf16 = runner.invoke(main, ["tune", "--shape", "4096x7168x2048", "--dtype-a", "bf16", "--dtype-b", "bf16",
                                "--dry-run", "--top", "4", "--target", "h100"])
    assert bf16.exit_code == 0 and any(line.endswith("pp]") or " pp " in line for line in bf16.output.splitlines())
    assert len(lines) >= 5 and all(re.search(r"\[\d+x\d+", line) for line in lines[2:])  # each a tile's label
    assert all("estimate" in line for line in lines[1:])
    bad = runner.invoke(main, ["tune", "--shape", "64x2112"])
    assert bad.exit_code != 0 and "MxNxK" in bad.output
    from gemmgen.runtime import driver

    monkeypatch.setattr(driver, "gpu_available", lambda: False)
    nogpu = runner.invoke(main, ["tune", "--shape", "64x2112x7168"])
    assert nogpu.exit_code == 1 and "--dry-run" in nogpu.output
    assert runner.invoke(main, ["tune", "--shape", "64x2112x7168", "--target", "h100"]).exit_code == 2


# ---------------------------------------------------------------- selection as a search (issue 39)

def test_selection_takes_the_least_estimate_of_the_candidates() -> None:
    """select_config (no table) picks the candidate the cost model estimates least with its features decided, and
    says so (bf16 M = 128: evict_first makes a 128-row tile, M's one block, beat the 64-row tiles it ties without)."""
    from gemmgen.ir import H100_SXM, GemmProblem, Kernel
    from gemmgen.passes import run_pipeline
    from gemmgen.tuning import cost, space

    bf16 = {"a_dtype": DType.BF16, "b_dtype": DType.BF16, "scales": ScaleRecipe.NONE}
    for problem in (GemmProblem(4096, 7168, 2048), GemmProblem(8, 7168, 2048), GemmProblem(128, 2112, 7168, **bf16)):
        chosen = run_pipeline(Kernel(problem), H100_SXM)
        coeffs = cost.coefficients(H100_SXM)
        best = min(cost.estimate(c.kernel, coeffs)[0] for c in space.candidates(problem, H100_SXM))
        assert cost.estimate(chosen, coeffs)[0] <= best * (1 + 1e-9)
        assert "least estimate" in chosen.reasons[0][1]


def test_per_warpgroup_epilogue_costs_beside_a_one_k_block_body() -> None:
    """The per-warpgroup epilogue is estimated to hide a share of the epilogue beside an unrolled main loop (dense
    wgrad: 4 k-blocks per body) and to add one beside a loop of one k-block per body (k-grouped), where it measured
    slower; with equal bytes and FLOPs (k-grouped 8 x 2048 rows against dense 16384 rows)."""
    from gemmgen.ir import H100_SXM, GemmProblem, Kernel
    from gemmgen.passes import run_pipeline
    from gemmgen.tuning import cost

    coeffs = cost.coefficients(H100_SXM)
    wgrad = {"scales": ScaleRecipe.A1x128_B1x128, "out_dtype": DType.FP32, "accumulate": True}
    pins = (("block_m", 128), ("block_n", 128), ("cluster", 1), ("stages", 4), ("evict_first", 0), ("sa_gather", 0),
            ("balanced", 0), ("cross_tile", 0), ("a_shift", 0))
    for problem, slower in ((GemmProblem(2048, 7168, 4096, kind=GemmKind.K_GROUPED, groups=8, **wgrad), True),
                            (GemmProblem(16384, 7168, 4096, **wgrad), False)):
        est = {}
        for per_wg in (0, 1):
            kernel = run_pipeline(Kernel(problem, forced=(*pins, ("epilogue_per_wg", per_wg))), H100_SXM)
            assert kernel.config.epilogue_per_wg == per_wg
            est[per_wg] = cost.estimate(kernel, coeffs)[0]
        assert (est[1] > est[0]) is slower, (problem, est)


def test_model_is_monotone_in_k_and_rounds() -> None:
    """More K (bytes and compute) or more rows (rounds) never makes a fixed kernel's estimate smaller."""
    from gemmgen.ir import H100_SXM, GemmProblem, Kernel
    from gemmgen.passes import run_pipeline
    from gemmgen.tuning import cost

    coeffs = cost.coefficients(H100_SXM)
    pins = (("block_m", 128), ("block_n", 128), ("cluster", 1), ("k_splits", 1), ("stages", 4), ("swap_ab", 0))
    prev = 0.0
    for k in (1024, 2048, 4096, 8192):
        est = cost.estimate(run_pipeline(Kernel(GemmProblem(4096, 4096, k), forced=pins), H100_SXM), coeffs)[0]
        assert est > prev
        prev = est
    prev = 0.0
    for m in (128, 1024, 4096, 16384):
        est = cost.estimate(run_pipeline(Kernel(GemmProblem(m, 4096, 4096), forced=pins), H100_SXM), coeffs)[0]
        assert est >= prev
        prev = est


@pytest.mark.parametrize("slug, least", [("h100", 103), ("h200", 30)])
def test_shipped_table_rows_are_legal_and_selected(slug: str, least: int) -> None:
    """Every row of a shipped table names a legal kernel for its problem on its GPU, and selection takes it."""
    from gemmgen.ir import DType, GemmKind, GemmProblem, ScaleRecipe, preset
    from gemmgen.settings import Settings
    from gemmgen.stages import decide
    from gemmgen.tuning.table import SHIPPED_DIR, read_rows

    rows = read_rows(SHIPPED_DIR / f"{slug}.json")
    assert len(rows) >= least
    settings = Settings.from_env()
    step = 7 if len(rows) > 50 else 1
    for row in rows[::step] + [r for r in rows if r.key[-1]]:  # a sample (all of a small table), and SwiGLU rows
        kind, scales, a, b, out, acc, groups, n, k, swiglu = row.key
        m = row.provenance.get("tuned_m", row.m_lo)  # a contiguous row's M_total is a multiple of 128
        problem = GemmProblem(m, n, k, kind=GemmKind(kind), groups=groups, a_dtype=DType(a), b_dtype=DType(b),
                              out_dtype=DType(out), accumulate=acc, scales=ScaleRecipe(scales), swiglu=swiglu)
        kernel = decide(problem, (), preset(slug), settings)
        assert kernel.config is not None
        assert all(getattr(kernel.config, f) == v for f, v in row.config.items()), row
        assert any(who == "tuned" for who, _ in kernel.reasons)
        assert kernel.name == row.provenance["kernel"], (kernel.name, row.provenance["kernel"])


def test_multicast_b_is_a_dimension_of_dense_problems() -> None:
    """A cluster pair sharing B (M-neighbours) is enumerated beside the A pair for dense problems, never for grouped
    ones; the model's L2 term counts the shared operand once per pair, so a wide tile (B rows > A rows) gains more
    from sharing B."""
    big = GemmProblem(4096, 7168, 2048, a_dtype=DType.BF16, b_dtype=DType.BF16, scales=ScaleRecipe.NONE)
    cands = space.candidates(big, H100_SXM)
    assert any(c.kernel.config.multicast_b for c in cands) and all(
        c.kernel.config.cluster == 2 for c in cands if c.kernel.config.multicast_b)
    assert any(" mc2b" in space.label(c) for c in cands) and any(" mc2a" in space.label(c) for c in cands)
    grouped = [p for p in SAMPLE if p.kind.is_grouped]
    assert grouped and not any(c.kernel.config.multicast_b for p in grouped for c in space.candidates(p, H100_SXM))
    coeffs = cost.coefficients(H100_SXM)
    off = Settings.from_env({"GEMMGEN_TUNED": "off"})
    l2 = {on: cost.estimate(decide(big, (("block_m", 128), ("block_n", 256), ("cluster", 2), ("multicast_b", on)),
                                   H100_SXM, off), coeffs)[1]["l2"] for on in (0, 1)}
    assert l2[1] < l2[0]
