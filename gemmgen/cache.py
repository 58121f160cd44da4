"""Content-addressed kernel cache (STYLE.md #10): one folder per kernel, JSON metadata, atomic publish.

Key: sha256 of the rendered source (which embeds the whole IR and every template's output), the NVRTC
version, the compile options and gemmgen's version. A folder is written under a temporary name and renamed into
place, so readers never see half a kernel; losing a race to another writer is harmless.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path


def cache_key(source: str, nvrtc_version: tuple[int, int], options: tuple[str, ...], version: str) -> str:
    h = hashlib.sha256()
    for part in (source, f"nvrtc {nvrtc_version}", " ".join(options), f"gemmgen {version}"):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


class KernelCache:
    def __init__(self, root: Path):
        self.root = Path(root)

    def folder(self, name: str, key: str) -> Path:
        return self.root / f"{name}-{key[:16]}"

    def lookup(self, name: str, key: str) -> Path | None:
        folder = self.folder(name, key)
        meta = folder / "meta.json"
        if not meta.is_file() or not (folder / "kernel.cubin").is_file():
            return None
        try:
            if json.loads(meta.read_text()).get("cache_key") != key:
                return None
        except (OSError, json.JSONDecodeError):
            return None
        return folder

    def publish(self, name: str, key: str, files: dict[str, bytes]) -> Path:
        """Write `files` as one kernel folder, atomically; returns the final folder."""
        final = self.folder(name, key)
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name[:40]}-", dir=self.root))
        try:
            for fname, data in files.items():
                (tmp / fname).write_bytes(data)
            try:
                os.rename(tmp, final)
            except OSError:
                if self.lookup(name, key) is None:  # not a lost race: replace a broken folder
                    shutil.rmtree(final, ignore_errors=True)
                    os.rename(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return final
