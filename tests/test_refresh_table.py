"""bench/refresh_table.py on the CPU: a row changes only where every run that timed both beat the selected kernel."""

from __future__ import annotations

import dataclasses
import gzip
import json
import subprocess
import sys
from pathlib import Path

from gemmgen.ir import GemmProblem, preset
from gemmgen.settings import Settings
from gemmgen.stages import decide
from gemmgen.tuning.table import SHIPPED_DIR

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "refresh_table.py"
PROBLEM = {"m": 64, "n": 2112, "k": 7168, "kind": "normal", "groups": 1, "a_dtype": "e4m3", "b_dtype": "e4m3",
           "out_dtype": "bf16", "a_major": "k", "b_major": "k", "scales": "1x128/128x128", "accumulate": False,
           "swiglu": False, "short": "64x2112x7168"}
WINNER = {"block_m": 64, "block_n": 32, "cluster": 1, "k_splits": 1, "stages": 8}


def _run(path: Path, m: int, times: dict[str, float]) -> Path:
    """A tune_raw file with one problem at M = m: each named kernel's median (the winner 'w' carries dims)."""
    rows = [{"name": name, "us": us, "error": "", "dims": WINNER if name == "w" else {}} for name, us in times.items()]
    record = {"section": "prefill", "problem": dict(PROBLEM, m=m, short=f"{m}x2112x7168"), "gpu": "H100",
              "m_range": None, "rows": rows}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "at") as f:
        f.write(json.dumps(record) + "\n")
    return path


def _pick(table: Path, m: int) -> str:
    settings = dataclasses.replace(Settings.from_env(), tuned=str(table))
    return decide(GemmProblem(m, 2112, 7168), (), preset("h100"), settings).name


def _refresh(table: Path, *runs: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, runs), "--target", "h100", "--table", str(table)],
                          capture_output=True, text=True)


def test_a_row_changes_only_where_every_run_repeats_the_gain(tmp_path: Path) -> None:
    table = tmp_path / "h100.json"
    table.write_text((SHIPPED_DIR / "h100.json").read_text())
    before = json.loads(table.read_text())["rows"]
    p64, p128 = _pick(table, 64), _pick(table, 128)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz"
    _run(a, 64, {p64: 10.0, "w": 9.0})  # x1.11 and x1.07: replaced
    _run(b, 64, {p64: 10.0, "w": 9.35})
    _run(a, 128, {p128: 10.0, "w": 9.0})  # x1.11 and x1.01: noise, kept
    _run(b, 128, {p128: 10.0, "w": 9.9})
    done = _refresh(table, a, b)
    assert done.returncode == 0, done.stderr
    rows = json.loads(table.read_text())["rows"]
    changed = [r for r in rows if r not in before]
    assert len(changed) == 1 and changed[0]["m"][0] <= 64 <= changed[0]["m"][1]
    assert changed[0]["config"] == WINNER
    prov = changed[0]["provenance"]
    assert prov["replaced_kernel"] == p64 and prov["kernel"] == "w"
    assert [r["us"] for r in prov["runs"]] == [9.0, 9.35] and prov["gain"] == round((10 / 9 + 10 / 9.35) / 2, 4)
    assert _pick(table, 128) == p128  # the M = 128 row is not touched


def test_one_run_is_not_enough_and_a_missing_run_is_an_argument_error(tmp_path: Path) -> None:
    table = tmp_path / "h100.json"
    table.write_text((SHIPPED_DIR / "h100.json").read_text())
    a = _run(tmp_path / "a.jsonl", 64, {_pick(table, 64): 10.0, "w": 8.0})
    done = _refresh(table, a)
    assert done.returncode == 0 and "no row beaten" in done.stdout
    assert table.read_text() == (SHIPPED_DIR / "h100.json").read_text()
    done = _refresh(table, tmp_path / "none.jsonl")
    assert done.returncode == 2 and "no such tune_raw file" in done.stderr
