"""Make a shipped table from two tuning runs: the rows one run found, kept where a second run confirms them.

Reads two folders bench/tune_bench.py wrote on one GPU (tune_raw.jsonl and table.json each). A row of the first run's
table (its winner) is kept where it beat that run's default by at least --min-gain and, timed again in the second run
beside the same default, beat it by --min-gain there too; its provenance then quotes the second run's medians (us,
default_us, gain) and the first run's gain (found_gain). A winner one run found by noise does not repeat.

    python bench/confirm_table.py RUN5 RUN6 --out gemmgen/tuning/tables/h200.json \
        --results bench/results/2026-12-06/tuner-h200 --commit 090ab49
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fit_cost import problem_of  # noqa: E402

from gemmgen.tuning.table import FORMAT, problem_key, row_key  # noqa: E402

MIN_GAIN = 1.03  # a gain the interleaved rounds repeat: runs differ by 1-2% on one kernel (bench/NOTES.md v0.40)


def _problem_key(raw: dict) -> tuple:
    """A tune_raw problem's table class (table.row_key) and its M."""
    return row_key(problem_key(problem_of(raw))) + (raw["m"],)


def _row_key(row: dict) -> tuple:
    return row_key(row) + (row["provenance"]["tuned_m"],)


def _timed(folder: Path) -> dict[tuple, tuple[dict[str, float], str]]:
    """Per problem: {kernel name: median us} and the default's name."""
    out = {}
    for line in (folder / "tune_raw.jsonl").read_text().splitlines():
        rec = json.loads(line)
        times = {r["name"]: r["us"] for r in rec["rows"] if r["us"] and not r["error"]}
        default = next(r["name"] for r in rec["rows"] if r.get("default"))
        out[_problem_key(rec["problem"])] = (times, default)
    return out


def confirmed_rows(found: Path, confirm: Path, min_gain: float, results: str, commit: str) -> list[dict]:
    table = json.loads((found / "table.json").read_text())
    first, second = _timed(found), _timed(confirm)
    kept = []
    for row in table["rows"]:
        key, kernel = _row_key(row), row["provenance"]["kernel"]
        if key not in first or key not in second:
            continue
        (t1, d1), (t2, d2) = first[key], second[key]
        if d1 != d2 or kernel not in t1 or kernel not in t2:
            continue  # the runs' defaults differ, or the second run did not time the winner
        g1, g2 = t1[d1] / t1[kernel], t2[d2] / t2[kernel]
        if min(g1, g2) < min_gain:
            continue
        row["provenance"].update({"us": round(t2[kernel], 2), "default_us": round(t2[d2], 2), "gain": round(g2, 4),
                                  "found_gain": round(g1, 4), "results": results, "commit": commit})
        kept.append(row)
    return kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("found", type=Path, help="the run whose table.json rows are candidates")
    ap.add_argument("confirm", type=Path, help="a second run of the same problems on the same GPU")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--min-gain", type=float, default=MIN_GAIN)
    ap.add_argument("--results", required=True, help="the results folder the runs are committed in")
    ap.add_argument("--commit", required=True, help="the commit the runs timed")
    args = ap.parse_args()
    for folder in (args.found, args.confirm):
        if not (folder / "tune_raw.jsonl").is_file():
            ap.error(f"{folder}: expected a bench/tune_bench.py output folder (tune_raw.jsonl, table.json)")
    if not (args.found / "table.json").is_file():
        ap.error(f"{args.found}: no table.json")
    rows = confirmed_rows(args.found, args.confirm, args.min_gain, args.results, args.commit)
    target = json.loads((args.found / "table.json").read_text())["target"]
    args.out.write_text(json.dumps({"format": FORMAT, "target": target, "rows": rows}, indent=1) + "\n")
    print(f"{len(rows)} rows confirmed (gain >= {args.min_gain} in both runs) -> {args.out}")


if __name__ == "__main__":
    main()
