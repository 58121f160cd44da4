"""select_l2_hint: decide whether the weights' TMA loads carry an L2 evict_first policy (GemmConfig.evict_first).

Reads: the problem kind, M, the tile (block_m, block_n, swap_ab, k_splits). Decides: evict_first. Runs after
select_config.
Every HBM read lands in L2 (50 MB on H100/H200) and replaces a line there; where that line is dirty (the output of
the kernel before, or the benchmark's 256 MB zeroed flush buffer) it is written back first, and the write-back
shares HBM with the read stream. A decode GEMM reads each weight byte once: loaded evict_first (PTX ISA,
createpolicy; the .L2::cache_hint operand of cp.async.bulk.tensor), those lines are the first replaced, so the
stream cycles through a small part of L2 and leaves the rest (and its dirty lines) alone.
The weights are read once where one tile row covers all of M: unswapped, M fits one M block (block_m, or a_rows);
swapped, M fits the token columns (block_n). Where several M blocks read a weight tile (prefill), its lines must stay
in L2 for the next M block, and the default policy stays.
"""

from __future__ import annotations

from ..ir import GemmKind, Kernel, Target

HINT_KINDS = (GemmKind.NORMAL,)  # grouped kinds: masked rows are known only on the GPU; not measured


def weights_read_once(kernel: Kernel) -> bool:
    p, c = kernel.problem, kernel.config
    assert c is not None and c.block_m is not None and c.block_n is not None
    token_rows = c.block_n if c.swap_ab else c.block_m
    return p.kind in HINT_KINDS and p.m <= token_rows


def run(kernel: Kernel, target: Target) -> Kernel:
    cfg = kernel.config
    assert cfg is not None and cfg.block_m is not None, "select_l2_hint runs after select_config"
    if cfg.evict_first is not None:
        why = "weights loaded L2 evict_first" if cfg.evict_first else "weights loaded with the default L2 policy"
        return kernel.because("select_l2_hint", why + " (forced)")
    return kernel.replace(config=cfg.decide(evict_first=0))
