"""bench/fit_cost.py on the CPU: its argument errors, and a held coefficient stays held through a fit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "fit_cost.py"
RUN = ROOT / "bench" / "results" / "2026-12-06" / "whole-k-h100" / "tune_raw.jsonl"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


def test_bad_arguments_are_named(tmp_path: Path) -> None:
    missing = _run(str(tmp_path / "none.jsonl"), "--target", "h100")
    assert missing.returncode == 2 and "none.jsonl: no such tune_raw.jsonl file" in missing.stderr
    bogus = _run(str(RUN), "--target", "h100", "--fix", "bogus=1")
    assert bogus.returncode == 2 and "--fix 'bogus=1': expected NAME=VALUE" in bogus.stderr
    word = _run(str(RUN), "--target", "h100", "--fix", "l2_bytes_per_s=fast")
    assert word.returncode == 2 and "VALUE must be a number" in word.stderr


def test_a_fixed_coefficient_is_not_fitted_and_held_out_runs_are_reported(tmp_path: Path) -> None:
    """Two problems of a committed tune run, one sweep: the fixed rate is printed unchanged, the other run reported."""
    lines = RUN.read_text().splitlines()
    fit_on, held = tmp_path / "fit.jsonl", tmp_path / "held.jsonl"
    fit_on.write_text(lines[0] + "\n")
    held.write_text(lines[1] + "\n")
    out = _run(str(fit_on), "--target", "h100", "--sweeps", "1", "--fix", "l2_bytes_per_s=9e12", "--test", str(held))
    assert out.returncode == 0, out.stderr
    assert "  l2_bytes_per_s: 9e+12 -> 9e+12" in out.stdout
    assert out.stdout.count("held out") == 2 and out.stdout.count("of 1\n") == 4  # before/after, fitted and held out
    assert "the model's own pick (no table) timed in the run(s): " in out.stdout
    assert json.loads(lines[1])["problem"]["short"]  # the held-out record is a real problem


def test_own_pick_is_the_models_selection_against_the_runs_best(tmp_path: Path) -> None:
    """The issue's measure: this tree's selection (no table) found among a run's timed rows by name, then compared with
    the best by median and by fastest round; a run that did not time it leaves it uncounted."""
    sys.path.insert(0, str(ROOT / "bench"))
    import fit_cost

    from gemmgen.ir import Kernel, preset
    from gemmgen.passes import run_pipeline

    rec = json.loads(RUN.read_text().splitlines()[0])
    pick = run_pipeline(Kernel(fit_cost.problem_of(rec["problem"])), preset("h100")).name

    def own_line(pick_times: list[float], other: float, name: str = pick) -> str:
        rows = [dict(row, name=f"other{i}", us=other, all_us=[other], error=None) for i, row in enumerate(rec["rows"])]
        rows[0].update(name=name, us=sorted(pick_times)[len(pick_times) // 2], all_us=pick_times)
        path = tmp_path / "run.jsonl"
        path.write_text(json.dumps(dict(rec, rows=rows)) + "\n")
        out = _run(str(path), "--target", "h100", "--sweeps", "0")
        assert out.returncode == 0, out.stderr
        return next(line for line in out.stdout.splitlines() if line.startswith("the model's own pick"))

    assert own_line([1.0, 1.0, 1.5], 0.97).endswith("1 of 1; within 5% of the best timed candidate: 1 by medians, "
                                                     "1 by fastest rounds")
    # a median 1.3x the best, but a fastest round within 5% of it
    assert own_line([1.0, 1.3, 1.3], 0.97).endswith("0 by medians, 1 by fastest rounds")
    assert own_line([1.0], 0.97, name="not_the_pick").endswith("0 of 1; within 5% of the best timed candidate: "
                                                               "0 by medians, 0 by fastest rounds")


def test_only_searches_the_named_coefficients(tmp_path: Path) -> None:
    """--only: an unknown name is an argument error; a fit leaves every other coefficient at its start value."""
    bogus = _run(str(RUN), "--target", "h100", "--only", "bogus")
    assert bogus.returncode == 2 and "--only 'bogus': expected names from" in bogus.stderr
    one = tmp_path / "one.jsonl"
    one.write_text(RUN.read_text().splitlines()[0] + "\n")
    out = _run(str(one), "--target", "h100", "--sweeps", "2", "--only", "dirty_writeback")
    assert out.returncode == 0, out.stderr
    changes = dict(line.strip().split(": ", 1) for line in out.stdout.splitlines()
                   if line.startswith("  ") and " -> " in line and not line.startswith("  miss"))
    assert "dirty_writeback" in changes and len(changes) > 10
    held = {name: pair.split(" -> ") for name, pair in changes.items() if name != "dirty_writeback"}
    assert all(before == after for before, after in held.values()), held
