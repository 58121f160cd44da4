"""Every GEMMGEN_* environment variable, read in one place (docs/CONVENTIONS.md #11).

Nothing else in gemmgen reads the environment: callers pass a `Settings` (or take `Settings.from_env()`).

| variable | default | meaning |
|---|---|---|
| GEMMGEN_CACHE_DIR | ~/.cache/gemmgen | content-addressed kernel cache |
| GEMMGEN_NO_CACHE | 0 | 1: always compile (the result is still written to the cache) |
| GEMMGEN_NVRTC_VERBOSE | 0 | 1: print the NVRTC command line and log of every compile |
| GEMMGEN_KEEP_SASS | 1 | 0: skip disassembly on build (SASS then only on demand; SASS passes disassemble anyway) |
| GEMMGEN_SASS_PASSES | default | SASS control-bit passes for new cubins: `interleave_ffma,register_reuse`, `none` |
| GEMMGEN_TUNED | (unset) | a tuned table (`gemmgen tune`) read first; `off`: no table, not even the shipped one |

GEMMGEN_SASS_PASSES: a comma list of pass names (`interleave_ffma`, `register_reuse`; interleave_ffma needs
register_reuse), `none`, or unset / `default` for `stages.default_sass_passes(nvrtc version)` (no passes yet, for
every NVRTC version, until measured). The list is part of the cache key (docs/KERNEL_DESIGN.md, SASS passes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def _flag(env: dict[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}={raw!r}: expected 0/1, true/false, yes/no or on/off")


def _pass_list(env: dict[str, str], name: str) -> tuple[str, ...] | None:
    raw = (env.get(name) or "").strip()
    if raw.lower() in ("", "default"):
        return None
    names = tuple(part.strip() for part in raw.split(","))
    if any(not n for n in names):
        raise ValueError(f"{name}={raw!r}: an empty name in the comma list")
    if "none" in (n.lower() for n in names):
        if len(names) > 1:
            raise ValueError(f"{name}={raw!r}: 'none' stands alone")
        return ()
    return names


@dataclass(frozen=True, slots=True)
class Settings:
    cache_dir: Path  # root of the kernel cache; one sub-folder per kernel hash
    use_cache: bool  # False: compile even when a cached kernel exists
    nvrtc_verbose: bool  # echo the compile command line and log
    keep_sass: bool  # disassemble every build (needs nvdisasm/cuobjdump)
    # SASS passes to run on each new cubin, by name; None: the default for the NVRTC version
    # (stages.default_sass_passes); (): none. The names are checked by stages.resolve_sass_passes.
    sass_passes: tuple[str, ...] | None = None
    # GEMMGEN_TUNED: a tuned table's path, read before the default ones (tuning/table.py), "off" for none; None: unset
    tuned: str | None = None

    @staticmethod
    def from_env(env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ) if env is None else env
        cache = env.get("GEMMGEN_CACHE_DIR") or str(Path.home() / ".cache" / "gemmgen")
        return Settings(
            cache_dir=Path(cache).expanduser(),
            use_cache=not _flag(env, "GEMMGEN_NO_CACHE", False),
            nvrtc_verbose=_flag(env, "GEMMGEN_NVRTC_VERBOSE", False),
            keep_sass=_flag(env, "GEMMGEN_KEEP_SASS", True),
            sass_passes=_pass_list(env, "GEMMGEN_SASS_PASSES"),
            tuned=env.get("GEMMGEN_TUNED") or None,
        )
