"""Fit the cost model's coefficients (gemmgen/tuning/cost.py) to tuning runs, and report how well the model picks.

Reads the tune_raw.jsonl files bench/tune_bench.py writes (every timed candidate of every problem: its config and
median kernel time), rebuilds each candidate's kernel IR on the CPU, and searches the coefficients (coordinate
descent over log-scaled factors) that minimise the squared log error of the estimates plus a penalty for each pair of
one problem's candidates the estimate orders against a measured gap of more than PAIR_MARGIN. Prints, per problem,
the measured time of the candidate the fitted model ranks first against the best measured (the model's pick among
the timed candidates), and with --write stores the coefficients in gemmgen/tuning/targets/<target>.json.

    python bench/fit_cost.py RESULTS/tune_raw.jsonl [...] --target h100 [--write --provenance TEXT]
        [--fix NAME=VALUE ...] [--only NAME,NAME] [--test OTHER/tune_raw.jsonl ...]

`--fix` holds a coefficient at a measured value (not searched); `--only` searches just the named coefficients (the
others stay at the target file's values); `--test` reports the fitted model on runs it was not
fitted to (the same pick-vs-best measure, before and after).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gemmgen.errors import IllegalConfigError  # noqa: E402
from gemmgen.ir import DType, GemmKind, GemmProblem, Kernel, Major, ScaleRecipe, preset  # noqa: E402
from gemmgen.passes import run_pipeline  # noqa: E402
from gemmgen.tuning import cost  # noqa: E402

FITTED = ("fp8_flops", "bf16_flops", "stream_bytes_per_s", "ring_round_trip_s", "l2_bytes_per_s", "launch_s",
          "split_handover_s", "promotion_elements_per_s_per_sm", "kblock_overhead_s", "tile_s", "wgmma_knee_n",
          "overlap_loss", "epilogue_bytes_per_s_per_sm", "dirty_writeback", "evicted_reread", "box_issue_s",
          "gather_thread_s", "per_wg_hidden", "idle_sm_gain", "contiguous_switch_s", "cross_tile_wait_s")
# not fitted: oob_row_s (the bench's M values are whole tiles, so a tuning run has no partial last M block to fit it
# from; its value comes from the M-tail probe, bench/NOTES.md v0.17), late_column_scales_s (an A/B, NOTES v0.36) and
# pingpong_exposed (a first estimate until tuning runs time ping-pong candidates, NOTES v0.37) and per_wg_contention
# (an interleaved probe, NOTES v0.42)
PAIR_MARGIN = 1.03  # measured gaps below this are within a tuning run's noise
PAIR_WEIGHT = 0.5
ENUMS = {"kind": GemmKind, "a_dtype": DType, "b_dtype": DType, "out_dtype": DType, "a_major": Major,
         "b_major": Major, "scales": ScaleRecipe}


def problem_of(raw: dict) -> GemmProblem:
    fields = {}
    for key, value in raw.items():
        if key == "short":
            continue
        enum = ENUMS.get(key)
        if enum is not None and isinstance(value, str):
            value = enum[value.split(".", 1)[1]] if "." in value else enum(value)
        fields[key] = value
    return GemmProblem(**fields)


def load(paths: list[Path], target) -> list[tuple[str, str, list[tuple[Kernel, float]]]]:
    """(section, problem, [(kernel, measured us)]) per tuned problem."""
    out = []
    for path in paths:
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            problem = problem_of(rec["problem"])
            timed = []
            for row in rec["rows"]:
                if not row["us"] or row["error"]:
                    continue
                try:
                    kernel = run_pipeline(Kernel(problem, forced=tuple(sorted(row["dims"].items()))), target)
                except IllegalConfigError:
                    continue
                timed.append((kernel, row["us"]))
            if timed:
                out.append((rec["section"], problem.short(), timed))
    return out


def _fastest(row: dict) -> float:
    """A timed row's fastest round (its median where a run kept no rounds)."""
    return min(row.get("all_us") or [row["us"]])


def own_picks(paths: list[Path], target) -> None:
    """The issue's measure: the kernel this tree's model selects alone (no table) for each problem, whether the run
    timed it, and how it compares with the run's best (by median and by fastest round)."""
    timed = median = fastest = total = 0
    for path in paths:
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            rows = {r["name"]: r for r in rec["rows"] if r["us"] and not r["error"]}
            if not rows:
                continue
            total += 1
            name = run_pipeline(Kernel(problem_of(rec["problem"])), target).name
            if name not in rows:
                continue
            timed += 1
            median += rows[name]["us"] <= 1.05 * min(r["us"] for r in rows.values())
            fastest += _fastest(rows[name]) <= 1.05 * min(_fastest(r) for r in rows.values())
    print(f"the model's own pick (no table) timed in the run(s): {timed} of {total}; within 5% of the best timed "
          f"candidate: {median} by medians, {fastest} by fastest rounds")


def loss(data, coeffs: cost.Coefficients) -> float:
    total, count = 0.0, 0
    for _sec, _short, timed in data:
        est = [cost.estimate(k, coeffs)[0] * 1e6 for k, _us in timed]
        for (_k, us), e in zip(timed, est, strict=True):
            total += math.log(e / us) ** 2
            count += 1
        for i, (_ki, ui) in enumerate(timed):
            for j, (_kj, uj) in enumerate(timed):
                if uj > ui * PAIR_MARGIN and est[j] <= est[i]:  # j measured slower, estimated no slower
                    total += PAIR_WEIGHT * math.log(uj / ui) * (1 + math.log(est[i] / est[j]))
    return total / max(count, 1)


def fit(data, start: cost.Coefficients, sweeps: int, fitted: tuple[str, ...] = FITTED) -> cost.Coefficients:
    best, best_loss = start, loss(data, start)
    step = 0.5
    for sweep in range(sweeps):
        improved = False
        for name in fitted:
            for factor in (math.exp(step), math.exp(-step)):
                trial = dataclasses.replace(best, **{name: getattr(best, name) * factor})
                value = loss(data, trial)
                if value < best_loss:
                    best, best_loss, improved = trial, value, True
        print(f"sweep {sweep}: step {step:.3f} loss {best_loss:.4f}", flush=True)
        if not improved:
            step /= 2
            if step < 0.01:
                break
    return best


def report(data, coeffs: cost.Coefficients) -> tuple[int, int]:
    within = 0
    for sec, short, timed in data:
        best = min(us for _k, us in timed)
        pick = min(timed, key=lambda t: cost.estimate(t[0], coeffs)[0])
        ratio = pick[1] / best
        within += ratio <= 1.05
        if ratio > 1.05:
            print(f"  miss {sec:8} {short[:48]:48} pick/best x{ratio:.3f}  {pick[0].name}")
    print(f"model's pick within 5% of the best timed candidate: {within} of {len(data)}")
    return within, len(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("raw", nargs="+", type=Path)
    ap.add_argument("--target", required=True, choices=("h100", "h200"))
    ap.add_argument("--sweeps", type=int, default=40)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--provenance", default="")
    ap.add_argument("--fix", action="append", default=[], metavar="NAME=VALUE",
                    help="hold this coefficient at VALUE (a measured rate) instead of fitting it (repeatable)")
    ap.add_argument("--only", default="", metavar="NAME,NAME",
                    help="search only these coefficients; the others keep the target file's values")
    ap.add_argument("--test", action="append", default=[], type=Path, metavar="RAW",
                    help="tune_raw.jsonl of a run not fitted to: report the model's picks there too (repeatable)")
    args = ap.parse_args()
    fixed = {}
    for item in args.fix:
        name, _, value = item.partition("=")
        if name not in FITTED:
            ap.error(f"--fix {item!r}: expected NAME=VALUE with NAME one of {', '.join(FITTED)}")
        try:
            fixed[name] = float(value)
        except ValueError:
            ap.error(f"--fix {item!r}: VALUE must be a number")
    only = [name for name in args.only.split(",") if name]
    for name in only:
        if name not in FITTED:
            ap.error(f"--only {name!r}: expected names from {', '.join(FITTED)}")
    for path in [*args.raw, *args.test]:
        if not path.is_file():
            ap.error(f"{path}: no such tune_raw.jsonl file")
    target = preset(args.target)
    data = load(args.raw, target)
    held_out = load(args.test, target) if args.test else []
    start = dataclasses.replace(cost.coefficients(target), **fixed)
    own_picks([*args.raw, *args.test], target)
    print(f"{len(data)} problems, {sum(len(t) for _s, _p, t in data)} timed kernels; before fitting:")
    report(data, start)
    if held_out:
        print(f"held out ({len(held_out)} problems), before fitting:")
        report(held_out, start)
    fitted = fit(data, start, args.sweeps, tuple(n for n in FITTED if n not in fixed and (not only or n in only)))
    print("after fitting:")
    report(data, fitted)
    if held_out:
        print("held out, after fitting:")
        report(held_out, fitted)
    for name in FITTED:
        print(f"  {name}: {getattr(start, name):.4g} -> {getattr(fitted, name):.4g}")
    if args.write:
        path = cost.TARGETS_DIR / f"{args.target}.json"
        raw = json.loads(path.read_text())
        raw.update({name: getattr(fitted, name) for name in FITTED})
        raw["fitted"] = True
        raw.pop("features_provenance", None)
        raw["provenance"] = args.provenance or raw.get("provenance", "")
        path.write_text(json.dumps(raw, indent=1) + "\n")
        print(f"written {path}")


if __name__ == "__main__":
    main()
