"""Warm the kernel cache ahead of serving: build every kernel a set of problems selects, in parallel processes.

    gemmgen.precompile([GemmProblem(64, 7168, 2048), ...])             # or problems_for_m_range(N, K, 1, 8192)

Compiling is CPU work (NVRTC), so the problems' distinct kernels are built by a process pool; a progress bar (tqdm)
reports them as they finish and a `PrecompileReport` sums up. Needs no GPU and does not import torch.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field

from .errors import GemmgenError
from .ir import CONTIGUOUS_ALIGNMENT, H200_SXM, GemmKind, GemmProblem, Target, ceil_div
from .passes.select_config import A_ROWS, A_ROWS_STEP
from .settings import Settings
from .stages import build, decide, forced_fields
from .tuning import space

SELECTION_STEP = 64  # the smallest block_m: selection sees M only through ceil(M / block_m) and the 64/1024 rules


@dataclass
class PrecompileReport:
    problems: int  # problems asked for
    kernels: int  # distinct kernels they select
    compiled: int = 0
    cached: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)  # (kernel, error)
    seconds: float = 0.0
    built: list[str] = field(default_factory=list)  # the kernels now in the cache (compiled or found there)
    interrupted: bool = False  # stopped by Ctrl-C: the kernels finished so far are kept

    def line(self) -> str:
        failed = f", {len(self.failed)} failed" if self.failed else ""
        return (f"{self.problems} problem(s) -> {self.kernels} kernel(s): {self.compiled} compiled, {self.cached} "
                f"already cached{failed} in {self.seconds:.1f} s")


def problems_for_m_range(n: int, k: int, m_lo: int, m_hi: int, *, kind: GemmKind = GemmKind.NORMAL,
                         groups: int = 1) -> list[GemmProblem]:
    """Problems covering every kernel that an M in [m_lo, m_hi] selects for (N, K): the ends of each 64-row step
    (selection sees M only through ceil(M / block_m), block_m in 64/128/256, thresholds at multiples of 64, a
    one-M-block tile's A rows, select_config.A_ROWS and then every A_ROWS_STEP rows up to the largest tile, and the
    most token columns A and B swapped take, tuning/space.SWAP_MAX_M). A
    contiguous layout's M_total is a multiple of 128, so each of those is taken."""
    if not 0 <= m_lo <= m_hi:
        raise ValueError(f"M range: expected 0 <= LO <= HI, got {m_lo}:{m_hi}")
    if kind is GemmKind.M_GROUPED_CONTIGUOUS:
        ms = range(ceil_div(m_lo, CONTIGUOUS_ALIGNMENT) * CONTIGUOUS_ALIGNMENT, m_hi + 1, CONTIGUOUS_ALIGNMENT)
        values = sorted(set(ms))
    else:
        ends = {m_lo, m_hi}
        for step in range(m_lo // SELECTION_STEP, m_hi // SELECTION_STEP + 1):
            ends |= {step * SELECTION_STEP + 1, (step + 1) * SELECTION_STEP}
        for rows in A_ROWS:  # a one-M-block tile's A slot holds the fewest of these rows that M fits in
            ends |= {rows, rows + 1}
        for rows in range(A_ROWS[-1], max(space.TILE_M), A_ROWS_STEP):  # then M rounded up to A_ROWS_STEP rows
            ends |= {rows, rows + 1}
        ends |= {space.SWAP_MAX_M, space.SWAP_MAX_M + 1}  # the most tokens A and B swapped carry
        values = sorted(m for m in ends if m_lo <= m <= m_hi)
    return [GemmProblem(m, n, k, kind=kind, groups=groups) for m in values]


def _build_one(problem: GemmProblem, config: dict[str, int] | None, target: Target,
               settings: Settings) -> tuple[str, bool]:
    built = build(problem, config, target, settings=settings)
    return built.name, built.from_cache


def precompile(problems: Iterable[GemmProblem], config: dict[str, int] | None = None, target: Target = H200_SXM, *,
               jobs: int | None = None, progress: bool = True, settings: Settings | None = None) -> PrecompileReport:
    """Build (or find cached) every distinct kernel `problems` select; returns what happened. Raises only for a
    problem whose config is illegal (before any compile); compile failures are reported in `failed`."""
    from tqdm import tqdm

    start = time.perf_counter()
    settings = settings or Settings.from_env()
    problems = list(problems)
    for item in problems:
        if not isinstance(item, GemmProblem):
            raise TypeError(f"problems: expected GemmProblem items, got {type(item).__name__} ({item!r})")
    forced = forced_fields(config)
    kernels: dict[str, GemmProblem] = {}
    for problem in problems:  # selection is cheap and in-process: dedupe before spending compiles
        name = decide(problem, forced, target, settings).name
        assert name
        kernels.setdefault(name, problem)
    report = PrecompileReport(len(problems), len(kernels))
    pool = ProcessPoolExecutor(max_workers=jobs)
    try:
        with tqdm(total=len(kernels), unit="kernel", disable=not progress, desc="gemmgen precompile") as bar:
            futures = {pool.submit(_build_one, p, dict(forced) or None, target, settings): name
                       for name, p in kernels.items()}
            for future in as_completed(futures):
                try:
                    _, from_cache = future.result()
                    report.cached += from_cache
                    report.compiled += not from_cache
                    report.built.append(futures[future])
                except GemmgenError as exc:
                    report.failed.append((futures[future], str(exc).splitlines()[0]))
                bar.update(1)
    except KeyboardInterrupt:  # stop within a second: queued compiles cancelled, running ones abandoned
        report.interrupted = True
        workers = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in workers:
            proc.terminate()
    else:
        pool.shutdown()
    report.seconds = time.perf_counter() - start
    return report
