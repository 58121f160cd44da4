"""bench/confirm_table.py on the CPU: a row is shipped only where a second run repeats its gain."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "confirm_table.py"
PROBLEM = {"m": 64, "n": 2112, "k": 7168, "kind": "normal", "groups": 1, "a_dtype": "e4m3", "b_dtype": "e4m3",
           "out_dtype": "bf16", "a_major": "k", "b_major": "k", "scales": "1x128/128x128", "accumulate": False,
           "swiglu": False, "short": "64x2112x7168"}


def _run_folder(path: Path, m: int, times: dict[str, float], winner: str) -> Path:
    """A tune_bench output folder with one problem at M = m: the default 'd' and the candidates' medians."""
    path.mkdir(parents=True, exist_ok=True)
    problem = dict(PROBLEM, m=m)
    rows = [{"name": name, "us": us, "error": "", "default": name == "d"} for name, us in times.items()]
    with open(path / "tune_raw.jsonl", "a") as f:
        f.write(json.dumps({"section": "prefill", "problem": problem, "rows": rows}) + "\n")
    table = json.loads((path / "table.json").read_text()) if (path / "table.json").is_file() else {
        "format": "gemmgen-tuned-1", "target": "h200", "rows": []}
    table["rows"].append({"kind": "normal", "scales": "1x128/128x128", "a": "e4m3", "b": "e4m3", "out": "bf16",
                          "accumulate": False, "groups": 1, "n": 2112, "k": 7168, "swiglu": False, "m": [m, m],
                          "config": {"block_m": 64}, "provenance": {"tuned_m": m, "kernel": winner}})
    (path / "table.json").write_text(json.dumps(table))
    return path


def test_only_rows_the_second_run_repeats_are_kept(tmp_path: Path) -> None:
    found, confirm = tmp_path / "a", tmp_path / "b"
    _run_folder(found, 64, {"d": 10.0, "w": 9.0}, "w")  # x1.11 found, x1.10 again: kept
    _run_folder(confirm, 64, {"d": 10.0, "w": 9.1}, "w")
    _run_folder(found, 128, {"d": 10.0, "v": 9.0}, "v")  # x1.11 found, x1.01 again: noise, dropped
    _run_folder(confirm, 128, {"d": 10.0, "v": 9.9}, "v")
    out = tmp_path / "table.json"
    done = subprocess.run([sys.executable, str(SCRIPT), str(found), str(confirm), "--out", str(out),
                           "--results", "bench/results/x", "--commit", "abc"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [r["provenance"]["tuned_m"] for r in rows] == [64]
    prov = rows[0]["provenance"]
    assert prov["us"] == 9.1 and prov["default_us"] == 10.0 and prov["found_gain"] == 1.1111
    assert prov["gain"] == round(10.0 / 9.1, 4) and prov["results"] == "bench/results/x"


def test_a_folder_without_a_run_is_an_argument_error(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), str(tmp_path), "--out", str(tmp_path / "t"),
                           "--results", "r", "--commit", "c"], capture_output=True, text=True)
    assert done.returncode == 2 and "expected a bench/tune_bench.py output folder" in done.stderr
