"""select_config: decide block_m, block_n, stages, cluster, block_k and the grid cap.

Reads: the problem (kind, expected rows, groups), the draft config (fields the user pinned stay as they are), the
target. Decides: the fields above. Runs first. Heuristic (DeepGEMM's generation-1/2 rule, docs/KERNEL_DESIGN.md):
fewest waves of tiles over the SMs, then the fullest last wave, then the larger block_n; the deepest ring of stages
that fits shared memory; 2-CTA A-multicast for large M when the N blocks pair up. Grouped problems count tiles over
the expected rows of every group; a contiguous layout's tile must divide the expert alignment. Every candidate is
filtered through `legality.check`.
"""

from __future__ import annotations

from ..ir import BLOCK_K_FP8, LEGAL_N, GemmConfig, GemmKind, GemmProblem, Kernel, Target, ceil_div
from ..legality import check

MAX_AUTO_STAGES = 8
MULTICAST_MIN_M = 1024  # below this the A tile is small and a cluster only constrains the schedule


def _wave_key(problem: GemmProblem, bm: int, bn: int, num_sms: int) -> tuple[int, int, int]:
    blocks = problem.m_blocks(bm) * ceil_div(problem.n, bn)
    waves = ceil_div(blocks, num_sms)
    last_util = blocks - (waves - 1) * num_sms
    return waves, -last_util, -bn  # smaller is better


def _block_m_candidates(problem: GemmProblem) -> list[int]:
    if problem.kind is GemmKind.M_GROUPED_CONTIGUOUS:
        return [64, 128]  # must divide the 128-row expert alignment
    if problem.kind is GemmKind.M_GROUPED_MASKED:
        return [64] if problem.m <= 64 else [64, 128]  # DeepGEMM's masked set: a group's tail tile stays small
    return [64] if problem.m <= 64 else [64, 128, 256]


def _candidates(problem: GemmProblem, draft: GemmConfig) -> list[tuple[int, int]]:
    bms = [draft.block_m] if draft.block_m is not None else _block_m_candidates(problem)
    bns = [draft.block_n] if draft.block_n is not None else [n for n in LEGAL_N if n >= 16]
    return [(bm, bn) for bm in bms for bn in bns]


def _deepest_stages(problem: GemmProblem, base: GemmConfig, target: Target) -> GemmConfig | None:
    for stages in range(MAX_AUTO_STAGES, 2, -1):
        cfg = base.replace(stages=stages)
        if not check(problem, cfg, target):
            return cfg
    return None


def _auto_cluster(problem: GemmProblem, bn: int, target: Target) -> int:
    pairs = ceil_div(problem.n, bn) % 2 == 0 and target.num_sms % 2 == 0
    return 2 if problem.total_rows >= MULTICAST_MIN_M and pairs else 1


def _tile(draft: GemmConfig, bm: int, bn: int, problem: GemmProblem, target: Target) -> GemmConfig:
    """The draft with this pass's fields decided for one (block_m, block_n) candidate; stages still undecided
    unless pinned."""
    return draft.decide(block_m=bm, block_n=bn, cluster=_auto_cluster(problem, bn, target), block_k=BLOCK_K_FP8,
                        num_sms=target.num_sms)


def run(kernel: Kernel, target: Target) -> Kernel:
    problem, draft = kernel.problem, kernel.config
    assert draft is not None, "select_config runs on the pipeline's draft config"
    best: tuple[tuple[int, int, int], GemmConfig] | None = None
    for bm, bn in _candidates(problem, draft):
        base = _tile(draft, bm, bn, problem, target)
        cfg = base if base.stages is not None else _deepest_stages(problem, base, target)
        if cfg is None or check(problem, cfg, target):
            continue
        assert cfg.num_sms is not None
        key = _wave_key(problem, bm, bn, cfg.num_sms)
        if best is None or key < best[0]:
            best = (key, cfg)
    if best is not None:
        return kernel.replace(config=best[1])
    # Nothing legal: keep the first candidate (3 stages unless pinned) so the verifier reports every rule it breaks.
    bm, bn = _candidates(problem, draft)[0]
    return kernel.replace(config=_tile(draft, bm, bn, problem, target).decide(stages=3, cluster=1))
