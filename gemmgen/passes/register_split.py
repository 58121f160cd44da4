"""register_split: decide the setmaxnreg values of the TMA and math warpgroups.

Reads: the number of math warpgroups, the target's register file. Decides: producer_regs, math_regs.
Runs after select_config. The producer needs few registers (one thread issues TMA), so it gives them to the
math warpgroups, which hold two accumulator sets. setmaxnreg is warpgroup-granular and takes multiples of 8
(PTX ISA 9.7.17.1); DeepGEMM uses 40 / 232 with two math warpgroups and 40 / 248 with one (KERNEL_NOTES 5.1).
"""

from __future__ import annotations

from ..ir import Kernel, Target
from ..legality import DEFAULT_PRODUCER_REGS, math_regs_budget


def run(kernel: Kernel, target: Target) -> Kernel:
    assert kernel.config is not None, "register_split runs after select_config"
    forced = kernel.forced_dict()
    producer = forced.get("producer_regs", DEFAULT_PRODUCER_REGS)
    math = forced.get("math_regs", math_regs_budget(kernel.config.math_warpgroups, producer, target))
    return kernel.replace(config=kernel.config.replace(producer_regs=producer, math_regs=math))
