"""Refresh a shipped table from later tuning runs: a row (or the model's pick) that other timed kernels beat in every
run that timed both is replaced by the one that beat it most.

Reads tune_raw.jsonl files (or .jsonl.gz) bench/tune_bench.py wrote on one GPU. For each problem, the kernel this tree
selects with its tables (what a user gets) is compared with every other candidate in each run that timed both; one
faster by at least --min-gain in each of at least --min-runs such runs replaces the table's row for the problem, or
becomes a new row over the run's M span. Rows the runs do not beat stay as they are; each new row's provenance quotes
every run's medians. Where runs of different trees timed the same kernel name, the binaries are the same only if no
template change lies between them: check that before passing them together (bench/NOTES.md says which are).
A row it writes is a candidate: ship it where an A/B against the old row (bench/ab_versions.py) holds at >= x1.01;
2 of the 5 rows two clean H100 runs agreed on did not (bench/NOTES.md v0.43).

    python bench/refresh_table.py RUN_A/tune_raw.jsonl RUN_B/tune_raw.jsonl.gz --target h100 [--min-gain 1.025]
        [--min-runs 2] [--table PATH] [--dry-run]
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fit_cost import problem_of  # noqa: E402

from gemmgen.ir import preset  # noqa: E402
from gemmgen.settings import Settings  # noqa: E402
from gemmgen.stages import decide  # noqa: E402
from gemmgen.tuning.table import SHIPPED_DIR, problem_key, row_key  # noqa: E402

MIN_GAIN = 1.025  # each run's gain: runs differ by 1-2% on one kernel (bench/NOTES.md v0.40)


def _records(path: Path) -> list[dict]:
    """A tune_raw file's problem records; a file of anything else is a ValueError naming it."""
    try:
        text = gzip.open(path, "rt").read() if path.suffix == ".gz" else path.read_text()
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
        if not all(isinstance(r, dict) and {"section", "problem", "rows"} <= r.keys() for r in records):
            raise ValueError("a line without section, problem and rows")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{path}: not a tune_raw file of bench/tune_bench.py ({exc})") from exc
    return records


def refreshed(table_path: Path, table: dict, runs: list[Path], target_name: str, min_gain: float,
              min_runs: int) -> list[str]:
    """Rewrite `table` (read from `table_path`)'s rows in place; return one line per change."""
    target = preset(target_name)
    settings = dataclasses.replace(Settings.from_env(), tuned=str(table_path))  # its rows first, as a user gets them
    per_problem: dict[str, list[tuple[str, dict, dict[str, dict]]]] = {}
    for path in runs:
        for rec in _records(path):
            timed = {r["name"]: r for r in rec["rows"] if r["us"] and not r["error"]}
            per_problem.setdefault(f"{rec['section']} {rec['problem']['short']}", []).append((str(path), rec, timed))
    changes = []
    for label, seen in per_problem.items():
        problem = problem_of(seen[0][1]["problem"])
        pick = decide(problem, (), target, settings).name
        gains: dict[str, list[tuple[str, float, float]]] = {}
        for path, _rec, timed in seen:
            if pick not in timed:
                continue
            for name, row in timed.items():
                gains.setdefault(name, []).append((path, timed[pick]["us"], row["us"]))
        worst = {name: min(old / new for _p, old, new in g) for name, g in gains.items() if len(g) >= min_runs}
        name = max(worst, key=worst.__getitem__, default=None)
        if name is None or worst[name] < min_gain:
            continue
        dims = next(timed[name] for _p, _rec, timed in seen if name in timed)["dims"]
        key = row_key(problem_key(problem))
        rows = [r for r in table["rows"] if row_key(r) == key and r["m"][0] <= problem.m <= r["m"][1]]
        if not rows:
            span = seen[0][1].get("m_range") or (problem.m, problem.m)
            rows = [{**problem_key(problem), "m": list(span)}]
            table["rows"].append(rows[0])
        g = gains[name]
        rows[0]["config"] = dict(dims)
        rows[0]["provenance"] = {
            "source": "bench/refresh_table.py: faster than the selected kernel in every run that timed both",
            "gpu": seen[0][1].get("gpu", ""), "tuned_m": problem.m, "kernel": name, "replaced_kernel": pick,
            "gain": round(statistics.median(old / new for _p, old, new in g), 4),
            "runs": [{"raw": p, "us": round(new, 3), "replaced_us": round(old, 3)} for p, old, new in g]}
        changes.append(f"{label}: {pick} -> {name} (x{', x'.join(f'{o / n:.3f}' for _p, o, n in g)})")
    return changes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="tune_raw.jsonl files of one GPU (.gz read too)")
    ap.add_argument("--target", required=True, choices=("h100", "h200"))
    ap.add_argument("--min-gain", type=float, default=MIN_GAIN)
    ap.add_argument("--min-runs", type=int, default=2)
    ap.add_argument("--table", type=Path, default=None, help="the table to refresh (default: the shipped one)")
    ap.add_argument("--dry-run", action="store_true", help="print the changes, write nothing")
    args = ap.parse_args()
    for path in args.runs:
        if not path.is_file():
            ap.error(f"{path}: no such tune_raw file (bench/tune_bench.py writes one per run)")
    if args.min_runs < 1 or args.min_gain < 1:
        ap.error("--min-runs must be >= 1 and --min-gain >= 1")
    path = args.table or SHIPPED_DIR / f"{args.target}.json"
    table = json.loads(path.read_text())
    try:
        changes = refreshed(path, table, args.runs, args.target, args.min_gain, args.min_runs)
    except ValueError as exc:
        ap.error(str(exc))
    print("\n".join(changes) or "no row beaten in every run that timed it")
    if changes and not args.dry_run:
        path.write_text(json.dumps(table, indent=1) + "\n")
        print(f"{len(changes)} rows written to {path}")


if __name__ == "__main__":
    main()
