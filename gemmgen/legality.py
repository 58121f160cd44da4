"""The one legality function and the one shared-memory budget (STYLE.md #3).

Config search, the CLI's --config, the pass verifier and the tests all call `check` and `smem_bytes`; no other
module re-derives a rule or a byte count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .ir import LEGAL_N, GemmConfig, GemmProblem, Target, WgmmaShape, ceil_div
from .ir.config import THREADS_PER_WARPGROUP

# NOTE: a 128-byte-swizzled TMA box / wgmma operand must start 1024-byte aligned (PTX ISA 9.7.15.5.1,
# "Shared memory matrix layout": the swizzle pattern repeats every 8 rows of 128 B). Dynamic shared memory is
# only 16-byte aligned, so the kernel rounds its base up and we budget the slack.
SMEM_ALIGN = 1024
SFA_ALIGN = 128  # TMA destination alignment (CUDA driver API: cuTensorMapEncodeTiled)
MATH_REG_OVERHEAD = 40  # registers a math thread needs beyond the two accumulator sets (scales, addresses, loop)
SETMAXNREG_RANGE = (24, 256)  # PTX ISA 9.7.17.1 setmaxnreg: a multiple of 8 in 24..256
DEFAULT_PRODUCER_REGS = 40  # one thread issues TMA; DeepGEMM's producer setmaxnreg (KERNEL_NOTES 5.1)


def _align(x: int, a: int) -> int:
    return ceil_div(x, a) * a


@dataclass(frozen=True, slots=True)
class SmemLayout:
    """Byte offsets from the 1024-aligned dynamic shared-memory base; the template receives these numbers."""

    d_offset: int
    d_bytes: int
    a_offset: int
    a_stage_bytes: int
    b_offset: int
    b_stage_bytes: int
    sfa_offset: int
    sfa_stage_bytes: int
    barrier_offset: int
    total: int  # from the aligned base; the launch asks for total + SMEM_ALIGN


def smem_layout(config: GemmConfig) -> SmemLayout:
    d_bytes = _align(config.block_m * config.block_n * 2, SMEM_ALIGN)  # bf16 D tile, staged for the TMA store
    a_stage = config.block_m * config.block_k
    b_stage = config.block_n * config.block_k
    sfa_stage = _align(config.block_m * 4, SFA_ALIGN)
    a_off = d_bytes
    b_off = a_off + config.stages * a_stage
    sfa_off = _align(b_off + config.stages * b_stage, SFA_ALIGN)
    bar_off = _align(sfa_off + config.stages * sfa_stage, 8)
    total = bar_off + 2 * config.stages * 8  # full + empty mbarriers, 8 bytes each
    return SmemLayout(0, d_bytes, a_off, a_stage, b_off, b_stage, sfa_off, sfa_stage, bar_off, total)


def smem_bytes(config: GemmConfig) -> int:
    """Dynamic shared memory the kernel launches with, alignment slack included: the only budget."""
    return smem_layout(config).total + SMEM_ALIGN


def math_regs_needed(config: GemmConfig) -> int:
    """Registers a math thread needs: the wgmma accumulator set(s), one promoted set per wave, and overhead."""
    acc = WgmmaShape(config.block_n).accum_regs if config.block_n in LEGAL_N else 0
    return acc * ((config.acc_sets or 1) + config.waves) + MATH_REG_OVERHEAD


def math_regs_budget(math_warpgroups: int, producer_regs: int, target: Target) -> int:
    """The most registers each math thread can get once the producer warpgroup keeps `producer_regs`."""
    per_thread = (target.regs_per_sm - THREADS_PER_WARPGROUP * producer_regs) // (
        THREADS_PER_WARPGROUP * math_warpgroups)
    return min(per_thread, target.max_regs_per_thread) // 8 * 8


def b_scale_blocks_spanned(block_n: int) -> int:
    """Worst-case number of 128-row B-scale blocks one N tile touches (tiles start at multiples of block_n)."""
    worst_offset = 128 - math.gcd(block_n, 128)
    return ceil_div(worst_offset + block_n, 128)


def check(problem: GemmProblem, config: GemmConfig, target: Target) -> list[str]:
    """Every rule `config` breaks for `problem` on `target`, as sentences; [] means legal."""
    c = config
    errors: list[str] = []
    if c.block_k != 128:
        errors.append(f"block_k={c.block_k}: FP8 with 1x128 scales needs block_k=128 (one scale block per stage)")
    if c.block_m not in (64, 128, 256):
        errors.append(f"block_m={c.block_m}: expected 64 (one math warpgroup), 128 or 256 (two)")
    if c.block_n not in LEGAL_N:
        errors.append(f"block_n={c.block_n}: wgmma m64nNk32 needs N a multiple of 8 in 8..256")
    elif b_scale_blocks_spanned(c.block_n) > 2:
        errors.append(f"block_n={c.block_n}: a tile may span {b_scale_blocks_spanned(c.block_n)} B-scale blocks; "
                      "the promotion handles at most 2")
    if c.stages < 3:
        errors.append(f"stages={c.stages}: the TMA/wgmma ring needs at least 3 stages")
    if c.stages > 32:
        errors.append(f"stages={c.stages}: at most 32 stages")
    errors += _cluster_rules(problem, c, target)
    budget = smem_bytes(c)
    if budget > target.smem_per_block:
        errors.append(f"shared memory: {budget} bytes needed (block {c.block_m}x{c.block_n}, {c.stages} stages) "
                      f"> {target.smem_per_block} available on {target.name}")
    errors += _register_rules(c, target)
    if c.swizzle_ab is not None and c.swizzle_ab != c.block_k:
        errors.append(f"swizzle_ab={c.swizzle_ab}: K-major e4m3 tiles with block_k=128 need the 128-byte swizzle")
    if c.swizzle_d is not None:
        if c.swizzle_d not in (0, 32, 64, 128):
            errors.append(f"swizzle_d={c.swizzle_d}: expected 0, 32, 64 or 128 bytes")
        elif c.swizzle_d and (c.block_n * 2) % c.swizzle_d:
            errors.append(f"swizzle_d={c.swizzle_d}: must divide the D tile row of {c.block_n * 2} bytes")
    if c.acc_sets is not None and c.acc_sets not in (1, 2):
        errors.append(f"acc_sets={c.acc_sets}: expected 1 or 2 wgmma accumulator sets")
    elif c.acc_sets == 2 and c.waves != 1:
        errors.append(f"acc_sets=2: needs one m64 wave per math warpgroup, block_m={c.block_m} gives {c.waves}")
    if c.raster_group is not None and c.raster_group < 1:
        errors.append(f"raster_group={c.raster_group}: expected >= 1")
    return errors


def _cluster_rules(problem: GemmProblem, c: GemmConfig, target: Target) -> list[str]:
    errors: list[str] = []
    if c.cluster not in (1, 2):
        errors.append(f"cluster={c.cluster}: expected 1 or 2 (2 multicasts the A tile to an N-neighbour)")
        return errors
    n_blocks = problem.n_blocks(c.block_n)
    if c.cluster > 1 and n_blocks % c.cluster:
        errors.append(f"cluster={c.cluster}: ceil(N/block_n) = {n_blocks} N blocks must be divisible by the cluster")
    sms = c.num_sms if c.num_sms is not None else target.num_sms
    if sms % c.cluster:
        errors.append(f"cluster={c.cluster}: the grid of {sms} SMs must be divisible by the cluster")
    if c.num_sms is not None and not 1 <= c.num_sms <= target.num_sms:
        errors.append(f"num_sms={c.num_sms}: expected 1..{target.num_sms} on {target.name}")
    return errors


def _register_rules(c: GemmConfig, target: Target) -> list[str]:
    errors: list[str] = []
    lo, hi = SETMAXNREG_RANGE
    for name in ("producer_regs", "math_regs"):
        value = getattr(c, name)
        if value is not None and (value % 8 or not lo <= value <= min(hi, target.max_regs_per_thread + 1)):
            errors.append(f"{name}={value}: setmaxnreg takes a multiple of 8 in {lo}..{hi}")
    if c.producer_regs is not None and c.math_regs is not None:
        used = THREADS_PER_WARPGROUP * (c.producer_regs + c.math_warpgroups * c.math_regs)
        if used > target.regs_per_sm:
            errors.append(f"registers: {used} per CTA (producer {c.producer_regs}, {c.math_warpgroups} x math "
                          f"{c.math_regs}) > {target.regs_per_sm}")
    limit = c.math_regs if c.math_regs is not None else math_regs_budget(
        c.math_warpgroups, c.producer_regs or DEFAULT_PRODUCER_REGS, target)
    if c.block_n in LEGAL_N and math_regs_needed(c) > limit:
        errors.append(f"registers: block {c.block_m}x{c.block_n} needs ~{math_regs_needed(c)} per math thread "
                      f"(accumulators x{(c.acc_sets or 1) + c.waves} + {MATH_REG_OVERHEAD}) > {limit}; it would spill")
    return errors
