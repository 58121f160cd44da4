"""gemmgen precompile: which problems an M range needs, building them in parallel processes, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gemmgen.cli import main
from gemmgen.ir import H200_SXM, GemmKind, GemmProblem, Kernel
from gemmgen.passes import run_pipeline
from gemmgen.settings import Settings
from gemmgen.warmup import precompile, problems_for_m_range


def _names(problems: list[GemmProblem]) -> set[str]:
    return {str(run_pipeline(Kernel(p), H200_SXM).name) for p in problems}


def test_m_range_samples_every_kernel() -> None:
    """The ends of each 64-row step (and of each 8-row step of a decode tile's A slot up to M = 128) select every
    kernel that some M in the range selects (1..520: swapped, decode-slot, 64-, 128- and 256-row picks)."""
    every = _names([GemmProblem(m, 7168, 2048) for m in range(1, 521)])
    sampled = problems_for_m_range(7168, 2048, 1, 520)
    assert len(sampled) < 80 and _names(sampled) == every and len(every) > 3


def test_m_range_grouped() -> None:
    contiguous = problems_for_m_range(4096, 7168, 100, 1000, kind=GemmKind.M_GROUPED_CONTIGUOUS, groups=8)
    assert [p.m for p in contiguous] == list(range(128, 1001, 128))
    masked = problems_for_m_range(4096, 7168, 1, 200, kind=GemmKind.M_GROUPED_MASKED, groups=4)
    assert masked[0].m == 1 and masked[-1].m == 200 and all(p.groups == 4 for p in masked)
    with pytest.raises(ValueError, match="M range"):
        problems_for_m_range(4096, 7168, 10, 5)


def test_precompile_builds_each_distinct_kernel_once(tmp_path: Path) -> None:
    settings = Settings(tmp_path, True, False, False)
    problems = [GemmProblem(64, 512, 1024), GemmProblem(63, 512, 1024), GemmProblem(4096, 512, 1024)]
    report = precompile(problems, jobs=2, progress=False, settings=settings)
    assert (report.problems, report.kernels, report.compiled, report.cached, report.failed) == (3, 2, 2, 0, [])
    again = precompile(problems, jobs=2, progress=False, settings=settings)
    assert (again.compiled, again.cached) == (0, 2) and "2 already cached" in again.line()


def test_precompile_rejects_what_is_not_a_problem(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="problems: expected GemmProblem items, got tuple"):
        precompile([(64, 512, 1024)], progress=False, settings=Settings(tmp_path, True, False, False))  # type: ignore
    with pytest.raises(ValueError, match="config: unknown field 'blockn'"):
        precompile([GemmProblem(64, 512, 1024)], {"blockn": 64}, progress=False,
                   settings=Settings(tmp_path, True, False, False))


def test_precompile_cli(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(tmp_path / "cache"))
    shapes = tmp_path / "shapes.txt"
    shapes.write_text("# dense\n64x512x1024\n256x512x1024 4 masked  # grouped\n")
    runner = CliRunner()
    res = runner.invoke(main, ["precompile", "--file", str(shapes), "--shape", "64x512x1024", "--m-range", "1:200",
                               "--nk", "512x1024", "--jobs", "2", "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["problems"] > 3 and report["kernels"] >= 2 and report["failed"] == []
    assert report["compiled"] + report["cached"] == report["kernels"]
    res = runner.invoke(main, ["precompile", "--shape", "64x512x1024"])
    assert res.exit_code == 0 and "1 already cached" in res.output


@pytest.mark.parametrize("args,words", [
    ([], "nothing to precompile"),
    (["--m-range", "1:100"], "needs at least one --nk"),
    (["--m-range", "x", "--nk", "512x1024"], "expected LO:HI"),
    (["--shape", "64x512x1000"], "multiple of 16"),
    (["--shape", "64x512x1024", "--config", "stages=2"], "stages=2"),
])
def test_precompile_cli_errors(tmp_path: Path, monkeypatch, args: list[str], words: str) -> None:
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(tmp_path / "cache"))
    res = CliRunner().invoke(main, ["precompile", *args])
    assert res.exit_code != 0 and words in res.output and isinstance(res.exception, SystemExit), res.output


def test_precompile_bad_file_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("64x512x1024 4\n")
    res = CliRunner().invoke(main, ["precompile", "--file", str(bad)])
    assert res.exit_code != 0 and "line 1" in res.output
