"""The GPU a kernel is built for: every hardware number gemmgen uses lives here (docs/CONVENTIONS.md #13)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Target:
    name: str  # preset or device name, for humans
    arch: str  # NVRTC --gpu-architecture; FP8 wgmma and setmaxnreg need the "a" variant (PTX ISA 9.7.15)
    num_sms: int  # persistent grid size
    smem_per_block: int  # opt-in dynamic shared memory per block, bytes
    regs_per_sm: int  # 32-bit registers per SM (and per block with one block per SM)
    max_regs_per_thread: int  # setmaxnreg ceiling
    max_cluster: int  # largest portable cluster size

    def __post_init__(self) -> None:
        if not self.arch.startswith("sm_90"):
            raise ValueError(f"Target.arch: gemmgen emits Hopper code, expected sm_90a, got {self.arch!r}")
        for field in ("num_sms", "smem_per_block", "regs_per_sm", "max_regs_per_thread", "max_cluster"):
            if getattr(self, field) <= 0:
                raise ValueError(f"Target.{field}: expected a positive number, got {getattr(self, field)}")


# NOTE: H100/H200 SXM: 132 SMs, 227 KiB = 232448 B opt-in shared memory per block, 64 Ki registers per SM
# (CUDA C++ Programming Guide, compute capability 9.0 table; 132 SMs read off our H200 by torch).
H200_SXM = Target("H200 SXM", "sm_90a", 132, 232448, 65536, 255, 8)
H100_SXM = Target("H100 SXM", "sm_90a", 132, 232448, 65536, 255, 8)
PRESETS: dict[str, Target] = {"h200": H200_SXM, "h100": H100_SXM}


def as_target(target: object) -> Target:
    """A Target, or a preset's name as the CLI spells it ("h100", "h200"; "sm_90a": the default, H200)."""
    if isinstance(target, Target):
        return target
    if isinstance(target, str):
        return H200_SXM if target.lower() == "sm_90a" else preset(target)
    raise TypeError(f"target: expected a gemmgen.Target or one of {sorted(PRESETS)} / 'sm_90a', got "
                    f"{type(target).__name__}")


def preset(name: str) -> Target:
    try:
        return PRESETS[name.lower()]
    except KeyError:
        raise ValueError(f"target: expected one of {sorted(PRESETS)}, got {name!r}") from None
