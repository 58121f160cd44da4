"""The candidate space: every legal config of the schedule dimensions that matter, for one problem.

A candidate is a set of pinned dimensions (tile rows and columns, the multicast pair and the operand it shares, K
splits and where they meet, A and B swapped, the ping-pong consumer); the pass pipeline decides the rest from them
(stages, registers, accumulator sets, swizzles, raster, and the on/off features by the cost model) and its legality
checks filter them, so every candidate is a kernel the generator would build. The user's pins are one more filter:
a dimension they pinned is not varied. `flips` gives a finished kernel's neighbours with one feature
(ir.config.FEATURES) switched: what the tuner times to check the model's feature decisions.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ..errors import IllegalConfigError
from ..ir import FEATURES, DType, GemmKind, GemmProblem, Kernel, ScaleRecipe, Target, ceil_div
from ..passes import run_pipeline
from ..passes.select_config import stream_a_rows

TILE_M = (64, 128, 256)
TILE_N = (16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256)
SPLITS = (1, 2, 3, 4, 6, 8)
SWAP_MAX_M = 32  # A and B swapped carries the tokens as wgmma's N: 8 to 32 of them
TILE_DIMENSIONS = ("block_m", "block_n", "cluster", "multicast_b", "k_splits", "split_global", "swap_ab",
                   "pingpong")  # what candidates vary
# A tuned table row pins these: the dimensions, the features, and what the passes derive from them and M (ring
# depth, A-slot rows, grid cap, column waves), so that the row names the very kernel that was timed.
ROW_FIELDS = (*TILE_DIMENSIONS, *FEATURES, "stages", "a_rows", "num_sms", "wave_n")


@dataclass(frozen=True)
class Candidate:
    pins: tuple[tuple[str, int], ...]  # the dimensions this candidate sets (on top of the user's pins)
    kernel: Kernel  # the finished IR

    @property
    def name(self) -> str:
        assert self.kernel.name
        return self.kernel.name


def _splits(problem: GemmProblem, block_m: int, block_n: int, target: Target) -> tuple[int, ...]:
    """K splits worth trying: only where the tiles alone leave SMs idle, each split at least 4 k-blocks long."""
    tiles = problem.m_blocks(block_m) * problem.n_blocks(block_n)
    if problem.kind is not GemmKind.NORMAL or tiles >= target.num_sms:
        return (1,)
    return tuple(s for s in SPLITS if s == 1 or (problem.k_blocks % s == 0 and problem.k_blocks // s >= 4))


def dimensions(problem: GemmProblem, target: Target) -> Iterator[dict[str, int]]:
    """Every combination of the varied dimensions, before legality (which the pipeline checks)."""
    n_cap = ceil_div(problem.n, 16) * 16
    block_ns = [n for n in TILE_N if n <= max(n_cap, 16)]
    clusters = (1, 2) if problem.total_rows >= 512 else (1,)
    # the ping-pong consumer: the whole-K recipes (a promoting one is legal pinned, but its one accumulator set leaves
    # the tensor cores idle through each promotion, the other warpgroup waiting for its turn: NOTES v0.37)
    pingpong = not problem.scales.promotes and not problem.fused_epilogue
    mcast_b = problem.kind is GemmKind.NORMAL  # the pair of M-neighbours sharing B: dense (legality._cluster_rules)

    def tiles(block_m: int, block_n: int) -> int:
        return problem.m_blocks(block_m) * problem.n_blocks(block_n)
    for block_m, block_n, cluster in itertools.product(TILE_M, block_ns, clusters):
        for splits in _splits(problem, block_m, block_n, target):
            for split_global in ((1, 0) if splits > 1 else (None,)):
                for multicast_b in ((0, 1) if cluster > 1 and mcast_b else (0,)):
                    dims = {"block_m": block_m, "block_n": block_n, "cluster": cluster, "k_splits": splits,
                            "split_global": split_global, "swap_ab": 0, "multicast_b": multicast_b}
                    yield {k: v for k, v in dims.items() if v is not None}
                    # ping-pong where a CTA gets two tiles or more (with one, its second warpgroup has none)
                    if pingpong and splits == 1 and block_m <= 128 and tiles(block_m, block_n) >= 2 * target.num_sms:
                        yield {k: v for k, v in {**dims, "pingpong": 1}.items() if v is not None}
    swappable = (problem.kind is GemmKind.NORMAL and problem.m <= SWAP_MAX_M
                 and problem.scales is ScaleRecipe.A1x128_B128x128 and problem.a_dtype is not DType.BF16)
    if swappable:
        for block_m, splits in itertools.product((64, 128), SPLITS):
            if splits == 1 or (problem.k_blocks % splits == 0 and problem.k_blocks // splits >= 4):
                for split_global in ((1, 0) if splits > 1 else (None,)):
                    dims = {"swap_ab": 1, "block_m": block_m, "block_n": stream_a_rows(problem.m), "cluster": 1,
                            "k_splits": splits, "split_global": split_global}
                    yield {k: v for k, v in dims.items() if v is not None}


def candidates(problem: GemmProblem, target: Target, pins: Mapping[str, int] | None = None) -> list[Candidate]:
    """Every legal candidate (distinct kernels), in enumeration order. `pins`: fields the user fixed; a candidate
    is not varied (every candidate carries them; the kernels that coincide are one candidate)."""
    pins = dict(pins or {})
    seen: dict[str, Candidate] = {}
    for dims in dimensions(problem, target):
        forced = tuple(sorted({**dims, **pins}.items()))  # a pinned dimension takes its pinned value
        try:
            kernel = run_pipeline(Kernel(problem, forced=forced), target)
        except IllegalConfigError:
            continue
        assert kernel.name
        seen.setdefault(kernel.name, Candidate(tuple(sorted(dims.items())), kernel))
    return list(seen.values())


def row_fields(kernel: Kernel) -> dict[str, int]:
    """A finished kernel's values of ROW_FIELDS (split_global only where K is split)."""
    c = kernel.config
    assert c is not None
    dims = {f: getattr(c, f) for f in ROW_FIELDS}
    if (c.k_splits or 1) == 1:
        dims.pop("split_global")
    return {k: v for k, v in dims.items() if v is not None}


def flips(kernel: Kernel, target: Target, pins: Mapping[str, int] | None = None) -> list[Candidate]:
    """The legal kernels that differ from a finished one in one feature the user did not pin."""
    base = row_fields(kernel)
    out = []
    for feature in FEATURES:
        if feature in (pins or {}):
            continue
        dims = {**base, feature: 1 - base[feature]}
        try:
            flipped = run_pipeline(Kernel(kernel.problem, forced=tuple(sorted({**dims, **(pins or {})}.items()))),
                                   target)
        except IllegalConfigError:
            continue
        out.append(Candidate(tuple(sorted(dims.items())), flipped))
    return out


def label(candidate: Candidate) -> str:
    """A candidate's dimensions in a few characters: 128x64 ks4g mc2 swab pp."""
    c = candidate.kernel.config
    assert c is not None
    splits = f" ks{c.k_splits}{'g' if c.split_global else ''}" if (c.k_splits or 1) > 1 else ""
    return (f"{c.block_m}x{c.block_n}{splits}"
            + (f" mc{c.cluster}{c.shared_operand}" if (c.cluster or 1) > 1 else "")
            + (" swab" if c.swap_ab else "") + (" pp" if c.pingpong else "")
            + "".join(f" {f}" for f in FEATURES if getattr(c, f)))
