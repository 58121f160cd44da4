"""The content-addressed kernel cache on its own, then the real build path (NVRTC, no GPU) through it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gemmgen import stages
from gemmgen.cache import CacheWarning, KernelCache, cache_key
from gemmgen.errors import GemmgenError
from gemmgen.ir import GemmProblem
from gemmgen.sass.parse import parse
from gemmgen.settings import Settings

NAME = "sm90_test_kernel"
KEY = cache_key("source", (13, 0), ("--gpu-architecture=sm_90a",), "0.1.0")


def _files(key: str, cubin: bytes = b"\x7fELF cubin") -> dict[str, bytes]:
    return {"kernel.cubin": cubin, "kernel.cu": b"// src", "meta.json": json.dumps({"cache_key": key}).encode()}


# ---------------------------------------------------------------- KernelCache

def test_cache_key_depends_on_every_part() -> None:
    keys = {KEY, cache_key("source2", (13, 0), ("--gpu-architecture=sm_90a",), "0.1.0"),
            cache_key("source", (13, 1), ("--gpu-architecture=sm_90a",), "0.1.0"),
            cache_key("source", (13, 0), ("--gpu-architecture=sm_90",), "0.1.0"),
            cache_key("source", (13, 0), ("--gpu-architecture=sm_90a",), "0.1.1")}
    assert len(keys) == 5 and all(len(k) == 64 for k in keys)


def test_publish_then_lookup(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path / "cache")
    assert cache.lookup(NAME, KEY) is None
    folder = cache.publish(NAME, KEY, _files(KEY))
    assert folder == cache.folder(NAME, KEY) and folder.name == f"{NAME}-{KEY[:16]}"
    assert cache.lookup(NAME, KEY) == folder
    assert (folder / "kernel.cubin").read_bytes() == b"\x7fELF cubin"
    assert [p.name for p in cache.root.iterdir()] == [folder.name]  # no temporary folder left behind


def test_lookup_misses_on_other_key_or_name(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path)
    cache.publish(NAME, KEY, _files(KEY))
    other = cache_key("other source", (13, 0), (), "0.1.0")
    assert cache.lookup(NAME, other) is None
    assert cache.lookup("another_name", KEY) is None


def test_mismatching_meta_key_is_a_miss(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path)
    forged = KEY[:16] + "0" * 48  # same folder name, different full key
    assert forged != KEY
    cache.publish(NAME, forged, _files(forged))
    assert cache.folder(NAME, KEY) == cache.folder(NAME, forged)
    assert cache.lookup(NAME, KEY) is None and cache.lookup(NAME, forged) is not None


def test_broken_folders_are_misses_and_get_replaced(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path)
    folder = cache.folder(NAME, KEY)
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text("{not json")
    (folder / "kernel.cubin").write_bytes(b"old")
    with pytest.warns(CacheWarning, match="meta.json unreadable"):
        assert cache.lookup(NAME, KEY) is None
    assert cache.publish(NAME, KEY, _files(KEY, b"new")) == folder
    assert cache.lookup(NAME, KEY) == folder and (folder / "kernel.cubin").read_bytes() == b"new"


def test_missing_cubin_is_a_miss(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path)
    files = _files(KEY)
    del files["kernel.cubin"]
    cache.publish(NAME, KEY, files)
    with pytest.warns(CacheWarning, match="kernel.cubin missing"):
        assert cache.lookup(NAME, KEY) is None


def test_publish_twice_is_harmless(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path)
    first = cache.publish(NAME, KEY, _files(KEY, b"first"))
    second = cache.publish(NAME, KEY, _files(KEY, b"second"))  # a lost race: the first writer's folder stays
    assert first == second and cache.lookup(NAME, KEY) == first
    assert (first / "kernel.cubin").read_bytes() == b"first"
    assert [p.name for p in tmp_path.iterdir()] == [first.name]


# ---------------------------------------------------------------- the real build path

def _settings(tmp_path: Path, use_cache: bool = True) -> Settings:
    return Settings(cache_dir=tmp_path, use_cache=use_cache, nvrtc_verbose=False, keep_sass=True)


def test_build_then_cache_hit_without_nvrtc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = GemmProblem(128, 256, 512)
    first = stages.build(problem, settings=_settings(tmp_path))
    assert not first.from_cache
    assert first.meta["cache_key"] and first.meta["name"] == first.name
    assert first.meta["resources"]["spill_stores"] == 0 and first.meta["resources"]["spill_loads"] == 0
    assert first.cubin[:4] == b"\x7fELF" and ".target sm_90a" in first.ptx and first.name in first.cu
    assert first.meta["sass_counts"]["QGMMA"] > 0 and first.meta["sass_counts"]["UTMALDG"] > 0
    assert {i.function for i in parse(first.sass)} == {first.name}

    def no_nvrtc(*args: object, **kwargs: object) -> None:
        raise AssertionError("NVRTC was called on a cache hit")

    monkeypatch.setattr(stages, "compile_cuda", no_nvrtc)
    second = stages.build(problem, settings=_settings(tmp_path))
    assert second.from_cache and second.folder == first.folder and second.name == first.name
    assert second.meta == first.meta and second.cubin == first.cubin
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == [first.folder.name]


def test_build_without_cache_compiles_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = GemmProblem(128, 256, 512)
    first = stages.build(problem, settings=_settings(tmp_path))
    calls: list[str] = []
    results = []
    real = stages.compile_cuda

    def counting(source: str, filename: str, arch: str):
        calls.append(filename)
        results.append(real(source, filename, arch))
        return results[-1]

    monkeypatch.setattr(stages, "compile_cuda", counting)
    again = stages.build(problem, settings=_settings(tmp_path, use_cache=False))
    assert calls == [f"{first.name}.cu"] and not again.from_cache
    assert again.folder == first.folder  # same key: the published folder is kept, the new one dropped
    assert results[0].ok and results[0].cubin == first.cubin  # the recompile reproduces the cached cubin


def test_get_kernel_shares_one_kernel_across_m(tmp_path, monkeypatch) -> None:
    """Two M values that pick the same schedule share one BuiltKernel (so one module load on a GPU)."""
    import gemmgen.api as api
    from gemmgen.ir import H200_SXM

    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(tmp_path))
    a = api.get_kernel(4000, 7168, 2048, H200_SXM)  # a partial last M block: the same kernel (a_shift acts at run time)
    b = api.get_kernel(4096, 7168, 2048, H200_SXM)
    assert a.name == b.name and a is b
    c = api.get_kernel(64, 7168, 2048, H200_SXM)
    assert c.name != a.name


# ---------------------------------------------------------------- verification, locking, listing

def test_damaged_artifacts_warn_and_are_rebuilt(tmp_path: Path) -> None:
    """A truncated cubin (or an edited .cu) fails its recorded sha256: a warning, a rebuild, the folder replaced."""
    problem = GemmProblem(128, 256, 512)
    first = stages.build(problem, settings=_settings(tmp_path))
    assert set(first.meta["artifacts"]) >= {"kernel.cubin", "kernel.cu", "kernel.ptx", "kernel.sass"}
    good = first.cubin
    (first.folder / "kernel.cubin").write_bytes(good[:100])
    with pytest.warns(CacheWarning, match="kernel.cubin does not match its recorded sha256"):
        again = stages.build(problem, settings=_settings(tmp_path))
    assert not again.from_cache and again.folder == first.folder and again.cubin == good
    (first.folder / "kernel.cubin").unlink()
    with pytest.warns(CacheWarning, match="kernel.cubin missing"):
        assert not stages.build(problem, settings=_settings(tmp_path)).from_cache
    assert stages.build(problem, settings=_settings(tmp_path)).from_cache


def _build_in_process(cache_dir: str) -> bool:
    built = stages.build(GemmProblem(256, 384, 640), settings=_settings(Path(cache_dir)))
    return built.from_cache


def test_concurrent_builders_compile_once(tmp_path: Path) -> None:
    """8 processes build the same new kernel at once: one compiles, seven load its entry (the per-entry lock)."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(8) as pool:
        from_cache = pool.map(_build_in_process, [str(tmp_path)] * 8)
    assert sorted(from_cache) == [False] + [True] * 7, from_cache
    assert len([p for p in tmp_path.iterdir() if not p.name.startswith(".")]) == 1


def test_cache_root_that_is_a_file(tmp_path: Path) -> None:
    root = tmp_path / "file"
    root.write_text("not a folder")
    with pytest.raises(GemmgenError, match="is not a directory"):
        stages.build(GemmProblem(128, 256, 512), settings=_settings(root))


def test_entries_verify_and_clear(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path)
    assert cache.entries() == [] and cache.clear() == (0, [])
    cache.publish(NAME, KEY, _files(KEY))
    other = cache_key("other", (13, 0), (), "0.1.0")
    cache.publish("sm90_other", other, _files(other))
    (cache.folder("sm90_other", other) / "kernel.cu").write_bytes(b"edited")
    entries = {e.name: e for e in cache.entries()}
    assert set(entries) == {NAME, "sm90_other"} and entries[NAME].problems == ()
    assert entries["sm90_other"].problems == ("kernel.cu does not match its recorded sha256",)
    assert entries[NAME].bytes > 0 and entries[NAME].modified > 0
    assert cache.clear() == (2, []) and cache.entries() == []


def test_tests_never_use_the_users_cache() -> None:
    from gemmgen.settings import Settings

    assert Settings.from_env().cache_dir != Path.home() / ".cache" / "gemmgen"


@pytest.mark.parametrize("meta", ["[1, 2]", "null", "3"])
def test_meta_that_is_not_an_object_is_a_damaged_entry(tmp_path: Path, meta: str) -> None:
    """Valid JSON that is not an object: listed and verified as damaged, warned about once (one line on the
    command line), rebuilt and replaced by the next build; no command crashes."""
    import subprocess
    import sys

    env = {**os.environ, "GEMMGEN_CACHE_DIR": str(tmp_path)}
    cli = [sys.executable, "-c", "from gemmgen.cli import main; main()"]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*cli, *args], capture_output=True, text=True, env=env, timeout=300)

    assert run("build", "--shape", "128x256x512", "--out", str(tmp_path / "out")).returncode == 0
    (folder,) = [p for p in tmp_path.iterdir() if p.name.startswith("sm90_")]
    (folder / "meta.json").write_text(meta)
    listed, verified = run("cache", "list"), run("cache", "verify")
    assert listed.returncode == 0 and "meta.json is not a JSON object" in listed.stdout, listed.stderr
    assert verified.returncode == 1 and "0 of 1 kernel(s) intact" in verified.stdout, verified.stderr
    again = run("build", "--shape", "128x256x512", "--out", str(tmp_path / "out"))
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("meta.json is not a JSON object") == 1 and "gemmgen: warning:" in again.stderr
    assert run("cache", "verify").returncode == 0


def test_clear_reports_what_it_could_not_remove(tmp_path: Path, monkeypatch) -> None:
    from click.testing import CliRunner

    from gemmgen import cache as cache_mod
    from gemmgen.cli import main

    cache = KernelCache(tmp_path)
    cache.publish(NAME, KEY, _files(KEY))
    monkeypatch.setattr(cache_mod, "_rmtree", lambda path: f"{path}: [Errno 13] Permission denied")
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(tmp_path))
    res = CliRunner().invoke(main, ["cache", "clear"])
    assert res.exit_code == 1 and "removed 0 kernel(s)" in res.output and "not removed:" in res.output
    assert "Permission denied" in res.output and cache.entries() != []


def test_a_read_only_cache_is_read_and_new_kernels_go_to_a_user_folder(tmp_path: Path, monkeypatch, capsys) -> None:
    """A team's prebuilt cache the user cannot write: its kernels are used, a new one is built into the user's
    default folder (said once, in one line), never a lock error."""
    shared, home = tmp_path / "shared", tmp_path / "home"
    prebuilt = stages.build(GemmProblem(128, 256, 512), settings=_settings(shared))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(KernelCache, "writable", lambda self: self.root != shared)
    monkeypatch.setattr(stages, "_FALLBACKS", {})
    again = stages.build(GemmProblem(128, 256, 512), settings=_settings(shared))
    assert again.from_cache and again.folder == prebuilt.folder
    new = stages.build(GemmProblem(128, 384, 512), settings=_settings(shared))  # N is compile-time: a new kernel
    third = stages.build(GemmProblem(256, 512, 512), settings=_settings(shared))
    assert new.folder.parent == third.folder.parent == home / ".cache" / "gemmgen"
    err = capsys.readouterr().err
    assert err.count("is read-only; new kernels go to") == 1


# The operating system's refusals, simulated inside a CLI subprocess: the tests run as root in CI, and root may write
# and delete in a chmod-protected folder, so the refusal is made by the os functions the cache calls.
_READ_ONLY = ("import os; _access = os.access; _ro = os.environ['GG_READ_ONLY']\n"
              "os.access = lambda p, m, *a, **k: False if str(p).startswith(_ro) and m & os.W_OK "
              "else _access(p, m, *a, **k)\n")
_UNDELETABLE = ("import errno, os; _ro = os.environ['GG_READ_ONLY']\n"
                "def _refuse(real):\n"
                "    def call(p, *a, **k):\n"
                "        if str(p).startswith(_ro) or (k.get('dir_fd') is not None):\n"
                "            raise PermissionError(errno.EACCES, 'Permission denied', str(p))\n"
                "        return real(p, *a, **k)\n"
                "    return call\n"
                "os.unlink, os.rmdir, os.remove = _refuse(os.unlink), _refuse(os.rmdir), _refuse(os.remove)\n")


def _cli_run(tmp_path: Path, prelude: str, *args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GEMMGEN_CACHE_DIR": str(cache), "GG_READ_ONLY": str(cache), "HOME": str(tmp_path / "home")}
    code = prelude + "from gemmgen.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=300)


def test_cache_clear_that_the_system_refuses_exits_1_in_a_subprocess(tmp_path: Path) -> None:
    cache = tmp_path / "shared"
    built = _cli_run(tmp_path, "", "build", "--shape", "128x256x512", "--emit", "", cache=cache)
    assert built.returncode == 0, built.stderr
    done = _cli_run(tmp_path, _UNDELETABLE, "cache", "clear", cache=cache)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "removed 0 kernel(s)" in done.stdout and "not removed:" in done.stderr and "Permission denied" in done.stderr
    assert KernelCache(cache).entries() != []


def test_a_read_only_cache_in_a_subprocess_is_read_and_new_kernels_go_home(tmp_path: Path) -> None:
    cache = tmp_path / "shared"
    assert _cli_run(tmp_path, "", "build", "--shape", "128x256x512", "--emit", "", cache=cache).returncode == 0
    again = _cli_run(tmp_path, _READ_ONLY, "build", "--shape", "128x256x512", "--emit", "", "--json", cache=cache)
    assert again.returncode == 0 and '"from_cache": true' in again.stdout, again.stderr
    new = _cli_run(tmp_path, _READ_ONLY, "build", "--shape", "128x384x512", "--emit", "", cache=cache)
    assert new.returncode == 0, new.stderr
    assert new.stderr.count("is read-only; new kernels go to") == 1 and "Permission" not in new.stderr
    assert any(p.name.startswith("sm90_") for p in (tmp_path / "home" / ".cache" / "gemmgen").iterdir())
    assert len([p for p in cache.iterdir() if p.name.startswith("sm90_")]) == 1
