"""How to compute it: `GemmConfig` (STYLE.md #1). Fields left `None` are decided by a later pass."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

THREADS_PER_WARPGROUP = 128
BLOCK_K_FP8 = 128  # one 128-byte swizzle row of e4m3 = one scale block of K


@dataclass(frozen=True, slots=True)
class GemmConfig:
    block_m: int  # rows of D per CTA tile (64: one math warpgroup; 128/256: two)
    block_n: int  # columns of D per CTA tile = the wgmma N
    stages: int  # depth of the shared-memory ring of (A, B, SFA) k-blocks
    cluster: int = 1  # CTAs per cluster along N; 2: the pair shares the A tile via TMA multicast
    block_k: int = BLOCK_K_FP8  # K per pipeline stage (fixed for FP8: one scale block)
    swizzle_ab: int | None = None  # TMA/wgmma swizzle of A and B tiles, bytes (select_swizzle)
    swizzle_d: int | None = None  # TMA swizzle of the staged D tile, bytes, 0 = none (select_swizzle)
    producer_regs: int | None = None  # setmaxnreg of the TMA warpgroup (register_split)
    math_regs: int | None = None  # setmaxnreg of each math warpgroup (register_split)
    acc_sets: int | None = None  # wgmma accumulator sets per math warpgroup; 2 overlaps k-block kb+1's wgmma
    # with k-block kb's promotion (needs one m64 wave per warpgroup and the registers) (pipeline_wgmma)
    raster_group: int | None = None  # N-units walked before the next M block, for L2 reuse (rasterize)
    num_sms: int | None = None  # persistent grid size cap (select_config: the target's SM count)

    def __post_init__(self) -> None:
        for name in ("block_m", "block_n", "stages", "cluster", "block_k"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"GemmConfig.{name}: expected a positive integer, got {value!r}")

    @property
    def math_warpgroups(self) -> int:
        """One math warpgroup for a 64-row tile, two otherwise (each then owns block_m / 2 rows)."""
        return 1 if self.block_m <= 64 else 2

    @property
    def rows_per_math_wg(self) -> int:
        return self.block_m // self.math_warpgroups

    @property
    def waves(self) -> int:
        """m64 wgmma sub-tiles per math warpgroup per k-block; they reuse one accumulator set."""
        return self.rows_per_math_wg // 64

    @property
    def num_threads(self) -> int:
        return THREADS_PER_WARPGROUP * (1 + self.math_warpgroups)

    @property
    def is_complete(self) -> bool:
        return all(getattr(self, f.name) is not None for f in dataclasses.fields(self))

    def replace(self, **changes: object) -> GemmConfig:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


CONFIG_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(GemmConfig))


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
        try:
            out[key] = int(raw)
        except ValueError:
            raise ValueError(f"--config {pair!r}: expected an integer value, got {raw!r}") from None
    return out
