"""Every way a user was seen to get a traceback from the CLI now gets a one-line error and a non-zero exit."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from gemmgen.cli import main

SHAPE = ["--shape", "128x4096x7168"]



def _fails(res: Result, *words: str) -> None:
    """A clean CLI failure: non-zero exit through click (no exception escaped), the words in the message."""
    assert res.exit_code != 0, res.output
    assert isinstance(res.exception, SystemExit), f"an exception escaped: {res.exception!r}"
    for word in words:
        assert word in res.output, f"{word!r} not in {res.output!r}"
    assert len(res.output.strip().splitlines()) <= 6, res.output


def _build(runner: CliRunner, out: Path, *extra: str) -> Path:
    res = runner.invoke(main, ["build", *SHAPE, "--out", str(out), "--json", *extra])
    assert res.exit_code == 0, res.output
    return Path(json.loads(res.output)["out"])


def test_inspect_folder_without_meta(runner: CliRunner, tmp_path: Path) -> None:
    folder = _build(runner, tmp_path / "gen", "--emit", "cu,ptx")  # the README's own --emit example
    _fails(runner.invoke(main, ["inspect", str(folder.resolve())]), "has no meta.json")
    (tmp_path / "empty").mkdir()
    _fails(runner.invoke(main, ["inspect", str((tmp_path / "empty").resolve())]), "has no meta.json")


def test_inspect_missing_path_or_name(runner: CliRunner, tmp_path: Path) -> None:
    _fails(runner.invoke(main, ["inspect", str(tmp_path / "nope")]), "no such kernel folder")
    _fails(runner.invoke(main, ["inspect", "sm90_no_such_kernel", "--out", str(tmp_path)]), "no built kernel")


def test_inspect_bad_regex(runner: CliRunner, tmp_path: Path) -> None:
    folder = _build(runner, tmp_path)
    _fails(runner.invoke(main, ["inspect", str(folder), "--grep", "["]), "--grep", "not a regular expression")


def test_inspect_missing_artifacts(runner: CliRunner, tmp_path: Path) -> None:
    folder = _build(runner, tmp_path, "--emit", "meta")
    _fails(runner.invoke(main, ["inspect", str(folder), "--grep", "QGMMA"]), "has no kernel.cubin", "--emit sass")
    _fails(runner.invoke(main, ["inspect", str(folder), "--show", "ptx"]), "has no kernel.ptx", "--emit ptx")
    _fails(runner.invoke(main, ["inspect", str(folder), "--show", "resources"]), "has no kernel.cubin")
    res = runner.invoke(main, ["inspect", str(folder)])  # the summary needs only meta.json
    assert res.exit_code == 0 and "kernel   sm90_" in res.output


def test_inspect_corrupt_meta(runner: CliRunner, tmp_path: Path) -> None:
    folder = _build(runner, tmp_path)
    (folder / "meta.json").write_text("{broken")
    _fails(runner.invoke(main, ["inspect", str(folder)]), "meta.json is not valid JSON")
    (folder / "meta.json").write_text("[1, 2]")
    _fails(runner.invoke(main, ["inspect", str(folder)]), "not a gemmgen kernel's metadata")


def test_cache_dir_or_out_is_a_file(runner: CliRunner, tmp_path: Path, monkeypatch) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    _fails(runner.invoke(main, ["build", *SHAPE, "--out", str(a_file)]), "is a file", "--out")
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(a_file))
    _fails(runner.invoke(main, ["build", *SHAPE, "--out", str(tmp_path / "o")]), "is not a directory",
           "GEMMGEN_CACHE_DIR")
    _fails(runner.invoke(main, ["cache", "list"]), "is not a directory")


def test_ambiguous_prefix_lists_matches(runner: CliRunner, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(tmp_path / "cache"))  # only this test's kernels
    _build(runner, tmp_path, "--config", "stages=4")
    _build(runner, tmp_path, "--config", "stages=5")
    res = runner.invoke(main, ["inspect", "sm90_e4m3_bf16_nt_n4096k7168", "--out", str(tmp_path)])
    _fails(res, "matches 2 kernels", "_s4_", "_s5_")


def test_repeated_config_key(runner: CliRunner, tmp_path: Path) -> None:
    res = runner.invoke(main, ["build", *SHAPE, "--out", str(tmp_path), "--config", "stages=4", "--config", "stages=5"])
    _fails(res, "stages is given twice")


def test_cache_commands(runner: CliRunner, tmp_path: Path, settings) -> None:
    folder = _build(runner, tmp_path)
    res = runner.invoke(main, ["cache", "list"])
    assert res.exit_code == 0 and folder.name in res.output and " ok" in res.output
    assert runner.invoke(main, ["cache", "verify"]).exit_code == 0
    entry = next(p for p in settings.cache_dir.iterdir() if p.name.startswith(folder.name + "-"))
    (entry / "kernel.cubin").write_bytes(b"truncated")
    res = runner.invoke(main, ["cache", "verify"])
    assert res.exit_code == 1 and "kernel.cubin does not match its recorded sha256" in res.output
    assert "DAMAGED" in runner.invoke(main, ["cache", "list"]).output
    res = runner.invoke(main, ["cache", "clear"])
    assert res.exit_code == 0 and "removed" in res.output
    assert "0 kernel(s)" in runner.invoke(main, ["cache", "list"]).output
