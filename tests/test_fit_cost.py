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
    assert json.loads(lines[1])["problem"]["short"]  # the held-out record is a real problem
