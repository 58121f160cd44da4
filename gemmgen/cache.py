"""Content-addressed kernel cache (docs/ARCHITECTURE.md section 6): one folder per kernel, JSON metadata, atomic
publish, verified on every hit, one compile per entry across processes.

Key: sha256 of the rendered source (which embeds the whole IR and every template's output), the NVRTC version, the
compile options, gemmgen's version and the SASS passes run on the cubin (if any). A folder is written under a
temporary name and renamed into place, so readers never see half a kernel. `meta.json` records the sha256 of every
other artifact; a hit whose files do not match (a truncated cubin, say) is a miss with a `CacheWarning`, and the
rebuild replaces the folder. Builders of one entry take a per-entry file lock, so concurrent processes compile it
once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import GemmgenError

META = "meta.json"


class CacheWarning(UserWarning):
    """A cache entry failed verification and is being rebuilt."""


def cache_key(source: str, nvrtc_version: tuple[int, int], options: tuple[str, ...], version: str,
              sass_passes: tuple[str, ...] = ()) -> str:
    """`sass_passes`: the SASS passes run on the cubin; hashed only when there are some, so keys of unpatched
    kernels are those of gemmgen before SASS passes existed, and a patched request never finds an unpatched cubin."""
    parts = [source, f"nvrtc {nvrtc_version}", " ".join(options), f"gemmgen {version}"]
    if sass_passes:
        parts.append(f"sass passes {','.join(sass_passes)}")
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Entry:
    folder: Path
    name: str
    bytes: int
    modified: float  # seconds since the epoch
    problems: tuple[str, ...]  # what verification found wrong; () = intact


class KernelCache:
    def __init__(self, root: Path):
        self.root = Path(root)

    def _check_root(self) -> None:
        if self.root.exists() and not self.root.is_dir():
            raise GemmgenError(f"kernel cache {self.root} is not a directory: point GEMMGEN_CACHE_DIR at a folder")

    def template_dir(self) -> Path:
        """Where the compiled Jinja templates are kept (jinja2.FileSystemBytecodeCache)."""
        self._check_root()
        return self.root / ".jinja"

    def folder(self, name: str, key: str) -> Path:
        return self.root / f"{name}-{key[:16]}"

    def problems(self, folder: Path, key: str | None = None) -> tuple[str, ...]:
        """What is wrong with an entry: unreadable meta, another key, a missing or altered artifact; () = intact."""
        try:
            meta = json.loads((folder / META).read_text())
        except (OSError, ValueError) as exc:
            return (f"{META} unreadable ({type(exc).__name__})",)
        if not isinstance(meta, dict):
            return (f"{META} is not a JSON object",)
        if key is not None and meta.get("cache_key") != key:
            return ("another cache key",)
        artifacts = meta.get("artifacts")
        if not isinstance(artifacts, dict):
            return ("no artifact hashes recorded",)
        found = [] if "kernel.cubin" in artifacts else ["kernel.cubin missing"]
        for fname, digest in sorted(artifacts.items()):
            try:
                if _sha256((folder / fname).read_bytes()) != digest:
                    found.append(f"{fname} does not match its recorded sha256")
            except OSError:
                found.append(f"{fname} missing")
        return tuple(found)

    def lookup(self, name: str, key: str, warn: bool = True) -> Path | None:
        """The entry's folder if it is present and intact; a damaged entry warns (once: `warn`) and is a miss."""
        self._check_root()
        folder = self.folder(name, key)
        if not (folder / META).is_file():
            return None
        found = self.problems(folder, key)
        if found == ("another cache key",):
            return None
        if found and warn:
            warnings.warn(f"gemmgen cache: {folder}: {'; '.join(found)}; rebuilding it", CacheWarning, stacklevel=3)
        return None if found else folder

    @contextlib.contextmanager
    def lock(self, name: str, key: str) -> Iterator[None]:
        """Hold the entry's file lock (POSIX flock): one builder per entry across processes."""
        self._check_root()
        locks = self.root / ".locks"
        locks.mkdir(parents=True, exist_ok=True)
        with open(locks / f"{self.folder(name, key).name}.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def publish(self, name: str, key: str, files: dict[str, bytes]) -> Path:
        """Write `files` as one kernel folder, atomically, recording each artifact's sha256 in meta.json."""
        self._check_root()
        meta = json.loads(files[META])
        meta["artifacts"] = {fname: _sha256(data) for fname, data in sorted(files.items()) if fname != META}
        files = {**files, META: json.dumps(meta, indent=2).encode()}
        final = self.folder(name, key)
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name[:40]}-", dir=self.root))
        try:
            for fname, data in files.items():
                (tmp / fname).write_bytes(data)
            try:
                os.rename(tmp, final)
            except OSError:
                if self.problems(final, key):  # not a lost race with an intact entry: replace the broken folder
                    shutil.rmtree(final, ignore_errors=True)
                    os.rename(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return final

    def entries(self) -> list[Entry]:
        """Every kernel folder (those holding meta.json), verified, oldest first."""
        self._check_root()
        if not self.root.is_dir():
            return []
        out = []
        for folder in sorted(p for p in self.root.iterdir() if p.is_dir() and (p / META).is_file()):
            size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
            name = folder.name.rsplit("-", 1)[0]
            out.append(Entry(folder, name, size, (folder / META).stat().st_mtime, self.problems(folder)))
        return sorted(out, key=lambda e: e.modified)

    def clear(self) -> tuple[int, list[str]]:
        """Remove every entry, failed compile and lock: the number of kernel folders removed, and each folder that
        could not be removed (with why)."""
        self._check_root()
        if not self.root.is_dir():
            return 0, []
        removed, failed = 0, []
        for path in self.root.iterdir():
            if path.is_dir():
                kernel = (path / META).is_file()
                why = _rmtree(path)
                if path.exists():
                    failed.append(why or str(path))
                else:
                    removed += kernel
        return removed, failed

    def writable(self) -> bool:
        """Whether new kernels can be written here (the folder, or the nearest one that exists above it)."""
        probe = self.root
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        return os.access(probe, os.W_OK | os.X_OK)


def _rmtree(path: Path) -> str:
    """Remove a folder tree as far as possible; the first failure ("path: reason"), or "" if none."""
    errors: list[str] = []
    shutil.rmtree(path, onerror=lambda _f, where, exc: errors.append(f"{where}: {exc[1]}"))
    return errors[0] if errors else ""


def age(seconds_since_epoch: float) -> str:
    """A compact local date for listings."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds_since_epoch))
