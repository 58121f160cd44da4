"""How to compute it: `GemmConfig` (docs/CONVENTIONS.md #1). A field left `None` is undecided: a later pass decides it.

The pass pipeline starts from `GemmConfig.draft(forced)`: every field `None` except the ones the user pinned, and
each pass fills only undecided fields (`decide`). So a pinned field is applied once, here, and no pass has to
know which fields were forced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from .problem import is_int

THREADS_PER_WARPGROUP = 128
# On/off schedule features, each a 0/1 field: select_features decides them by the cost model (tuning/cost.py)
FEATURES = ("evict_first", "sa_gather", "epilogue_per_wg", "balanced", "cross_tile", "a_shift")
BLOCK_K_FP8 = 128  # one 128-byte swizzle row of e4m3 = one scale block of K


@dataclass(frozen=True, slots=True)
class GemmConfig:
    block_m: int | None = None  # rows of D per CTA tile (64: one math warpgroup; 128/256: two)
    block_n: int | None = None  # columns of D per CTA tile (the wgmma N unless wave_n splits it)
    stages: int | None = None  # depth of the shared-memory ring of (A, B, SFA) k-blocks
    cluster: int | None = 1  # CTAs per cluster; 2: a pair sharing one operand's tile via TMA multicast (multicast_b)
    block_k: int | None = BLOCK_K_FP8  # K per pipeline stage (fixed for FP8: one scale block)
    swizzle_ab: int | None = None  # TMA/wgmma swizzle of A and B tiles, bytes (select_swizzle)
    swizzle_d: int | None = None  # TMA swizzle of the staged D tile, bytes, 0 = none (select_swizzle)
    producer_regs: int | None = None  # setmaxnreg of the TMA warpgroup (register_split)
    math_regs: int | None = None  # setmaxnreg of each math warpgroup (register_split)
    acc_sets: int | None = None  # wgmma accumulator sets per math warpgroup; 2 overlaps k-block kb+1's wgmma
    # with k-block kb's promotion (needs one wave, row or column, per warpgroup and the registers) (pipeline_wgmma)
    raster_group: int | None = None  # N-units walked before the next M block, for L2 reuse (rasterize)
    num_sms: int | None = None  # persistent grid size cap (select_config: the target's SM count)
    k_splits: int | None = 1  # CTAs that split a tile's K blocks, each a contiguous run of them; their partial
    # tiles are added in split order, where split_global says (select_config: few tiles, long K)
    wave_n: int | None = None  # columns of one wgmma (its N): block_n, or block_n / 2 for a tile whose m64 x block_n
    # accumulator would not fit twice in registers (128x256: two m64n128 waves per warpgroup share one accumulator
    # set, like a 256x128 tile's two m64 waves, but along N, so the tile keeps 128 rows) (select_config)
    a_rows: int | None = None  # rows of A each stage loads (its TMA box and ring slot): block_m, or fewer for a
    # dense 64- or 128-row tile whose whole M fits (select_config: decode tiles, and the wave rule's up to M = 16).
    # wgmma still reads 64 rows per warpgroup: the rest are whatever follows in shared memory, and those rows of the
    # accumulator are never stored.
    sa_gather: int | None = None  # 1: producer threads gather each stage's A scales with cp.async even where SA is
    # in the TMA layout (the TMA thread then issues only the A and B boxes); 0: SA by TMA where its layout allows
    # (select_features)
    pdl: int | None = None  # 1: programmatic dependent launch. The launch lets the kernel start while the previous
    # kernel in the stream still runs; it sets up its barriers and prefetches its tensor maps, then every thread
    # waits (griddepcontrol.wait) for that kernel to finish before any global read or write, and then lets the next
    # kernel launch. None: the call's default (1 under gemmgen.set_pdl(True), else 0; select_config decides 0).
    swap_ab: int | None = None  # 1: the decode kernel with A and B swapped: the weights are wgmma's A (block_m of
    # their rows per tile, in m64 waves), the tokens its B (block_n = M rounded up to 8, 16 or 32 columns), D^T tiles
    # stored transposed into D. None: select_config decides (1 at M <= 16 over >= 64 weight tiles, _swap_pays).
    evict_first: int | None = None  # 1: the weights' TMA loads carry an L2 evict_first policy (PTX createpolicy):
    # bytes read once pass through L2 replacing each other rather than the lines already there, dirty ones included
    # (whose write-back would share HBM with the stream). 0: the default policy (select_features).
    split_global: int | None = None  # with k_splits > 1, how the splits meet. 1: each split is its own CTA of the
    # persistent grid (no cluster); it writes its fp32 partial tile to a global workspace and counts itself in with
    # an atomic, and the last of a tile's splits to arrive adds the partials in split order and stores D, while
    # the others go on. 0: the splits are cluster ranks and rank 0 adds the others' partials through distributed
    # shared memory (select_split_reduce)
    # The schedule's features (select_features decides each where the cost model estimates it faster and it is legal):
    epilogue_per_wg: int | None = None  # 1: each of two math warpgroups stages and TMA-stores its own rows of D (its
    # own barrier and store thread), so one's epilogue overlaps the other's main loop
    balanced: int | None = None  # 1: a dense launch of 3+ rounds of tiles takes the fewest clusters that keep its
    # round count (LaunchPlan.grid, decided at launch from M)
    cross_tile: int | None = None  # 1: the math warps issue the next tile's first main-loop step before this tile's
    # epilogue, so the tensor cores run it while the tile is converted and stored (hides the tile switch)
    a_shift: int | None = None  # 1: a dense M's last, partial M block loads its A box ending at M (at most 7 rows
    # past it) rather than a box mostly past M, whose zero fill is slow
    pingpong: int | None = None  # 1: the ping-pong consumer (CUTLASS's KernelTmaWarpSpecializedPingpong): each of the
    # two math warpgroups owns a whole block_m x block_n tile, the CTA's tiles taken in turn, so one's epilogue runs
    # while the other's main loop does; 0: cooperative, the two split one tile's rows (select_config, a candidate
    # dimension: it changes the registers and shared memory a tile needs)
    multicast_b: int | None = None  # with cluster=2: 1 pairs M-neighbours, which share the B tile (the weights, the
    # larger box of a wide tile; cuBLAS's H100 kernels pair this way at M = 4096); 0 pairs N-neighbours sharing A
    # (select_config, a candidate dimension)

    def __post_init__(self) -> None:
        for name in CONFIG_FIELDS:  # (type() first: selection makes tens of thousands of configs)
            value = getattr(self, name)
            if value is not None and type(value) is not int and not is_int(value):
                raise ValueError(f"GemmConfig.{name}: expected an integer, got {value!r}")
        for name in _POSITIVE:
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"GemmConfig.{name}: expected a positive integer, got {value!r}")
        for name in _FLAGS:
            if getattr(self, name) not in (None, 0, 1):
                raise ValueError(f"GemmConfig.{name}: expected 0 or 1, got {getattr(self, name)!r}")

    @staticmethod
    def draft(forced: dict[str, int] | None = None) -> GemmConfig:
        """Every field undecided except `forced` (the pipeline's starting point)."""
        undecided = dict.fromkeys(CONFIG_FIELDS)
        return GemmConfig(**{**undecided, **(forced or {})})  # type: ignore[arg-type]

    def decide(self, **values: int) -> GemmConfig:
        """Fill the fields that are still undecided; a decided (e.g. forced) field keeps its value."""
        return dataclasses.replace(self, **{k: v for k, v in values.items() if getattr(self, k) is None})

    @property
    def has_tile(self) -> bool:
        """The fields select_config decides are set, so budgets and the legality rules can be evaluated."""
        return None not in (self.block_m, self.block_n, self.stages, self.cluster, self.block_k, self.k_splits)

    @property
    def math_warpgroups(self) -> int:
        """One math warpgroup for a 64-row tile, two otherwise (each then owns block_m / 2 rows); ping-pong: two,
        each owning whole tiles."""
        assert self.block_m is not None
        return 1 if self.block_m <= 64 and not self.pingpong else 2

    @property
    def rows_per_math_wg(self) -> int:
        """Rows of a tile one math warpgroup computes: its share of the tile, or (ping-pong) the whole tile."""
        assert self.block_m is not None
        return self.block_m if self.pingpong else self.block_m // self.math_warpgroups

    @property
    def wgmma_n(self) -> int:
        """N of each wgmma: wave_n once decided, else the whole tile width."""
        assert self.block_n is not None
        return self.wave_n if self.wave_n is not None else self.block_n

    @property
    def waves_m(self) -> int:
        """m64 row waves per math warpgroup (a 256-row tile: 2)."""
        return self.rows_per_math_wg // 64

    @property
    def waves_n(self) -> int:
        """Column waves: block_n / wgmma_n (a 128x256 tile of m64n128 wgmma: 2)."""
        assert self.block_n is not None
        return self.block_n // self.wgmma_n

    @property
    def waves(self) -> int:
        """m64 x wgmma_n sub-tiles per math warpgroup per k-block (one main-loop step each); they reuse one
        accumulator set. Wave w covers rows (w / waves_n) x 64 and columns (w % waves_n) x wgmma_n of the
        warpgroup's part of the tile."""
        return self.waves_m * self.waves_n

    @property
    def load_rows(self) -> int:
        """Rows of A per ring slot: a_rows once decided, else the whole tile."""
        assert self.block_m is not None
        return self.a_rows if self.a_rows is not None else self.block_m

    @property
    def sa_rows(self) -> int:
        """Rows of A's scales a stage holds: the tile's, or the tokens' block_n with A and B swapped."""
        assert self.block_m is not None and self.block_n is not None
        return self.block_n if self.swap_ab else self.block_m

    @property
    def weight_rows(self) -> int:
        """Rows of B (the weights) a stage holds: the tile's columns, or its rows with A and B swapped."""
        assert self.block_m is not None and self.block_n is not None
        return self.block_m if self.swap_ab else self.block_n

    @property
    def cluster_splits(self) -> bool:
        """The K splits are cluster ranks meeting through distributed shared memory (k_splits > 1, not
        split_global)."""
        return (self.k_splits or 1) > 1 and not self.split_global

    @property
    def shared_operand(self) -> str:
        """The operand a cluster pair multicasts: "b" (multicast_b: M-neighbours), else "a" (N-neighbours)."""
        return "b" if self.multicast_b else "a"

    @property
    def ctas_per_cluster(self) -> int:
        """The launch's cluster: `cluster` multicast neighbours times the K splits where they are cluster ranks
        (cluster_splits)."""
        assert self.cluster is not None
        return self.cluster * (self.k_splits or 1 if self.cluster_splits else 1)

    @property
    def num_threads(self) -> int:
        return THREADS_PER_WARPGROUP * (1 + self.math_warpgroups)

    @property
    def is_complete(self) -> bool:
        return all(getattr(self, f.name) is not None for f in dataclasses.fields(self))

    def replace(self, **changes: object) -> GemmConfig:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


CONFIG_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(GemmConfig))
_POSITIVE = ("block_m", "block_n", "stages", "cluster", "block_k", "k_splits", "wave_n", "a_rows")
_FLAGS = ("pdl", "swap_ab", "split_global", "pingpong", "multicast_b", *FEATURES)


def parse_overrides(pairs: list[str] | tuple[str, ...]) -> dict[str, int]:
    """`key=value` strings (CLI --config) -> {field: int}, with errors naming the bad piece."""
    out: dict[str, int] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep:
            raise ValueError(f"--config {pair!r}: expected key=value")
        if key not in CONFIG_FIELDS:
            raise ValueError(f"--config {pair!r}: unknown field {key!r}; expected one of {', '.join(CONFIG_FIELDS)}")
        if key in out:
            raise ValueError(f"--config {pair!r}: {key} is given twice")
        try:
            out[key] = int(raw)
        except ValueError:
            raise ValueError(f"--config {pair!r}: expected an integer value, got {raw!r}") from None
    return out


def check_overrides(config: Mapping[str, object]) -> dict[str, int]:
    """A `config=` dict from the Python API, checked as the CLI checks --config: known fields, integer values."""
    for key, value in config.items():
        if key not in CONFIG_FIELDS:
            raise ValueError(f"config: unknown field {key!r}; expected one of {', '.join(CONFIG_FIELDS)}")
        if not is_int(value):
            raise ValueError(f"config: {key} expects an integer, got {value!r}")
    return dict(config)  # type: ignore[arg-type]
