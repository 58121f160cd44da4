"""Shared fixtures: a per-test kernel cache, and the GPU marker that skips cleanly without a GPU."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests import shapes.py


def pytest_configure(config: pytest.Config) -> None:
    """Kernels built without an explicit cache (gemmgen.build, the API) go to a throw-away folder, never the user's
    ~/.cache/gemmgen; a GEMMGEN_CACHE_DIR the user set is kept."""
    os.environ.setdefault("GEMMGEN_CACHE_DIR", tempfile.mkdtemp(prefix="gemmgen-test-cache-"))


def _gpu_available() -> bool:
    from gemmgen.runtime.driver import gpu_available

    return gpu_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an sm_90a GPU (none found by the CUDA driver)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One kernel cache for the whole session, so the compile matrix and the GPU tests build each kernel once."""
    return tmp_path_factory.mktemp("gemmgen-cache")


@pytest.fixture
def settings(shared_cache: Path):
    from gemmgen.settings import Settings

    return Settings(cache_dir=shared_cache, use_cache=True, nvrtc_verbose=False, keep_sass=True)


@pytest.fixture
def runner(settings, monkeypatch):
    """click's CliRunner with the kernel cache in the session's shared test cache (never the user's)."""
    from click.testing import CliRunner

    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(settings.cache_dir))
    return CliRunner()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/*.cu from the templates")
