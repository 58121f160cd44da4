"""select_features: decide the schedule's on/off features (ir.config.FEATURES) by the cost model.

Reads: the problem and the otherwise complete config, the target's cost coefficients. Decides: evict_first,
sa_gather, epilogue_per_wg, balanced, cross_tile, a_shift. Runs after every other config pass (the estimate needs a
finished config). Each undecided feature is estimated on and off (tuning/cost.py, the others off) and kept where it is
legal and estimated faster; where the model is wrong for a problem, a tuned table row pins the measured value.
"""

from __future__ import annotations

from ..ir import FEATURES, GemmConfig, GemmProblem, Kernel, Target
from ..legality import check

# Features that act only where the launch's M calls for them (a partial last M block; 3+ rounds over 128 rows): an
# estimate tied with off takes them, so one kernel serves every M
RUN_TIME_GUARDED = ("balanced", "a_shift")


def _estimate(problem: GemmProblem, cfg: GemmConfig, target: Target, coeffs: object) -> float:
    from ..tuning import cost
    from .plan_kernel import make_plan
    kernel = Kernel(problem, config=cfg, plan=make_plan(problem, cfg, target))
    return cost.estimate(kernel, coeffs)[0]  # type: ignore[arg-type]


def decide(problem: GemmProblem, cfg: GemmConfig, target: Target) -> tuple[GemmConfig, list[str]]:
    """cfg with every undecided feature decided, and a note per feature taken (its estimated gain)."""
    from ..tuning import cost

    coeffs = cost.coefficients(target)
    base = cfg.decide(**dict.fromkeys(FEATURES, 0))
    open_ = [f for f in FEATURES if getattr(cfg, f) is None]
    if not open_ or check(problem, base, target):
        return base, []
    off = _estimate(problem, base, target, coeffs)
    taken: dict[str, int] = {}
    notes = []
    for feature in open_:
        on = base.replace(**{feature: 1})
        if check(problem, on, target):
            continue
        seconds = _estimate(problem, on, target, coeffs)
        if seconds < off or seconds == off and feature in RUN_TIME_GUARDED:
            taken[feature] = 1
            tie = "" if seconds < off else ": no effect at this M"
            notes.append(f"{feature} (estimate x{off / seconds:.3f}{tie})")
    decided = base.replace(**taken)
    return (decided, notes) if not check(problem, decided, target) else (base, [])


def run(kernel: Kernel, target: Target) -> Kernel:
    cfg = kernel.config
    assert cfg is not None and cfg.has_tile, "select_features runs after the other config passes"
    decided, notes = decide(kernel.problem, cfg, target)
    why = "features estimated faster: " + ", ".join(notes) if notes else "no undecided feature estimated faster"
    return kernel.replace(config=decided).because("select_features", why)
