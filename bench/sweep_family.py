"""Config A/B for the newer recipes (tensor, channel, bf16, wgrad): a small, deliberate set of schedule configs per
shape timed against the default one, the data select_config's rules are fitted from per recipe.

    PYTHONPATH=. python bench/sweep_family.py --out sweep_family.json [--recipes tensor,channel,bf16,wgrad]
        [--shapes MxNxK ...] [--budget-s 240] [--rounds 2] [--list]

Calls and inputs as bench_gemm.py sections 5-7: fp8_gemm_nt(recipe="tensor"/"channel") on per-tensor / per-row
e4m3 inputs (bf16 out), bf16_gemm_nt (bf16 in and out), fp8_gemm_nt_wgrad (1x128/1x128, fp32 out,
accumulate=True; out keeps adding over the timed calls, which does not change the time). Each candidate is the
call with `config=` its pinned fields; the default row is the call with no config.

Candidates per shape (`candidates`): block_m in {64, 128, 256} (64 only at M <= 64, no 256 at M <= 128); per
block_m the block_n of the default, the one the rule picks at that block_m, 128, and the widest legal one; cluster
1 and 2; wgrad also acc_sets 1 and 2; M <= 128 also k_splits 1, 2, 4 (cluster 1) on the default and rule tiles.
Stages (and whatever else is not pinned) are left to the passes (the deepest legal ring). Every candidate is
resolved by the pass pipeline on the CPU, so the legality rules (gemmgen.check, IllegalConfigError) drop the
illegal ones before anything compiles, and candidates that resolve to the same kernel (the default among them)
are timed once. All kernels are compiled first, in parallel processes, so the timed part only loads cubins.

Timing: bench/common.kernel_seconds (every kernel of the call, cold L2, the bench's method), `--rounds` passes
over a shape's candidates, alternating forward and backward so drift hits them alike; `us` is the median over
rounds. Shapes run recipe by recipe in turn (the first shape of each recipe, then the second, ...), so a budget
cut leaves every recipe its first shapes. `--budget-s` counts from the start (compiles included): no shape is
started once it is spent or once the shape's predicted time (measured seconds per timing so far) would overrun it;
the shapes not run are printed and listed in the JSON. The JSON is rewritten after every shape.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gemmgen  # noqa: E402
from gemmgen.errors import GemmgenError, IllegalConfigError  # noqa: E402
from gemmgen.ir import LEGAL_N, DType, GemmProblem, Kernel, ScaleRecipe, Target  # noqa: E402
from gemmgen.passes import run_pipeline  # noqa: E402
from gemmgen.stages import forced_fields  # noqa: E402

RECIPES = ("tensor", "channel", "bf16", "wgrad")
# The bench's worst rows (bench/results/2026-11-30-36df5df/bench.md): tensor 0.97x / channel 0.95x cuBLASLt,
# bf16 0.93x cuBLAS (losses at M = 64/128), wgrad 0.80x DeepGEMM's figures. wgrad: M x N x K, K the tokens.
RECIPE_SHAPES = [(4096, 2112, 7168), (4096, 32768, 512), (4096, 7168, 2048), (4096, 4096, 7168)]
DEFAULT_SHAPES: dict[str, list[tuple[int, int, int]]] = {
    "tensor": RECIPE_SHAPES,
    "channel": RECIPE_SHAPES,
    "bf16": [(64, 2112, 7168), (128, 2112, 7168), (128, 4096, 7168), (4096, 2112, 7168), (4096, 32768, 512)],
    "wgrad": [(7168, 2112, 4096), (2048, 7168, 4096), (7168, 4096, 4096), (512, 32768, 4096)],
}
SMALL_M = 128  # at or below: k_splits 1/2/4 are tried too (the bf16 losses at M = 64/128)
K_SPLITS = (1, 2, 4)
CONFIG_FIELDS = ("block_m", "block_n", "cluster", "multicast_b", "stages", "k_splits", "acc_sets")
_clock = time.perf_counter  # the budget's clock (a test steps it)


def problem(recipe: str, m: int, n: int, k: int) -> GemmProblem:
    """The problem a recipe's call builds its kernel for (as api._launch does)."""
    if recipe == "tensor":
        return GemmProblem(m, n, k, scales=ScaleRecipe.TENSOR)
    if recipe == "channel":
        return GemmProblem(m, n, k, scales=ScaleRecipe.CHANNEL)
    if recipe == "bf16":
        return GemmProblem(m, n, k, a_dtype=DType.BF16, b_dtype=DType.BF16, scales=ScaleRecipe.NONE)
    if recipe == "wgrad":
        return GemmProblem(m, n, k, scales=ScaleRecipe.A1x128_B1x128, out_dtype=DType.FP32, accumulate=True)
    raise ValueError(f"unknown recipe {recipe!r}; expected one of {', '.join(RECIPES)}")


@dataclass
class Candidate:
    pinned: dict[str, int] | None  # the call's config= (None: the default call)
    name: str
    config: dict[str, int | None]  # the resolved schedule fields
    default: bool = False

    @property
    def label(self) -> str:
        return label(self.config)


def label(c: dict[str, int | None]) -> str:
    """A resolved config in a few characters: 128x256 c2 s3 a2 (ks4 when split)."""
    text = f"{c['block_m']}x{c['block_n']} c{c['cluster']} s{c['stages']} a{c['acc_sets']}"
    return text + (f" ks{c['k_splits']}" if (c["k_splits"] or 1) > 1 else "")


def resolve(prob: GemmProblem, pinned: dict[str, int] | None, target: Target) -> Kernel | None:
    """The kernel the pass pipeline makes of `pinned` (CPU only, nothing compiled); None where the legality rules
    (gemmgen.check, run after every pass) refuse it."""
    try:
        return run_pipeline(Kernel(prob, forced=forced_fields(pinned)), target)
    except (IllegalConfigError, ValueError):
        return None


def _fields(kernel: Kernel) -> dict[str, int | None]:
    assert kernel.config is not None
    return {f: getattr(kernel.config, f) for f in CONFIG_FIELDS}


def _widest(prob: GemmProblem, bm: int, target: Target, **extra: int) -> int | None:
    for bn in sorted(LEGAL_N, reverse=True):
        if resolve(prob, {"block_m": bm, "block_n": bn, "cluster": 1, **extra}, target) is not None:
            return bn
    return None


def block_ms(m: int) -> list[int]:
    return [64] if m <= 64 else [64, 128] if m <= SMALL_M else [64, 128, 256]


def candidate_configs(recipe: str, m: int, n: int, k: int, target: Target) -> list[dict[str, int]]:
    """The pinned configs tried for one shape (legal or not; `candidates` filters and dedupes)."""
    prob = problem(recipe, m, n, k)
    default = resolve(prob, None, target)
    d_bn = default.config.block_n if default is not None and default.config is not None else None
    configs: list[dict[str, int]] = []
    for bm in block_ms(m):
        rule = resolve(prob, {"block_m": bm}, target)
        rule_bn = rule.config.block_n if rule is not None and rule.config is not None else None
        bns = [d_bn, rule_bn, 128, _widest(prob, bm, target)]
        if recipe == "wgrad" and bm <= 128:  # the widest tile that keeps two accumulator sets (overlap)
            bns.append(_widest(prob, bm, target, acc_sets=2))
        for bn in sorted({b for b in bns if b is not None}):
            for cluster in (1, 2):
                base = {"block_m": bm, "block_n": bn, "cluster": cluster, "multicast_b": 0}  # the A pair
                if recipe == "wgrad":
                    configs += [{**base, "acc_sets": sets} for sets in (1, 2)]
                else:
                    configs.append(base)
        if m <= SMALL_M:
            for bn in sorted({b for b in (d_bn, rule_bn) if b is not None}):
                configs += [{"block_m": bm, "block_n": bn, "cluster": 1, "k_splits": s} for s in K_SPLITS]
    return configs


def candidates(recipe: str, m: int, n: int, k: int, target: Target) -> tuple[list[Candidate], int]:
    """The default first, then every legal candidate resolving to another kernel; and how many were illegal."""
    prob = problem(recipe, m, n, k)
    default = resolve(prob, None, target)
    if default is None:
        raise IllegalConfigError(f"problem {prob.short()}", ["no legal default config"])
    assert default.name
    out = {default.name: Candidate(None, default.name, _fields(default), default=True)}
    illegal = 0
    for pinned in candidate_configs(recipe, m, n, k, target):
        kern = resolve(prob, pinned, target)
        if kern is None:
            illegal += 1
            continue
        assert kern.name
        out.setdefault(kern.name, Candidate(pinned, kern.name, _fields(kern)))
    return list(out.values()), illegal


# ------------------------------------------------------------------------------------------------------ compile
def _build_one(job: tuple) -> tuple[str, str | None]:
    recipe, m, n, k, pinned, target, name = job
    try:
        gemmgen.build(problem(recipe, m, n, k), pinned, target)
        return name, None
    except (GemmgenError, ValueError) as exc:
        return name, f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"


def prebuild(plan: dict[tuple[str, int, int, int], list[Candidate]], target: Target, jobs: int | None,
             build_one: Callable[[tuple], tuple[str, str | None]] = _build_one) -> dict[str, str]:
    """Compile every distinct kernel of `plan` into the disk cache (NVRTC is CPU work: parallel processes, forked
    so they inherit this process's imports; jobs=1 builds in-process). Returns {kernel name: error} of failures."""
    work: dict[str, tuple] = {}
    for (recipe, m, n, k), cands in plan.items():
        for c in cands:
            work.setdefault(c.name, (recipe, m, n, k, c.pinned, target, c.name))
    if jobs == 1:
        results = [build_one(j) for j in work.values()]
    else:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            results = list(pool.map(build_one, work.values(), chunksize=2))
    return {name: err for name, err in results if err}


# ------------------------------------------------------------------------------------------------- GPU calls
def make_inputs(recipe: str, m: int, n: int, k: int) -> dict[str, Any]:
    """The recipe's operands, quantised as bench_gemm sections 5-7 do (the gemmgen casts of the same layouts)."""
    import torch

    torch.manual_seed(m + n + k)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    if recipe == "bf16":
        return {"a": x, "b": w, "out": torch.empty(m, n, device="cuda", dtype=torch.bfloat16)}
    cast = {"tensor": gemmgen.per_tensor_cast_to_fp8, "channel": gemmgen.per_channel_cast_to_fp8,
            "wgrad": gemmgen.per_token_cast_to_fp8}[recipe]
    if recipe == "wgrad":
        out = torch.zeros(m, n, device="cuda", dtype=torch.float32)
    else:
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    return {"a": cast(x), "b": cast(w), "out": out}


def make_call(recipe: str, inputs: dict[str, Any], pinned: dict[str, int] | None) -> Callable[[], Any]:
    a, b, out = inputs["a"], inputs["b"], inputs["out"]
    if recipe == "bf16":
        return lambda: gemmgen.bf16_gemm_nt(a, b, out, config=pinned)
    if recipe == "wgrad":
        return lambda: gemmgen.fp8_gemm_nt_wgrad(a, b, out, accumulate=True, config=pinned)
    return lambda: gemmgen.fp8_gemm_nt(a, b, out, recipe=recipe, config=pinned)


def _kernel_seconds(fn: Callable[[], Any]) -> tuple[float, list[str]]:
    from common import kernel_seconds  # type: ignore[import-not-found]

    return kernel_seconds(fn)


# ------------------------------------------------------------------------------------------------------ timing
@dataclass
class Hooks:
    """What touches the GPU, replaceable by a CPU test."""
    timer: Callable[[Callable[[], Any]], tuple[float, list[str]]] = _kernel_seconds
    make_inputs: Callable[[str, int, int, int], dict[str, Any]] = make_inputs
    make_call: Callable[[str, dict[str, Any], dict[str, int] | None], Callable[[], Any]] = make_call
    build_one: Callable[[tuple], tuple[str, str | None]] = _build_one
    target: Callable[[], Target] = field(default=lambda: gemmgen.api.device_target(0))


def _ran(name: str, seen: list[str]) -> bool:
    """Whether the profiler saw the candidate's kernel (kernel_seconds cuts names at 80 characters)."""
    return any(s and name.startswith(s) for s in seen)


def sweep_shape(recipe: str, m: int, n: int, k: int, cands: list[Candidate], rounds: int, hooks: Hooks,
                failed: dict[str, str]) -> tuple[list[dict], int]:
    """Rows for one shape (best first) and the timings made. Failures become rows with `error` and us None."""
    flops = 2 * m * n * k
    errors: dict[int, str] = {i: f"compile failed: {failed[c.name]}" for i, c in enumerate(cands) if c.name in failed}
    live = [i for i in range(len(cands)) if i not in errors]
    times: dict[int, list[float]] = {i: [] for i in live}
    inputs = hooks.make_inputs(recipe, m, n, k)
    calls = {i: hooks.make_call(recipe, inputs, cands[i].pinned) for i in live}
    timings = 0
    for r in range(rounds):
        for i in live if r % 2 == 0 else live[::-1]:
            if i in errors:
                continue
            try:
                secs, seen = hooks.timer(calls[i])
                timings += 1
            except Exception as exc:  # noqa: BLE001 - one failing candidate must not end the sweep
                errors[i] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
                continue
            if not _ran(cands[i].name, seen):
                errors[i] = f"the profiler saw {seen}, not {cands[i].name}"
                continue
            times[i].append(secs)
    default_us = None
    rows: list[dict[str, Any]] = []
    for i, c in enumerate(cands):
        us = statistics.median(times[i]) * 1e6 if i not in errors and times.get(i) else None
        row: dict[str, Any] = {
            "recipe": recipe, "m": m, "n": n, "k": k, "config": c.config, "pinned": c.pinned, "name": c.name,
            "stages": c.config["stages"], "us": us, "us_rounds": [t * 1e6 for t in times.get(i, [])],
            "tflops": flops / us / 1e6 if us else None, "default": c.default, "speedup_vs_default": None}
        if i in errors:
            row["error"] = errors[i]
        if c.default:
            default_us = us
        rows.append(row)
    for row in rows:
        if row["us"] and default_us:
            row["speedup_vs_default"] = default_us / row["us"]
    rows.sort(key=lambda r: (r["us"] is None, r["us"] or 0.0))
    return rows, timings


def table(rows: list[dict]) -> str:
    """One shape's rows as text, best first, the default marked."""
    r0 = rows[0]
    dflt = next((r for r in rows if r["default"]), None)
    timed = [r for r in rows if r["us"] is not None]
    head = f"{r0['recipe']} {r0['m']}x{r0['n']}x{r0['k']}: "
    if dflt is not None and dflt["us"] is not None:
        head += f"default {label(dflt['config'])} {dflt['us']:.1f} us ({dflt['tflops']:.0f} TFLOPS)"
    else:
        head += "default not timed"
    if timed and dflt is not None and dflt["us"] is not None:
        best = timed[0]
        head += f"; best {label(best['config'])} {best['speedup_vs_default']:.3f}x"
    lines = [head, f"  {'us':>8} {'TFLOPS':>7} {'vs def':>7}  config"]
    for r in rows:
        if r["us"] is None:
            lines.append(f"  {'-':>8} {'-':>7} {'-':>7}  {label(r['config'])}{'  <- default' if r['default'] else ''}"
                         f"  ({r.get('error', 'not timed')[:100]})")
            continue
        ratio = f"{r['speedup_vs_default']:.3f}" if r["speedup_vs_default"] else "-"
        lines.append(f"  {r['us']:8.1f} {r['tflops']:7.0f} {ratio:>7}  {label(r['config'])}"
                     + ("  <- default" if r["default"] else ""))
    return "\n".join(lines)


# -------------------------------------------------------------------------------------------------------- main
def parse_shape(text: str) -> tuple[int, int, int]:
    try:
        m, n, k = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected MxNxK (e.g. 4096x2112x7168), got {text!r}") from None
    if min(m, n, k) < 1:
        raise argparse.ArgumentTypeError(f"expected positive sizes, got {text!r}")
    return m, n, k


def parse_recipes(text: str) -> list[str]:
    names = [r.strip() for r in text.split(",") if r.strip()]
    bad = [r for r in names if r not in RECIPES]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"--recipes: unknown {bad or text!r}; expected some of {','.join(RECIPES)}")
    return names


def shape_order(recipes: list[str], shapes: list[tuple[int, int, int]] | None) -> list[tuple[str, int, int, int]]:
    """Recipe by recipe in turn: every recipe's first shape, then every recipe's second, ..."""
    per = {r: list(shapes) if shapes else DEFAULT_SHAPES[r] for r in recipes}
    order = []
    for i in range(max(len(v) for v in per.values())):
        order += [(r, *per[r][i]) for r in recipes if i < len(per[r])]
    return order


def _env() -> dict:
    try:
        from common import env_info  # type: ignore[import-not-found]

        return env_info("bench/sweep_family.py: kernel_seconds (cold L2, every kernel), median over rounds")
    except Exception as exc:  # noqa: BLE001 - the sweep's rows do not depend on it
        return {"error": f"{type(exc).__name__}: {exc}"}


def main(argv: Iterable[str] | None = None, hooks: Hooks | None = None, env: Callable[[], dict] = _env) -> dict:
    t0 = _clock()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--recipes", type=parse_recipes, default=list(RECIPES), help="comma-separated: "
                    + ",".join(RECIPES))
    ap.add_argument("--shapes", type=parse_shape, nargs="+", default=None,
                    help="MxNxK (wgrad: K the tokens) for every recipe given, instead of each one's defaults")
    ap.add_argument("--budget-s", type=float, default=240.0, help="no shape is started past this (from the start, "
                    "compiles included), nor one predicted to overrun it")
    ap.add_argument("--rounds", type=int, default=2, help="timings per candidate, alternating the order")
    ap.add_argument("--jobs", type=int, default=None, help="compile processes (default: every CPU)")
    ap.add_argument("--list", action="store_true", help="print the candidates and counts (CPU, H200 preset), "
                    "compile and time nothing")
    args = ap.parse_args(list(argv) if argv is not None else None)
    hooks = hooks or Hooks()
    order = shape_order(args.recipes, args.shapes)
    target = gemmgen.H200_SXM if args.list else hooks.target()

    plan: dict[tuple[str, int, int, int], list[Candidate]] = {}
    for key in order:
        plan[key], illegal = candidates(*key, target)
        print(f"{key[0]} {key[1]}x{key[2]}x{key[3]}: {len(plan[key])} kernels ({illegal} illegal candidates "
              "dropped)", flush=True)
        if args.list:
            for c in plan[key]:
                print(f"    {c.label:24s} {'default' if c.default else c.pinned}")
    kernels = len({c.name for v in plan.values() for c in v})
    total = sum(len(v) for v in plan.values())
    print(f"{total} candidates over {len(plan)} shapes, {kernels} distinct kernels to compile; "
          f"{total * args.rounds} timings at {args.rounds} rounds", flush=True)
    result: dict[str, Any] = {"env": {}, "rows": [], "not_run": [], "budget_s": args.budget_s,
                              "rounds": args.rounds, "kernels": kernels, "candidates": total}
    if args.list:
        return result

    failed = prebuild(plan, target, args.jobs, hooks.build_one)
    compile_s = _clock() - t0
    print(f"compiled/loaded {kernels} kernels in {compile_s:.0f} s" + (f"; {len(failed)} failed" if failed else ""),
          flush=True)
    result.update(env=env(), compile_s=compile_s, compile_failed=failed)
    timed_s, timings = 0.0, 0
    for idx, key in enumerate(order):
        elapsed = _clock() - t0
        predicted = (timed_s / timings if timings else 0.0) * len(plan[key]) * args.rounds
        if elapsed >= args.budget_s or elapsed + predicted > args.budget_s:
            result["not_run"] = [f"{r} {m}x{n}x{k}" for r, m, n, k in order[idx:]]
            print(f"budget: {elapsed:.0f} s of {args.budget_s:.0f} s spent, the next shape needs ~{predicted:.0f} s; "
                  f"not run: {', '.join(result['not_run'])}", flush=True)
            break
        s0 = _clock()
        rows, made = sweep_shape(*key, plan[key], args.rounds, hooks, failed)
        timed_s += _clock() - s0
        timings += made
        result["rows"] += rows
        print(table(rows) + f"\n  ({_clock() - s0:.1f} s, {made} timings)", flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
    result["elapsed_s"] = _clock() - t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"done in {result['elapsed_s']:.0f} s ({timings} timings, "
          f"{timed_s / timings if timings else float('nan'):.2f} s each incl. setup) -> {args.out}", flush=True)
    return result


if __name__ == "__main__":
    main()
