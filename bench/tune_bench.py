"""Tune the bench's problems on this GPU with `gemmgen tune`'s machinery, in one process: the shipped tables' source.

Every section's problems (bench_gemm.py's shapes; the grouped cases at the M the bench's draws give) are ranked by
the cost model first, every chosen kernel of every problem is compiled in one process pool, then each problem's
candidates are timed (gemmgen.tuning.tune.tune: checked against float64, L2 cold, interleaved rounds). Written as it
goes, so a killed run keeps what it measured:
- OUT/tune_raw.jsonl: one line per problem, every candidate's config, estimate and times (bench/fit_cost.py reads it);
- OUT/table.json: the winners as tuned-table rows, with their provenance.

    PYTHONPATH=. python bench/tune_bench.py --out DIR [--sections prefill,decode,grouped,recipes,bf16,wgrad]
        [--top 6] [--rounds 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemmgen.ir import CONTIGUOUS_ALIGNMENT, DType, GemmKind, GemmProblem, ScaleRecipe, ceil_div  # noqa: E402
from gemmgen.settings import Settings  # noqa: E402
from gemmgen.tuning import tune as tuning  # noqa: E402
from gemmgen.tuning.table import write_rows  # noqa: E402

SECTIONS = ("prefill", "decode", "grouped", "recipes", "bf16", "wgrad")
CONTIGUOUS_M_SPAN = 0.15  # a contiguous row covers M_total within this fraction of the tuned draw's


def problems(section: str) -> list[tuple[GemmProblem, tuple[int, int] | None]]:
    """(problem, M range of its table row, None: the tuned M alone) for one bench section."""
    import bench_gemm as bg

    def dense(m: int, n: int, k: int, **kw: object) -> GemmProblem:
        return GemmProblem(m, n, k, **kw)  # type: ignore[arg-type]

    if section == "prefill":
        return [(dense(*s), None) for s in bg.PREFILL_SHAPES]
    if section == "decode":
        return [(dense(*s), None) for s in bg.DECODE_SHAPES]
    if section == "grouped":
        out = []
        for layout, groups, expected, n, k in bg.GROUPED_CASES:
            if layout == "masked":
                out.append((GemmProblem(expected, n, k, kind=GemmKind.M_GROUPED_MASKED, groups=groups), None))
                continue
            import torch

            gen = torch.Generator().manual_seed(bg.SEED + groups * 7 + n)
            sizes = bg._sizes(groups, expected, gen)
            m = sum(ceil_div(s, CONTIGUOUS_ALIGNMENT) * CONTIGUOUS_ALIGNMENT for s in sizes)  # the layout's M_total
            span = (int(m * (1 - CONTIGUOUS_M_SPAN)), int(m * (1 + CONTIGUOUS_M_SPAN)))
            out.append((GemmProblem(m, n, k, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=groups), span))
        return out
    if section == "recipes":
        return [(dense(*s, scales=r), None) for r in (ScaleRecipe.TENSOR, ScaleRecipe.CHANNEL)
                for s in bg.RECIPE_SHAPES]
    if section == "bf16":
        return [(dense(*s, scales=ScaleRecipe.NONE, a_dtype=DType.BF16, b_dtype=DType.BF16), None)
                for s in bg.BF16_SHAPES]
    if section == "wgrad":
        wg = dict(scales=ScaleRecipe.A1x128_B1x128, out_dtype=DType.FP32, accumulate=True)
        return ([(dense(*s, **wg), None) for s in bg.WGRAD_SHAPES]
                + [(GemmProblem(m, n, k, kind=GemmKind.K_GROUPED, groups=g, **wg), None)  # type: ignore[arg-type]
                   for g, m, n, k in bg.K_GROUPED_CASES])
    raise SystemExit(f"--sections: unknown section {section!r}; expected some of {', '.join(SECTIONS)}")


def _table_candidate(problem: GemmProblem, target, path: Path, chosen: list) -> list:
    """The table row for the problem as one more candidate (none if the table has no row or it is chosen already)."""
    from gemmgen.ir import Kernel
    from gemmgen.passes import run_pipeline
    from gemmgen.tuning import cost, space
    from gemmgen.tuning.table import problem_key, read_rows, row_key

    key = row_key(problem_key(problem))
    row = next((r for r in read_rows(path) if r.matches(key, problem.m)), None)
    if row is None:
        return []
    kernel = run_pipeline(Kernel(problem, forced=tuple(sorted(row.config.items()))), target)
    names = {k.name for _c, k, _e in chosen}
    coeffs = cost.coefficients(target)
    row_cands = [space.Candidate(tuple(sorted(row.config.items())), kernel), *space.flips(kernel, target)]
    return [(c, c.kernel, cost.estimate(c.kernel, coeffs)[0]) for c in row_cands if c.kernel.name not in names]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument("--top", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--with-table", type=Path, action="append", default=[],
                    help="Time each problem's row of this tuned table, and its feature flips, beside the candidates "
                         "(the model-vs-best run: with GEMMGEN_TUNED=off the default is the model's own pick)")
    args = ap.parse_args()
    from gemmgen.api import device_target

    target = device_target(0)
    settings = Settings.from_env()
    args.out.mkdir(parents=True, exist_ok=True)
    todo = [(sec, p, span) for sec in args.sections.split(",") for p, span in problems(sec.strip())]
    t0 = time.time()
    ranked = [tuning.rank(p, target, None, args.top, settings) for _s, p, _span in todo]
    for path in args.with_table:  # each table's row and its flips, unless chosen already
        ranked = [chosen + _table_candidate(p, target, path, chosen) for (_s, p, _sp), chosen
                  in zip(todo, ranked, strict=True)]
    jobs = [job for (_s, p, _span), chosen in zip(todo, ranked, strict=True)
            for job in tuning.build_jobs(p, chosen, target, None, settings)]
    print(f"{len(todo)} problems, {len(jobs)} kernels ranked in {time.time() - t0:.0f} s; compiling", flush=True)
    # spawned, not forked: this process has initialised CUDA (device_target)
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        errors = [e for _n, e in pool.map(tuning._build_one, jobs) if e]
    print(f"compiled in {time.time() - t0:.0f} s ({len(errors)} errors)", flush=True)
    raw = (args.out / "tune_raw.jsonl").open("a")
    for (section, problem, span), chosen in zip(todo, ranked, strict=True):
        result = tuning.tune(problem, target, top=args.top, rounds=args.rounds, settings=settings, jobs=0,
                             chosen=chosen)
        row = result.table_row(span)
        fields = {k: getattr(v, "value", v) for k, v in dataclasses.asdict(problem).items()}
        record = {"section": section, "problem": fields | {"short": problem.short()},
                  "gpu": result.gpu, "rounds": result.rounds, "m_range": span,
                  "rows": [dataclasses.asdict(t) for t in result.rows]}
        raw.write(json.dumps(record, default=str) + "\n")
        raw.flush()
        if row is not None:
            write_rows(args.out / "table.json", target, [row])
        win = result.winner
        base = result.default.us
        print(f"{time.time() - t0:5.0f} s {section:8} {problem.short():40} default {base or 0:9.2f} us, winner "
              f"{(win.us if win else 0) or 0:9.2f} us x{(base / win.us) if base and win and win.us else 0:.3f} "
              f"{win.name if win else '-'}", flush=True)


if __name__ == "__main__":
    main()
