"""register_split: decide the setmaxnreg values of the TMA and math warpgroups.

Reads: the number of math warpgroups, the target's register file. Decides: producer_regs, math_regs.
Runs after select_config. The producer needs few registers (one thread issues TMA), so it gives them to the
math warpgroups, which hold two accumulator sets. setmaxnreg is warpgroup-granular and takes multiples of 8
(PTX ISA 9.7.17.1); DeepGEMM uses 40 / 232 with two math warpgroups and 40 / 248 with one (docs/KERNEL_DESIGN.md).
"""

from __future__ import annotations

from ..ir import Kernel, Target
from ..legality import DEFAULT_PRODUCER_REGS, math_regs_budget


def run(kernel: Kernel, target: Target) -> Kernel:
    cfg = kernel.config
    assert cfg is not None and cfg.has_tile, "register_split runs after select_config"
    cfg = cfg.decide(producer_regs=DEFAULT_PRODUCER_REGS)
    assert cfg.producer_regs is not None
    decided = cfg.decide(math_regs=math_regs_budget(cfg.math_warpgroups, cfg.producer_regs, target))
    why = (f"producer {decided.producer_regs}, math {decided.math_regs}: what {target.regs_per_sm} registers leave "
           f"{decided.math_warpgroups} math warpgroup(s) after the producer's")
    return kernel.replace(config=decided).because("register_split", why)
