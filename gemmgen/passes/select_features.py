"""select_features: decide the schedule's on/off features (ir.config.FEATURES) by the cost model.

Reads: the problem and the otherwise complete config, the target's cost coefficients. Decides: evict_first,
sa_gather, epilogue_per_wg, balanced, cross_tile, a_shift. Runs after every other config pass (the estimate needs a
finished config). From all off, each undecided feature is switched where that is legal and the estimate
(tuning/cost.py) falls, until no single switch lowers it; where the model is wrong for a problem, a tuned table row
pins the measured value.
"""

from __future__ import annotations

from ..ir import FEATURES, GemmConfig, GemmProblem, Kernel, Target
from ..legality import check

# Features that act only where the launch's M calls for them (a partial last M block; 3+ rounds over 128 rows): an
# estimate tied with off takes them, so one kernel serves every M
RUN_TIME_GUARDED = ("balanced", "a_shift")


def estimate_config(problem: GemmProblem, cfg: GemmConfig, target: Target,
                    coeffs: object) -> tuple[float, dict[str, float]]:
    """The cost model's estimate (seconds, terms) of a complete config, its plan derived here."""
    from ..tuning import cost
    from .plan_kernel import make_plan
    kernel = Kernel(problem, config=cfg, plan=make_plan(problem, cfg, target))
    return cost.estimate(kernel, coeffs)  # type: ignore[arg-type]


def _estimate(problem: GemmProblem, cfg: GemmConfig, target: Target, coeffs: object) -> float:
    return estimate_config(problem, cfg, target, coeffs)[0]


def decide(problem: GemmProblem, cfg: GemmConfig, target: Target) -> tuple[GemmConfig, list[str]]:
    """cfg with every undecided feature decided, and a note per feature taken (its estimated gain): from all off,
    each open feature is switched where that is legal and estimated faster given the others, until none is (the
    terms interact: SA gathered frees the TMA thread, so the weights' L2 policy may then matter)."""
    from ..tuning import cost

    coeffs = cost.coefficients(target)
    current = cfg.decide(**dict.fromkeys(FEATURES, 0))
    open_ = [f for f in FEATURES if getattr(cfg, f) is None]
    if not open_ or check(problem, current, target):
        return current, []
    seconds = _estimate(problem, current, target, coeffs)
    for _sweep in range(len(open_)):
        changed = False
        for feature in open_:
            trial = current.replace(**{feature: 1 - getattr(current, feature)})
            if check(problem, trial, target):
                continue
            trial_s = _estimate(problem, trial, target, coeffs)
            tie_on = trial_s == seconds and feature in RUN_TIME_GUARDED and getattr(trial, feature)
            if trial_s < seconds or tie_on:
                current, seconds, changed = trial, trial_s, True
        if not changed:
            break
    notes = []
    for feature in (f for f in open_ if getattr(current, f)):
        without = _estimate(problem, current.replace(**{feature: 0}), target, coeffs)
        tie = "" if seconds < without else ": no effect at this M"
        notes.append(f"{feature} (estimate x{without / seconds:.3f}{tie})")
    return current, notes


def run(kernel: Kernel, target: Target) -> Kernel:
    cfg = kernel.config
    assert cfg is not None and cfg.has_tile, "select_features runs after the other config passes"
    decided, notes = decide(kernel.problem, cfg, target)
    why = "features estimated faster: " + ", ".join(notes) if notes else "no undecided feature estimated faster"
    return kernel.replace(config=decided).because("select_features", why)
