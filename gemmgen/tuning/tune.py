"""`gemmgen tune`: time a problem's candidates side by side on the GPU and keep the winner in a tuned table.

For one problem: the candidate space (space.py) ranked by the cost model (cost.py); the model's top-k and the
kernel selection picks without any table (the default) are compiled in parallel processes, each checked against the
float64 product of its dequantized inputs (calc_diff < 1e-3, no NaN in the written rows), then timed in interleaved
rounds after one untimed warm-up round. Every launch follows a 256 MB zeroing of a scratch buffer (L2 cold, as
docs/BENCHMARKING.md times kernels) and a ~100 us GPU spin, which let the host enqueue the launch before the GPU
reaches it, and is bracketed by CUDA events, so the time is the kernel's alone; the garbage collector is held off (a
host pause past the slack would be timed as the kernel's). The winner's varied dimensions (not the fields the passes
derive from them, such as stages and A rows, which depend on M) become a table row for the problem's class and M,
with its provenance.
"""

from __future__ import annotations

import dataclasses
import datetime
import gc
import statistics
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..errors import GemmgenError
from ..ir import DType, GemmKind, GemmProblem, Kernel, ScaleRecipe, Target
from ..settings import Settings
from ..stages import BuiltKernel, build, decide
from . import cost, space
from .table import OPTIONAL_KEYS, PROBLEM_KEYS, problem_key

FLUSH_BYTES = 256 << 20
SLACK_CYCLES = 200_000  # ~100 us at 1.98 GHz; without it 4-5% of samples ran over 1.5x (H100, bench/NOTES.md v0.40)
MAX_DIFF = 1e-3  # calc_diff against the float64 product: a broken candidate is far above it


@dataclass
class Timed:
    name: str
    pins: dict[str, int]  # the candidate's pinned dimensions (none for the default)
    dims: dict[str, int]  # its kernel's values of every dimension (space.row_fields): the row a win writes
    default: bool
    estimate_us: float
    us: float | None = None  # median kernel time
    all_us: list[float] = field(default_factory=list)
    diff: float | None = None  # calc_diff against float64
    registers: int = 0
    spills: int = 0
    error: str = ""


@dataclass
class TuneResult:
    problem: GemmProblem
    target: Target
    gpu: str
    rounds: int
    rows: list[Timed]

    @property
    def default(self) -> Timed:
        return next(r for r in self.rows if r.default)

    @property
    def winner(self) -> Timed | None:
        timed = [r for r in self.rows if r.us is not None and not r.error]
        return min(timed, key=lambda r: r.us or 0.0) if timed else None

    def table_row(self, m_range: tuple[int, int] | None = None) -> dict[str, Any] | None:
        """The winner as a tuned-table row (tuning/table.py), None if nothing was timed."""
        win, base = self.winner, self.default
        if win is None:
            return None
        key = problem_key(self.problem)
        lo, hi = m_range or (self.problem.m, self.problem.m)
        gain = base.us / win.us if base.us and win.us else None
        newer = {k: key[k] for k, default in OPTIONAL_KEYS.items() if key[k] != default}  # plain rows stay as they were
        return {**{k: key[k] for k in PROBLEM_KEYS}, **newer, "m": [lo, hi], "config": win.dims,
                "provenance": {"source": "gemmgen tune", "date": datetime.date.today().isoformat(), "gpu": self.gpu,
                               "rounds": self.rounds, "tuned_m": self.problem.m, "kernel": win.name,
                               "us": round(win.us or 0.0, 3), "default_kernel": base.name,
                               "default_us": round(base.us, 3) if base.us else None,
                               "gain": round(gain, 4) if gain else None}}


def _untabled(settings: Settings) -> Settings:
    """The settings with no tuned table: the default a tuning run compares against is selection's own pick."""
    return dataclasses.replace(settings, tuned="off")


def _build_one(args: tuple[GemmProblem, dict[str, int], Target, Settings]) -> tuple[str, str]:
    problem, pins, target, settings = args
    try:
        return build(problem, pins or None, target, settings=settings).name, ""
    except GemmgenError as exc:
        return "", str(exc).splitlines()[0]


def rank(problem: GemmProblem, target: Target, pins: dict[str, int] | None, top: int,
         settings: Settings) -> list[tuple[space.Candidate | None, Kernel, float]]:
    """The default (selection with no table), its feature flips (space.flips: each of the model's feature decisions
    checked), the model's top-k other candidates, and the best ping-pong ones outside them (a quarter of k, at least
    one: the schedule the model has no measured credit for gets timed): (candidate or None for the default, kernel,
    estimate in s)."""
    coeffs = cost.coefficients(target)
    default = decide(problem, tuple(sorted((pins or {}).items())), target, _untabled(settings))
    chosen: list[tuple[space.Candidate | None, Kernel, float]] = [(None, default, cost.estimate(default, coeffs)[0])]
    chosen += [(c, c.kernel, cost.estimate(c.kernel, coeffs)[0]) for c in space.flips(default, target, pins)]
    names = {k.name for _c, k, _e in chosen}
    ranked = sorted(((c, c.kernel, cost.estimate(c.kernel, coeffs)[0])
                     for c in space.candidates(problem, target, pins) if c.kernel.name not in names),
                    key=lambda t: t[2])
    pingpong = [r for r in ranked[top:] if r[1].config is not None and r[1].config.pingpong][:max(1, top // 4)]
    return chosen + ranked[:top] + pingpong


def build_jobs(problem: GemmProblem, chosen: list[tuple[space.Candidate | None, Kernel, float]], target: Target,
               pins: dict[str, int] | None, settings: Settings) -> list[tuple[GemmProblem, dict[str, int], Target,
                                                                         Settings]]:
    """The build() arguments of every chosen kernel (a pool can run them: _build_one)."""
    untabled = _untabled(settings)
    return [(problem, {**(pins or {}), **dict(c.pins if c else ())}, target, untabled) for c, _k, _e in chosen]


def compile_all(problem: GemmProblem, chosen: list[tuple[space.Candidate | None, Kernel, float]], target: Target,
                pins: dict[str, int] | None, settings: Settings, jobs: int | None) -> dict[str, str]:
    """Build every chosen kernel, in parallel processes (jobs=0: in this one, for kernels already cached):
    {name: error ('' if built)}."""
    jobs_args = build_jobs(problem, chosen, target, pins, settings)
    if jobs == 0:
        results = [_build_one(a) for a in jobs_args]
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(_build_one, jobs_args))
    return {kernel.name or "": err for (_c, kernel, _e), (_name, err) in zip(chosen, results, strict=True)}


def tune(problem: GemmProblem, target: Target, *, pins: dict[str, int] | None = None, top: int = 8, rounds: int = 5,
         settings: Settings | None = None, jobs: int | None = None,
         progress: Callable[[str], None] | None = None,
         chosen: list[tuple[space.Candidate | None, Kernel, float]] | None = None) -> TuneResult:
    """Time the default and the model's top-k candidates (or `chosen`, a rank() made before) on GPU 0 (see the
    module doc)."""
    import torch

    from ..runtime import driver

    driver.require_gpu()
    settings = settings or Settings.from_env()
    say = progress or (lambda text: None)
    chosen = chosen or rank(problem, target, pins, top, settings)
    say(f"{len(chosen)} kernels: the default and the model's top {len(chosen) - 1}; compiling")
    errors = compile_all(problem, chosen, target, pins, settings, jobs)
    untabled = _untabled(settings)
    rows: list[Timed] = []
    built: dict[str, BuiltKernel] = {}
    for cand, kernel, est in chosen:
        assert kernel.name
        row = Timed(kernel.name, dict(cand.pins) if cand else {}, space.row_fields(kernel), cand is None, est * 1e6,
                    error=errors[kernel.name])
        if not row.error:
            bk = build(problem, {**(pins or {}), **row.pins} or None, target, settings=untabled)
            built[row.name] = bk
            res = bk.meta["resources"]
            row.registers, row.spills = res["registers"], res["spill_stores"] + res["spill_loads"]
        rows.append(row)
    args, out, reference, valid = _operands(problem)
    for row in rows:
        if row.error:
            continue
        _poison(out, problem)
        try:
            built[row.name](*args)
            torch.cuda.synchronize()
        except (GemmgenError, RuntimeError, ValueError) as exc:
            row.error = f"launch: {str(exc).splitlines()[0]}"
            continue
        row.diff = _diff(out, reference, valid)
        if not row.diff < MAX_DIFF:
            row.error = f"wrong result: calc_diff {row.diff:.2e} against float64"
    say(f"timing {sum(not r.error for r in rows)} kernels, {rounds} interleaved rounds")
    scratch = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    live = [r for r in rows if not r.error]
    gc_was_on = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for row in live:  # warm-up: a problem's first launch ran over 1.5x in 57-68 of 103 (H100, bench/NOTES.md v0.40)
            _time_once(built[row.name], args, scratch, torch)
        for i in range(rounds):
            order = live[i % max(len(live), 1):] + live[:i % max(len(live), 1)]
            for row in order:
                row.all_us.append(_time_once(built[row.name], args, scratch, torch))
    finally:
        if gc_was_on:
            gc.enable()
    for row in live:
        row.us = statistics.median(row.all_us)
    gpu = driver.device_name(0)
    return TuneResult(problem, target, gpu, rounds, rows)


def _time_once(kernel: BuiltKernel, args: tuple, scratch: Any, torch: Any) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    scratch.zero_()  # L2 cold
    torch.cuda._sleep(SLACK_CYCLES)  # the GPU waits on this while the host enqueues the launch
    start.record()
    kernel(*args)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3


def _poison(out: Any, problem: GemmProblem) -> None:
    import torch

    if isinstance(out, tuple):  # e4m3 D and its scales: NaN bytes (0x7f: fp8 tensors have no fill) and NaN scales
        out[0].view(torch.uint8).fill_(0x7F)
        out[1].fill_(float("nan"))
    elif problem.accumulate:
        out.zero_()
    else:
        out.fill_(float("nan"))


def _diff(out: Any, reference: Any, valid: Any) -> float:
    from ..quant import calc_diff, dequantize_a

    got = dequantize_a(out[0][valid], out[1][valid]) if isinstance(out, tuple) else out[valid].double()
    want = reference[valid]
    if got.isnan().any():
        return float("inf")
    return calc_diff(got, want)


def _operands(problem: GemmProblem) -> tuple[tuple, Any, Any, Any]:
    """Fresh random inputs for the problem's kernel call (BuiltKernel.__call__), its output tensor, the float64
    reference of that output and the mask of the rows it writes."""
    import torch

    from .. import quant

    args, out, ref, valid = _plain_operands(problem)
    if problem.swiglu:  # B's rows alternate 128 gate and 128 up rows: the reference pairs them
        blocks = ref.unflatten(-1, (problem.n // 256, 2, 128))
        gate, up = blocks.select(-2, 0).flatten(-2), blocks.select(-2, 1).flatten(-2)
        ref = gate * torch.sigmoid(gate) * up
    if problem.out_dtype is DType.E4M3:  # (D, its scales): the scales follow the out tensor in every check
        i = next(i for i, a in enumerate(args) if a is out)
        out = quant.empty_per_token_fp8(*out.shape, device=out.device)
        args = (*args[:i], out[0], *args[i + 1:], out[1])
    return args, out, ref, valid


def _plain_operands(problem: GemmProblem) -> tuple[tuple, Any, Any, Any]:
    """_operands' inputs, D (bf16 or fp32, N or N / 2 columns) and the float64 product A B^T."""
    import torch

    from .. import quant

    p, dev = problem, "cuda"
    m = max(p.m, 1)
    fp8 = {DType.E4M3: torch.float8_e4m3fn, DType.E5M2: torch.float8_e5m2}
    out_dtype = torch.float32 if p.out_dtype is DType.FP32 else torch.bfloat16

    def cast_a(x: Any, dtype: DType) -> tuple[Any, Any, Any]:
        """(values, scales, float64 dequantized) of an operand cast per the recipe (A side)."""
        if dtype is DType.BF16:
            q = x.to(torch.bfloat16)
            return q, None, q.double()
        if p.scales is ScaleRecipe.TENSOR:
            q, s = quant.per_tensor_cast_to_fp8(x)
            return q, s, q.double() * s.double()
        if p.scales is ScaleRecipe.CHANNEL:
            q, s = quant.per_channel_cast_to_fp8(x)
            return q, s, q.double() * s.double().unsqueeze(-1)
        q, s = quant.per_token_cast_to_fp8(x, fp8[dtype])
        return q, s, quant.dequantize_a(q, s)

    def cast_b(w: Any) -> tuple[Any, Any, Any]:
        if p.scales in (ScaleRecipe.A1x128_B128x128,):
            q, s = quant.per_block_cast_to_fp8(w, fp8[p.b_dtype])
            return q, s, quant.dequantize_b(q, s)
        return cast_a(w, p.b_dtype)

    if p.kind is GemmKind.NORMAL:
        a, sa, ad = cast_a(torch.randn(m, p.k, device=dev), p.a_dtype)
        b, sb, bd = cast_b(torch.randn(p.n, p.k, device=dev))
        out = torch.empty(m, p.out_n, device=dev, dtype=out_dtype)
        ref = ad @ bd.t()
        args = (a, b, out) if sa is None else (a, sa, b, sb, out)
        return args, out, ref, torch.ones(m, dtype=torch.bool, device=dev)
    if p.kind is GemmKind.K_GROUPED:
        ks = [p.k] * p.groups
        a, sa, ad = cast_a(torch.randn(m, sum(ks), device=dev), p.a_dtype)
        b, sb, bd = cast_a(torch.randn(p.n, sum(ks), device=dev), p.b_dtype)
        out = torch.empty(p.groups, m, p.n, device=dev, dtype=torch.float32)
        ref = torch.stack([ad[:, g * p.k:(g + 1) * p.k] @ bd[:, g * p.k:(g + 1) * p.k].t() for g in range(p.groups)])
        return (a, sa, b, sb, out, ks), out, ref, torch.ones(p.groups, m, dtype=torch.bool, device=dev)
    w = torch.randn(p.groups, p.n, p.k, device=dev)
    b, sb, bd = cast_b(w)
    if p.kind is GemmKind.M_GROUPED_MASKED:
        a, sa, ad = cast_a(torch.randn(p.groups, m, p.k, device=dev), p.a_dtype)
        counts = torch.full((p.groups,), m, dtype=torch.int32, device=dev)
        out = torch.empty(p.groups, m, p.out_n, device=dev, dtype=out_dtype)
        ref = torch.einsum("gmk,gnk->gmn", ad, bd)
        args = (a, b, out, counts) if sa is None else (a, sa, b, sb, out, counts)
        return args, out, ref, torch.ones(p.groups, m, dtype=torch.bool, device=dev)
    per = m // p.groups // 128 * 128 or 128  # contiguous: equal aligned segments
    index = torch.arange(p.groups, device=dev, dtype=torch.int32).repeat_interleave(per)
    index = torch.cat([index, torch.full((m - index.numel(),), -1, dtype=torch.int32, device=dev)])[:m]
    a, sa, ad = cast_a(torch.randn(m, p.k, device=dev), p.a_dtype)
    out = torch.empty(m, p.out_n, device=dev, dtype=out_dtype)
    ref = torch.zeros(m, p.n, dtype=torch.float64, device=dev)
    for g in range(p.groups):
        rows = index == g
        ref[rows] = ad[rows] @ bd[g].t()
    args = (a, b, out, index) if sa is None else (a, sa, b, sb, out, index)
    return args, out, ref, index >= 0
