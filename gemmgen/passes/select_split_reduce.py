"""select_split_reduce: decide where a split tile's K splits meet (GemmConfig.split_global).

Reads: k_splits (select_config). Decides: split_global. Runs after select_config.
0: the splits are the ranks of one cluster and rank 0 adds the others' partial tiles through distributed shared
memory, then stores D (split_k_reduce.cu.j2). 1: every split is its own CTA of the persistent grid; each writes its
fp32 partial to a global workspace and counts itself in with an atomic, and the last to arrive adds all of them in
split order (so the sum is the cluster version's, bit for bit) and stores D (split_k_global.cu.j2). Nothing waits
for a peer and no cluster has to be co-scheduled.
Measured (ab_configs, 7 rotated rounds, bench/results/2026-12-01-347e055-split-global), the same tiles and splits in
the workspace against the cluster hand-over: 1 / 8 / 32 x 2112 x 7168 (64x32, 2 splits) x1.054 / x1.062 / x1.067,
1 / 8 x 4096 x 7168 (swapped, 2 splits) x1.046 / x1.051, 1 / 8 / 32 x 576 x 7168 (64x32, 4 splits) x1.193 / x1.218 /
x1.218; the same tiles in 4 splits through clusters of 4: x0.58-0.62 of the workspace's. So every K split a
pass picks meets in the workspace; a pinned split_global keeps its value.
"""

from __future__ import annotations

from ..ir import Kernel, Target


def run(kernel: Kernel, target: Target) -> Kernel:
    cfg = kernel.config
    assert cfg is not None and cfg.block_m is not None, "select_split_reduce runs after select_config"
    if cfg.split_global is not None or (cfg.k_splits or 1) == 1:
        return kernel.replace(config=cfg.decide(split_global=0))  # decided already, or nothing to meet
    return kernel.replace(config=cfg.decide(split_global=1)).because(
        "select_split_reduce", f"{cfg.k_splits} K splits meet in a global workspace: the last to arrive adds the "
        "partials; x1.05-1.22 measured over the cluster hand-over")
