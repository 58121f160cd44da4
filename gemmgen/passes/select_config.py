"""select_config: decide block_m, block_n, stages, cluster and the grid cap.

Reads: the problem, the user's forced fields, the target. Decides: `Kernel.config` (the fields above).
Runs first. Heuristic (DeepGEMM's generation-1/2 rule, KERNEL_NOTES.md section 3): fewest waves of tiles over
the SMs, then the fullest last wave, then the larger block_n; the deepest ring of stages that fits shared memory;
2-CTA A-multicast for large M when the N blocks pair up. Every candidate is filtered through `legality.check`.
"""

from __future__ import annotations

from ..ir import BLOCK_K_FP8, LEGAL_N, GemmConfig, GemmProblem, Kernel, Target, ceil_div
from ..legality import check

MAX_AUTO_STAGES = 8
MULTICAST_MIN_M = 1024  # below this the A tile is small and a cluster only constrains the schedule


def _wave_key(problem: GemmProblem, bm: int, bn: int, num_sms: int) -> tuple[int, int, int]:
    blocks = ceil_div(max(problem.m, 1), bm) * ceil_div(problem.n, bn)
    waves = ceil_div(blocks, num_sms)
    last_util = blocks - (waves - 1) * num_sms
    return waves, -last_util, -bn  # smaller is better


def _candidates(problem: GemmProblem, forced: dict[str, int]) -> list[tuple[int, int]]:
    bms = [forced["block_m"]] if "block_m" in forced else ([64] if problem.m <= 64 else [64, 128, 256])
    bns = [forced["block_n"]] if "block_n" in forced else [n for n in LEGAL_N if n >= 16]
    return [(bm, bn) for bm in bms for bn in bns]


def _deepest_stages(problem: GemmProblem, base: GemmConfig, target: Target) -> GemmConfig | None:
    for stages in range(MAX_AUTO_STAGES, 2, -1):
        cfg = base.replace(stages=stages)
        if not check(problem, cfg, target):
            return cfg
    return None


def _auto_cluster(problem: GemmProblem, bn: int, target: Target) -> int:
    pairs = ceil_div(problem.n, bn) % 2 == 0 and target.num_sms % 2 == 0
    return 2 if problem.m >= MULTICAST_MIN_M and pairs else 1


def _config(bm: int, bn: int, cluster: int, forced: dict[str, int], num_sms: int) -> GemmConfig:
    """A candidate with every field this pass owns; forced stages/block_k are kept as given."""
    return GemmConfig(bm, bn, forced.get("stages", 3), cluster=cluster, block_k=forced.get("block_k", BLOCK_K_FP8),
                      num_sms=num_sms)


def run(kernel: Kernel, target: Target) -> Kernel:
    problem, forced = kernel.problem, kernel.forced_dict()
    num_sms = forced.get("num_sms", target.num_sms)
    best: tuple[tuple[int, int, int], GemmConfig] | None = None
    for bm, bn in _candidates(problem, forced):
        cluster = forced.get("cluster", _auto_cluster(problem, bn, target))
        base = _config(bm, bn, cluster, forced, num_sms)
        cfg = base if "stages" in forced else _deepest_stages(problem, base, target)
        if cfg is None or check(problem, cfg, target):
            continue
        key = _wave_key(problem, bm, bn, num_sms)
        if best is None or key < best[0]:
            best = (key, cfg)
    if best is not None:
        return kernel.replace(config=best[1])
    # Nothing legal: keep the forced/first candidate so the verifier reports every rule it breaks.
    bm, bn = _candidates(problem, forced)[0]
    return kernel.replace(config=_config(bm, bn, forced.get("cluster", 1), forced, num_sms))
