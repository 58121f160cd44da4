"""Tables of measured winners: rows of (problem class, M range) -> config, each with its provenance.

Selection reads them after the user's pins and before its own rules (stages.build): the first row that matches the
problem decides every config field it names; the passes decide the rest. Where tables come from, first match wins:
1. tables loaded in this process (`gemmgen.load_tuned(path)`), the latest first;
2. `GEMMGEN_TUNED=<path>` (Settings.tuned; `off`: no table at all, not even the shipped one);
3. the user table `gemmgen tune` writes by default: <cache dir>/tuned/<target>.json;
4. the table shipped with gemmgen for the target (gemmgen/tuning/tables/<target>.json), if there is one.

A table file is JSON: {"format": FORMAT, "target": "h100", "rows": [row, ...]}; a row:
    {"kind": "normal", "scales": "1x128/128x128", "a": "e4m3", "b": "e4m3", "out": "bf16", "accumulate": false,
     "groups": 1, "n": 2112, "k": 7168, "m": [1, 16], "config": {"block_m": 64, ...},
     "provenance": {"source": "gemmgen tune", "date": ..., "gpu": ..., "rounds": ..., "us": ..., "default_us": ...,
                    "gain": ..., "results": ...}}
`m` is the range (inclusive) of the rows config selection sees (dense M, contiguous M_total, masked expected rows).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import GemmgenError
from ..ir import GemmProblem, Target, check_overrides

FORMAT = "gemmgen-tuned-1"
SHIPPED_DIR = Path(__file__).resolve().parent / "tables"
PROBLEM_KEYS = ("kind", "scales", "a", "b", "out", "accumulate", "groups", "n", "k")
OPTIONAL_KEYS = {"swiglu": False}  # problem fields newer than the first tables: a row without one has the default


def target_slug(target: Target) -> str:
    """A target's table name: "h100" / "h200" for the presets (whatever their SM count), else its name made safe."""
    name = target.name.lower()
    for preset in ("h100", "h200"):
        if preset in name:
            return preset
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "gpu"


def problem_key(p: GemmProblem) -> dict[str, Any]:
    """What a row must match, besides M: the problem's class."""
    return {"kind": p.kind.value, "scales": p.scales.value, "a": p.a_dtype.value, "b": p.b_dtype.value,
            "out": p.out_dtype.value, "accumulate": p.accumulate, "groups": p.groups, "n": p.n, "k": p.k,
            "swiglu": p.swiglu}


def row_key(raw: dict[str, Any]) -> tuple[Any, ...]:
    """A row's (or problem_key's) class: PROBLEM_KEYS' values, then OPTIONAL_KEYS' (defaults where absent)."""
    return tuple(raw[k] for k in PROBLEM_KEYS) + tuple(raw.get(k, d) for k, d in OPTIONAL_KEYS.items())


class TableError(GemmgenError):
    """A tuned table that cannot be read: its path and what is wrong."""


@dataclass(frozen=True)
class Row:
    key: tuple[Any, ...]  # row_key: PROBLEM_KEYS' and OPTIONAL_KEYS' values
    m_lo: int
    m_hi: int
    config: dict[str, int]
    provenance: dict[str, Any]
    source: str  # the table's path

    def matches(self, key: tuple[Any, ...], m: int) -> bool:
        return self.key == key and self.m_lo <= m <= self.m_hi

    def reason(self) -> str:
        prov = self.provenance
        gain = prov.get("gain")
        measured = (f", measured {gain:.3f}x the default ({prov.get('gpu', '?')}, {prov.get('date', '?')})"
                    if isinstance(gain, (int, float)) else "")
        fields = ", ".join(f"{k}={v}" for k, v in sorted(self.config.items()))
        return f"tuned table {self.source} row for M {self.m_lo}..{self.m_hi}: {fields}{measured}"


def _row(raw: object, where: str, source: str) -> Row:
    if not isinstance(raw, dict):
        raise TableError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    missing = [k for k in (*PROBLEM_KEYS, "m", "config") if k not in raw]
    if missing:
        raise TableError(f"{where}: missing {', '.join(missing)}")
    m = raw["m"]
    if not (isinstance(m, list) and len(m) == 2 and all(isinstance(v, int) for v in m) and 0 <= m[0] <= m[1]):
        raise TableError(f"{where}: m must be [lo, hi] with 0 <= lo <= hi, got {m!r}")
    config = raw["config"]
    if not isinstance(config, dict) or not config:
        raise TableError(f"{where}: config must be a non-empty object of schedule fields")
    try:
        config = check_overrides(config)
    except ValueError as exc:
        raise TableError(f"{where}: {exc}") from None
    provenance = raw.get("provenance", {})
    return Row(row_key(raw), m[0], m[1], config,
               provenance if isinstance(provenance, dict) else {}, source)


def read_rows(path: Path) -> list[Row]:
    """A table file's rows, checked (a clear TableError naming the file and row otherwise)."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise TableError(f"tuned table {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise TableError(f"tuned table {path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("rows"), list):
        raise TableError(f"tuned table {path}: expected {{\"format\": \"{FORMAT}\", \"rows\": [...]}}")
    return [_row(r, f"{path} row {i}", str(path)) for i, r in enumerate(data["rows"])]


@dataclass
class Tables:
    """The tables selection reads, in precedence order, read once per (path, modification time)."""

    loaded: list[Path] = field(default_factory=list)  # load_tuned(), the latest first
    on_load: list[Callable[[], None]] = field(default_factory=list)  # who must choose kernels again (gemmgen.api)
    _cache: dict[Path, tuple[float, list[Row]]] = field(default_factory=dict)

    def _rows(self, path: Path) -> list[Row]:
        stamp = path.stat().st_mtime
        hit = self._cache.get(path)
        if hit is None or hit[0] != stamp:
            hit = self._cache[path] = (stamp, read_rows(path))
        return hit[1]

    def paths(self, target: Target, cache_dir: Path, env_value: str | None) -> list[Path]:
        if env_value is not None and env_value.strip().lower() == "off":
            return []
        slug = target_slug(target)
        found = list(self.loaded)
        if env_value:
            found.append(Path(env_value).expanduser())
        for default in (user_table(cache_dir, target), SHIPPED_DIR / f"{slug}.json"):
            if default.is_file():
                found.append(default)
        return found

    def lookup(self, problem: GemmProblem, target: Target, cache_dir: Path, env_value: str | None) -> Row | None:
        key = row_key(problem_key(problem))
        for path in self.paths(target, cache_dir, env_value):
            for row in self._rows(path):
                if row.matches(key, problem.m):
                    return row
        return None


def load_tuned(path: str | Path) -> None:
    """gemmgen.load_tuned: read a tuned table (`gemmgen tune` writes them) and let selection consult it first, before
    GEMMGEN_TUNED, the user table and the shipped one; kernels this process already chose are chosen again. A table
    that cannot be read raises a TableError naming the file and the row."""
    path = Path(path).expanduser()
    read_rows(path)
    TABLES.loaded.insert(0, path)
    for forget in TABLES.on_load:
        forget()


def user_table(cache_dir: Path, target: Target) -> Path:
    """Where `gemmgen tune` writes by default: one table per target under the kernel cache."""
    return Path(cache_dir) / "tuned" / f"{target_slug(target)}.json"


TABLES = Tables()  # the process's (gemmgen.load_tuned adds to it)


def write_rows(path: Path, target: Target, rows: list[dict[str, Any]]) -> None:
    """Add rows to a table file (made if missing): a new row replaces an old one for the same problem class whose M
    range it covers; written to a temporary file then renamed."""
    path = Path(path)
    old: list[dict[str, Any]] = []
    if path.is_file():
        read_rows(path)  # refuse to extend a broken table
        old = json.loads(path.read_text())["rows"]
    for new in rows:
        _row(new, f"new row for {path}", str(path))
        old = [r for r in old if not (row_key(r) == row_key(new)
                                      and new["m"][0] <= r["m"][0] and r["m"][1] <= new["m"][1])]
        old.insert(0, new)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({"format": FORMAT, "target": target_slug(target), "rows": old}, indent=1) + "\n")
    tmp.replace(path)

