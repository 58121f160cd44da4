"""bench/sweep_family.py on the CPU: candidate generation against the real pass pipeline and legality rules (H200
preset, nothing compiled), and main() end to end with stubbed compiles, inputs, calls and timer, so the device
script's rows, table, budget and failure handling cannot break silently."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import sweep_family as sf  # noqa: E402

import gemmgen  # noqa: E402
from gemmgen.errors import IllegalConfigError  # noqa: E402
from gemmgen.ir import Kernel  # noqa: E402
from gemmgen.passes import run_pipeline  # noqa: E402
from gemmgen.stages import forced_fields  # noqa: E402

H200 = gemmgen.H200_SXM
ROW_KEYS = {"recipe", "m", "n", "k", "config", "pinned", "name", "stages", "us", "us_rounds", "tflops", "default",
            "speedup_vs_default"}


def test_default_shapes_and_order() -> None:
    assert sf.DEFAULT_SHAPES["tensor"] == sf.DEFAULT_SHAPES["channel"] == [
        (4096, 2112, 7168), (4096, 32768, 512), (4096, 7168, 2048), (4096, 4096, 7168)]
    assert sf.DEFAULT_SHAPES["bf16"] == [(64, 2112, 7168), (128, 2112, 7168), (128, 4096, 7168), (4096, 2112, 7168),
                                         (4096, 32768, 512)]
    assert sf.DEFAULT_SHAPES["wgrad"] == [(7168, 2112, 4096), (2048, 7168, 4096), (7168, 4096, 4096),
                                          (512, 32768, 4096)]
    order = sf.shape_order(list(sf.RECIPES), None)
    assert len(order) == 17
    # recipe by recipe in turn, so a budget cut leaves each recipe its first shapes
    assert [r for r, *_ in order[:4]] == ["tensor", "channel", "bf16", "wgrad"]
    assert order[-1] == ("bf16", 4096, 32768, 512)
    assert sf.shape_order(["wgrad", "bf16"], [(256, 256, 512)]) == [("wgrad", 256, 256, 512), ("bf16", 256, 256, 512)]
    assert sf.parse_shape("4096x2112x7168") == (4096, 2112, 7168)
    assert sf.parse_recipes("bf16,wgrad") == ["bf16", "wgrad"]
    import argparse

    for bad in ("4096x2112", "0x8x16"):
        with pytest.raises(argparse.ArgumentTypeError):
            sf.parse_shape(bad)
    with pytest.raises(argparse.ArgumentTypeError):
        sf.parse_recipes("tensor,block")


@pytest.mark.parametrize("recipe,shape", [(r, s) for r in sf.RECIPES for s in sf.DEFAULT_SHAPES[r][:2]])
def test_candidates_are_legal_distinct_and_pinned(recipe: str, shape: tuple[int, int, int]) -> None:
    m, n, k = shape
    prob = sf.problem(recipe, m, n, k)
    cands, illegal = sf.candidates(recipe, m, n, k, H200)
    default = run_pipeline(Kernel(prob), H200)
    assert cands[0].default and cands[0].pinned is None and cands[0].name == default.name
    assert sum(c.default for c in cands) == 1
    assert len({c.name for c in cands}) == len(cands)  # each kernel timed once
    assert 4 <= len(cands) <= 24, f"{len(cands)} candidates: not a small set"
    for c in cands[1:]:
        kern = run_pipeline(Kernel(prob, forced=forced_fields(c.pinned)), H200)
        assert kern.name == c.name and kern.config is not None and c.pinned is not None
        assert gemmgen.check(prob, kern.config, H200) == []
        for key, value in c.pinned.items():  # pinned fields hold; the rest (stages) is the passes' choice
            assert c.config[key] == value
        assert c.config["block_m"] in sf.block_ms(m) and (c.config["stages"] or 0) >= 3
    configs = sf.candidate_configs(recipe, m, n, k, H200)
    refused = [p for p in configs if sf.resolve(prob, p, H200) is None]
    assert len(refused) == illegal
    for pinned in refused:  # what was dropped is what the legality rules refuse
        with pytest.raises(IllegalConfigError):
            run_pipeline(Kernel(prob, forced=forced_fields(pinned)), H200)
    if recipe == "wgrad":
        assert illegal > 0
        sets = {c.config["acc_sets"] for c in cands}
        assert sets == {1, 2}
        assert all(c.config["block_m"] in (64, 128) for c in cands if c.config["acc_sets"] == 2)
    if m <= 64:
        assert {c.config["block_m"] for c in cands} == {64}
    if m <= sf.SMALL_M:
        assert {c.config["k_splits"] for c in cands} >= {1, 2, 4}
    else:  # a multicast pair wherever a tried width gives an even count of N blocks
        even = any(prob.n_blocks(c.config["block_n"]) % 2 == 0 for c in cands)
        assert {c.config["cluster"] for c in cands} == ({1, 2} if even else {1})


def test_list_mode_counts(capsys) -> None:
    result = sf.main(["--out", "unused.json", "--list", "--recipes", "tensor,channel"],
                     hooks=sf.Hooks(target=lambda: pytest.fail("no target")))
    assert result["rows"] == [] and result["candidates"] >= result["kernels"] > 50
    out = capsys.readouterr().out
    assert "distinct kernels to compile" in out and "default" in out


# ------------------------------------------------------------------------------------- main() with stubbed GPU
def _stub_hooks(calls: list, built: list, fail: set[str] | None = None, seen_wrong: set[str] | None = None):
    """Inputs name their shape; a call returns its kernel's name (resolved as the API would); the timer makes a
    candidate's time from its name (the default 100 us, 128x128 tiles 80 us, the rest 120 us + a little)."""
    fail, seen_wrong = fail or set(), seen_wrong or set()

    def make_inputs(recipe, m, n, k):
        return {"key": (recipe, m, n, k)}

    def make_call(recipe, inputs, pinned):
        def call():
            prob = sf.problem(*inputs["key"])
            name = sf.resolve(prob, pinned, H200).name
            calls.append((inputs["key"], name))
            return name
        return call

    def timer(fn):
        name = fn()
        default = run_pipeline(Kernel(sf.problem(*calls[-1][0])), H200).name
        us = 100.0 if name == default else 80.0 if "m128n128k" in name else 120.0 + len(name) % 7
        return us * 1e-6, ["other_kernel" if name in seen_wrong else name[:80]]

    def build_one(job):
        built.append(job)
        name = job[-1]
        return name, ("CompileError: nvrtc said no" if name in fail else None)

    return sf.Hooks(timer=timer, make_inputs=make_inputs, make_call=make_call, build_one=build_one,
                    target=lambda: H200)


def test_main_rows_table_and_failures(tmp_path: Path, capsys) -> None:
    cands, _ = sf.candidates("tensor", 4096, 2112, 7168, H200)
    broken, wrong = cands[3].name, cands[4].name
    calls: list = []
    built: list = []
    out = tmp_path / "sweep_family.json"
    sf.main(["--out", str(out), "--recipes", "tensor,wgrad", "--shapes", "4096x2112x7168", "--jobs", "1"],
            hooks=_stub_hooks(calls, built, fail={broken}, seen_wrong={wrong}), env=lambda: {"gpu": "stub"})
    result = json.loads(out.read_text())
    assert result["env"] == {"gpu": "stub"} and result["not_run"] == [] and result["rounds"] == 2
    assert result["compile_failed"] == {broken: "CompileError: nvrtc said no"}
    rows = result["rows"]
    wgrad_cands, _ = sf.candidates("wgrad", 4096, 2112, 7168, H200)
    assert len(built) == len(cands) + len(wgrad_cands)  # every distinct kernel compiled once, before any timing
    assert len(rows) == len(built)
    for recipe in ("tensor", "wgrad"):
        shape_rows = [r for r in rows if r["recipe"] == recipe]
        assert all(ROW_KEYS <= set(r) for r in shape_rows)
        (dflt,) = [r for r in shape_rows if r["default"]]
        assert dflt["us"] == pytest.approx(100.0) and dflt["speedup_vs_default"] == pytest.approx(1.0)
        assert dflt["pinned"] is None and dflt["config"]["block_m"] in (64, 128, 256)
        timed = [r for r in shape_rows if r["us"] is not None]
        assert [r["us"] for r in timed] == sorted(r["us"] for r in timed)  # best first
        assert shape_rows[: len(timed)] == timed  # untimed rows last
        for r in timed:
            assert len(r["us_rounds"]) == 2
            assert r["speedup_vs_default"] == pytest.approx(100.0 / r["us"])
            assert r["tflops"] == pytest.approx(2 * 4096 * 2112 * 7168 / (r["us"] * 1e-6) / 1e12)
            assert r["stages"] == r["config"]["stages"]
    errors = {r["name"]: r["error"] for r in rows if "error" in r}
    assert errors[broken].startswith("compile failed: CompileError")
    assert "the profiler saw ['other_kernel']" in errors[wrong]
    assert {r["name"] for r in rows if r["us"] is None} == {broken, wrong}
    # alternating rounds: the tensor shape's second pass runs the candidates in the reverse order; the compile
    # failure is never called, the wrong kernel only once (its error stands)
    tensor_calls = [name for key, name in calls if key[0] == "tensor"]
    live = len(cands) - 1
    assert len(tensor_calls) == 2 * live - 1 and broken not in tensor_calls
    assert [c for c in tensor_calls[:live] if c != wrong] == tensor_calls[live:][::-1]
    printed = capsys.readouterr().out
    from gemmgen.ir import H200_SXM, GemmProblem, Kernel, ScaleRecipe
    from gemmgen.passes import run_pipeline
    c = run_pipeline(Kernel(GemmProblem(4096, 2112, 7168, scales=ScaleRecipe.TENSOR)), H200_SXM).config
    default = f"{c.block_m}x{c.block_n} c{c.cluster} s{c.stages} a{c.acc_sets}"  # select_config's pick
    assert f"tensor 4096x2112x7168: default {default} 100.0 us" in printed
    assert "<- default" in printed and "compile failed" in printed
    assert "best 128x128" in printed  # the stub timer makes 128x128 the fastest


def test_budget_stops_starting_shapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """A fake clock advancing 1 s per timing: the first shape runs (no estimate yet); the second is predicted to
    overrun the 20 s budget and is not started, nor the rest; they are listed and the JSON is still written."""
    now = [0.0]
    monkeypatch.setattr(sf, "_clock", lambda: now[0])
    calls: list = []
    built: list = []
    hooks = _stub_hooks(calls, built)
    inner = hooks.timer

    def timer(fn):
        now[0] += 1.0
        return inner(fn)

    hooks.timer = timer
    out = tmp_path / "s.json"
    result = sf.main(["--out", str(out), "--recipes", "tensor,channel,bf16", "--shapes", "4096x4096x7168",
                      "--budget-s", "20", "--jobs", "1"], hooks=hooks, env=dict)
    assert {r["recipe"] for r in result["rows"]} == {"tensor"}
    assert result["not_run"] == ["channel 4096x4096x7168", "bf16 4096x4096x7168"]
    assert json.loads(out.read_text())["not_run"] == result["not_run"]
    assert "budget: " in capsys.readouterr().out
    # a budget already spent: nothing is timed
    result = sf.main(["--out", str(out), "--recipes", "bf16", "--shapes", "128x2112x7168", "--budget-s", "0",
                      "--jobs", "1"], hooks=_stub_hooks([], []), env=dict)
    assert result["rows"] == [] and result["not_run"] == ["bf16 128x2112x7168"]


def test_table_with_untimed_default() -> None:
    cfg = {"block_m": 128, "block_n": 256, "cluster": 2, "stages": 3, "k_splits": 1, "acc_sets": 2}
    rows = [{"recipe": "bf16", "m": 8, "n": 16, "k": 64, "config": cfg, "us": 5.0, "tflops": 1.0, "default": False,
             "speedup_vs_default": None},
            {"recipe": "bf16", "m": 8, "n": 16, "k": 64, "config": {**cfg, "k_splits": 4}, "us": None, "tflops": None,
             "default": True, "speedup_vs_default": None, "error": "RuntimeError: boom"}]
    text = sf.table(rows)
    assert text.startswith("bf16 8x16x64: default not timed")
    assert "128x256 c2 s3 a2 ks4  <- default  (RuntimeError: boom)" in text
