"""pipeline_wgmma: decide how many wgmma accumulator sets each math warpgroup keeps (acc_sets).

Reads: block_m/block_n/wave_n (waves, accumulator size), math_regs, the scale recipe (its promotion's registers).
Decides: acc_sets. Runs after register_split.
With one set, a warpgroup's k-block is a serial chain: wait for the slot, wgmma, wait for the wgmma, promote.
With two, k-block kb+1's wgmma group is issued before k-block kb is promoted, so the tensor cores work while the
CUDA cores promote; that matters most where one warpgroup has the SM to itself (small M). It costs a second
accumulator set of registers and needs one wave per warpgroup (a 256-row tile's two row waves, or a 128x256 tile's
two column waves, already alternate).
"""

from __future__ import annotations

from ..ir import GemmKind, Kernel, Target
from ..legality import acc_set_rules, math_regs_needed


def run(kernel: Kernel, target: Target) -> Kernel:
    cfg = kernel.config
    assert cfg is not None and cfg.math_regs is not None, "pipeline_wgmma runs after register_split"
    promotes = kernel.problem.scales.promotes
    two = cfg.replace(acc_sets=2)
    need = math_regs_needed(two, kernel.problem.scales)
    kgrouped = kernel.problem.kind is GemmKind.K_GROUPED
    fits = not acc_set_rules(kernel.problem, two) and need <= cfg.math_regs
    decided = cfg.decide(acc_sets=2 if fits else 1)
    overlap = ("k-block kb+1's wgmma overlaps kb's promotion" if promotes else
               "one wgmma group stays in flight while the next k-block's slot is awaited (no promotion)")
    why = (f"{decided.acc_sets} set(s): " + (overlap if fits else
           "a k-grouped main loop runs a run-time number of k-blocks with one set" if kgrouped else
           f"a second set needs one wave (wgmma tile) per warpgroup ({cfg.waves} here) and ~{need} registers "
           f"({cfg.math_regs} available)"))
    return kernel.replace(config=decided).because("pipeline_wgmma", why)
