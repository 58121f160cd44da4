"""select_split_reduce: decide where a split tile's K splits meet (GemmConfig.split_global).

Reads: k_splits (select_config). Decides: split_global. Runs after select_config.
0: the splits are the ranks of one cluster and rank 0 adds the others' partial tiles through distributed shared
memory, then stores D (split_k_reduce.cu.j2). 1: every split is its own CTA of the persistent grid; each writes its
fp32 partial to a global workspace and counts itself in with an atomic, and the last to arrive adds all of them in
split order (so the sum is the cluster version's, bit for bit) and stores D (split_k_global.cu.j2). Nothing waits
for a peer and no cluster has to be co-scheduled.
"""

from __future__ import annotations

from ..ir import Kernel, Target


def run(kernel: Kernel, target: Target) -> Kernel:
    cfg = kernel.config
    assert cfg is not None and cfg.block_m is not None, "select_split_reduce runs after select_config"
    if cfg.split_global is not None:
        return kernel if (cfg.k_splits or 1) == 1 else kernel.because(
            "select_split_reduce", ("K splits meet in a global workspace" if cfg.split_global else
                                    "K splits meet through distributed shared memory") + " (forced)")
    return kernel.replace(config=cfg.decide(split_global=0))
