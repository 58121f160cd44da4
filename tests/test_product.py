"""What a new user meets first, checked as they would meet it (subprocesses of the installed package): one version,
the declared dependencies, and `gemmgen build`'s summary naming the NVRTC, the problem and the caller's pins."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gemmgen

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "from gemmgen.cli import main; main()"]


def _cli(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GEMMGEN_CACHE_DIR": str(cache)}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=300)


def test_one_version_everywhere(tmp_path: Path) -> None:
    done = _cli("--version", cache=tmp_path)
    assert done.returncode == 0 and gemmgen.__version__ in done.stdout, done.stdout + done.stderr
    assert importlib.metadata.version("gemmgen") == gemmgen.__version__


def test_the_declared_dependencies() -> None:
    """torch is an extra (the generator and CLI never need it), numpy is gone, NVRTC is pinned to the 13.x range."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"]
    names = [d.split(">")[0].split("=")[0].split("<")[0].strip() for d in deps]
    assert "torch" not in names and "numpy" not in names
    assert any(d.replace(" ", "").startswith("nvidia-cuda-nvrtc>=13.0,<14") for d in deps), deps
    assert any(d.startswith("torch") for d in project["optional-dependencies"]["torch"])
    assert any(d.startswith("torch") for d in project["optional-dependencies"]["test"])


def test_build_names_the_nvrtc_the_problem_and_the_pins(tmp_path: Path) -> None:
    args = ("build", "--shape", "128x256x512", "--config", "block_n=128", "--out", str(tmp_path / "out"))
    text = _cli(*args, cache=tmp_path / "cache")
    assert text.returncode == 0, text.stderr
    assert "NVRTC 13." in text.stdout and "why      pinned: block_n=128: given by the caller" in text.stdout
    summary = json.loads(_cli(*args, "--json", cache=tmp_path / "cache").stdout)
    assert summary["nvrtc"].startswith("13.")
    assert {k: summary["problem"][k] for k in ("kind", "a_dtype", "b_dtype", "out_dtype", "scales", "swiglu")} == {
        "kind": "normal", "a_dtype": "e4m3", "b_dtype": "e4m3", "out_dtype": "bf16", "scales": "1x128/128x128",
        "swiglu": False}
    assert {"pass": "pinned", "reason": "block_n=128: given by the caller"} in summary["reasons"]
