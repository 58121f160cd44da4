"""select_config: decide block_m, block_n, stages, cluster, block_k, k_splits and the grid cap; record why.

Reads: the problem (kind, expected rows, groups, K blocks), the draft config (fields the user pinned stay as they
are), the target. Decides: the fields above, and appends its reason to `Kernel.reasons`. Runs first.

Two regimes (docs/KERNEL_DESIGN.md, "Config selection"; measurements in bench/NOTES.md):
- Enough tiles to fill the SMs (prefill): DeepGEMM's generation-1/2 rule — fewest waves of tiles over the SMs,
  then the fullest last wave, then the larger block_n; the deepest ring of stages that fits shared memory; 2-CTA
  A-multicast for large M when the N blocks pair up. Grouped problems count tiles over the expected rows of every
  group; a contiguous layout's tile must divide the expert alignment.
- One M block and too few N tiles to fill the SMs (decode, M <= 64 dense): the time is a latency-bound stream of
  B, so each CTA wants wide k-blocks (block_n) and the SMs want to all be streaming. Measured on the H200
  (bench/NOTES.md, v0.3): a wider tile on fewer SMs beats a narrow tile on every SM (1x7168x16384: 64x128 on 56 SMs
  44 us, 64x56 on 128 SMs 60 us), and the K splits of one tile then fill the idle SMs, reduced through
  distributed shared memory inside the cluster (k_splits). Score: CTAs streaming x bytes each keeps in flight.
Every candidate is filtered through `legality.check`.
"""

from __future__ import annotations

from ..ir import BLOCK_K_FP8, LEGAL_N, GemmConfig, GemmKind, GemmProblem, Kernel, Target, ceil_div
from ..legality import MAX_K_SPLITS, check

MAX_AUTO_STAGES = 8  # prefill: deeper rings measured no faster (bench/NOTES.md v0.1)
MAX_STREAM_STAGES = 16  # decode: more B in flight per SM is the lever (1x2112x7168, 64x16: 8 -> 16 stages 22 -> 16 us)
MULTICAST_MIN_M = 1024  # below this the A tile is small and a cluster only constrains the schedule
STREAM_BLOCK_N = (64, 96, 128, 160, 192)  # decode tile widths tried (registers cap 64xN at 192 with one set)
MIN_KB_PER_SPLIT = 4  # a K split shorter than this spends its time filling and draining the ring


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


def _deepest_stages(problem: GemmProblem, base: GemmConfig, target: Target, cap: int) -> GemmConfig | None:
    for stages in range(cap, 2, -1):
        cfg = base.replace(stages=stages)
        if not check(problem, cfg, target):
            return cfg
    return None


def _auto_cluster(problem: GemmProblem, bn: int, target: Target) -> int:
    pairs = ceil_div(problem.n, bn) % 2 == 0 and target.num_sms % 2 == 0
    return 2 if problem.total_rows >= MULTICAST_MIN_M and pairs else 1


def _tile(draft: GemmConfig, bm: int, bn: int, problem: GemmProblem, target: Target, splits: int = 1) -> GemmConfig:
    """The draft with this pass's fields decided for one candidate; stages still undecided unless pinned."""
    cluster = 1 if splits > 1 else _auto_cluster(problem, bn, target)
    return draft.decide(block_m=bm, block_n=bn, cluster=cluster, block_k=BLOCK_K_FP8, num_sms=target.num_sms,
                        k_splits=splits)


def _prefill(problem: GemmProblem, draft: GemmConfig, target: Target) -> tuple[GemmConfig, str] | None:
    best: tuple[tuple[int, int, int], GemmConfig] | None = None
    for bm, bn in _candidates(problem, draft):
        base = _tile(draft, bm, bn, problem, target, draft.k_splits or 1)
        cfg = base if base.stages is not None else _deepest_stages(problem, base, target, MAX_AUTO_STAGES)
        if cfg is None or check(problem, cfg, target):
            continue
        assert cfg.num_sms is not None
        key = _wave_key(problem, bm, bn, cfg.num_sms)
        if best is None or key < best[0]:
            best = (key, cfg)
    if best is None:
        return None
    (waves, neg_last, _), cfg = best
    return cfg, (f"{waves} wave(s) of {problem.m_blocks(cfg.block_m or 64)}x{problem.n_blocks(cfg.block_n or 8)} "
                 f"tiles over {cfg.num_sms} SMs, last wave {-neg_last} tiles; block_n {cfg.block_n} is the widest "
                 f"with that; {cfg.stages} stages fill shared memory; cluster {cfg.cluster}"
                 + (" (A multicast: M >= 1024 and the N blocks pair up)" if (cfg.cluster or 1) > 1 else ""))


def _is_stream(problem: GemmProblem, draft: GemmConfig, target: Target) -> bool:
    """Decode regime: one dense 64-row M block whose tiles (at the prefill rule's choice) leave SMs idle."""
    if problem.kind is not GemmKind.NORMAL or problem.m > 64 or draft.cluster not in (None, 1):
        return False
    if draft.block_m not in (None, 64):
        return False
    return problem.n_blocks(128) * 2 <= target.num_sms or problem.n_blocks(16) < target.num_sms


def _stream(problem: GemmProblem, draft: GemmConfig, target: Target) -> tuple[GemmConfig, str] | None:
    """Decode: score = CTAs streaming at once x B bytes each keeps in flight (stages x block_n x 128); ties go to
    fewer splits. Every CTA runs at most one tile (one wave), and a split keeps >= MIN_KB_PER_SPLIT k-blocks."""
    bns = [draft.block_n] if draft.block_n is not None else list(STREAM_BLOCK_N)
    splits = [draft.k_splits] if draft.k_splits is not None else list(range(1, MAX_K_SPLITS + 1))
    best: tuple[tuple[int, int], GemmConfig, int] | None = None
    for bn in bns:
        tiles = problem.n_blocks(bn)
        for s in splits:
            if problem.k_blocks % s or (s > 1 and problem.k_blocks // s < MIN_KB_PER_SPLIT):
                continue
            ctas = tiles * s
            if ctas > target.num_sms // s * s and s > 1:
                continue
            base = _tile(draft, 64, bn, problem, target, s)
            cfg = base if base.stages is not None else _deepest_stages(problem, base, target, MAX_STREAM_STAGES)
            if cfg is None or check(problem, cfg, target):
                continue
            assert cfg.stages is not None
            in_flight = min(ctas, target.num_sms) * cfg.stages * bn * BLOCK_K_FP8
            key = (-in_flight, s)
            if best is None or key < best[0]:
                best = (key, cfg, ctas)
    if best is None:
        return None
    _, cfg, ctas = best
    return cfg, (f"decode: one M block, {problem.n_blocks(cfg.block_n or 8)} N tiles of {cfg.block_n} x "
                 f"{cfg.k_splits} K split(s) = {ctas} CTAs of {target.num_sms} SMs, each keeping {cfg.stages} stages "
                 f"x {cfg.block_n} x 128 B of B in flight ({-best[0][0] / 1e6:.1f} MB in all, the most of any "
                 "legal (block_n, k_splits))")


def run(kernel: Kernel, target: Target) -> Kernel:
    problem, draft = kernel.problem, kernel.config
    assert draft is not None, "select_config runs on the pipeline's draft config"
    chosen = _stream(problem, draft, target) if _is_stream(problem, draft, target) else None
    if chosen is None:
        chosen = _prefill(problem, draft, target)
    if chosen is not None:
        return kernel.replace(config=chosen[0]).because("select_config", chosen[1])
    # Nothing legal: keep the first candidate (3 stages unless pinned) so the verifier reports every rule it breaks.
    bm, bn = _candidates(problem, draft)[0]
    cfg = _tile(draft, bm, bn, problem, target, draft.k_splits or 1).decide(stages=3, cluster=1)
    return kernel.replace(config=cfg).because("select_config", "no legal candidate: the verifier lists the rules")
