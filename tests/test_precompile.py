"""gemmgen precompile: which problems an M range needs, building them in parallel processes, the CLI."""

from __future__ import annotations

import json
import re
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
    assert sorted(report["built"]) == report["built"] and len(report["built"]) == report["kernels"]
    res = runner.invoke(main, ["precompile", "--shape", "64x512x1024"])
    assert res.exit_code == 0 and "1 already cached" in res.output
    assert re.search(r"sm90_\S+\n1 problem", res.output), res.output  # the kernel it found is listed


@pytest.mark.parametrize("args,tag", [
    (["--layout", "k-grouped", "--groups", "4", "--accumulate"], "_fp32_acc_nt_kgrouped_s1d1d_"),
    (["--recipe", "tensor"], "_stensor_"), (["--recipe", "channel"], "_schannel_"),
    (["--dtype-a", "bf16", "--dtype-b", "bf16"], "sm90_bf16_bf16_"), (["--dtype-a", "e5m2"], "sm90_e5m2xe4m3_"),
    (["--out-dtype", "fp32", "--accumulate"], "_fp32_acc_nt_"),
    (["--recipe", "1x128/1x128", "--out-dtype", "fp32"], "_fp32_nt_s1d1d_"),
    (["--out-dtype", "e4m3", "--swiglu"], "sm90_e4m3_e4m3_nt_swiglu_"),
    (["--layout", "masked", "--groups", "4", "--out-dtype", "e4m3"], "sm90_e4m3_e4m3_nt_gmasked_")])
def test_precompile_builds_every_kind_the_api_launches(tmp_path: Path, monkeypatch, args: list[str],
                                                        tag: str) -> None:
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(tmp_path / "cache"))
    res = CliRunner().invoke(main, ["precompile", "--shape", "512x512x1024", *args, "--json"])
    assert res.exit_code == 0, res.output
    (name,) = json.loads(res.output)["built"]
    assert tag in name, name


def test_ctrl_c_exits_130_and_keeps_what_finished(tmp_path: Path) -> None:
    """SIGINT to the command's process group while it compiles: it stops within seconds, exits 130, and the kernels
    it finished stay in the cache; during selection (before any compile) it exits 130 too."""
    import os
    import select
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "GEMMGEN_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-c", "from gemmgen.cli import main; main()", "precompile", "--m-range", "1:1024",
           "--nk", "7168x2048", "--jobs", "1"]
    # A user's Ctrl-C reaches a foreground process; a test run started in the background inherits SIGINT ignored
    # (bash ignores it for asynchronous commands), and Python then installs no handler: restore the default first.
    def foreground() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=foreground)
    seen, deadline = b"", time.time() + 240
    while b"kernel/s" not in seen and time.time() < deadline:  # tqdm's bar: the compiles have begun
        ready, _, _ = select.select([proc.stderr], [], [], 1.0)
        if ready:
            seen += os.read(proc.stderr.fileno(), 4096)
    assert b"kernel/s" in seen, seen
    time.sleep(2)
    sent = time.time()
    os.killpg(proc.pid, signal.SIGINT)
    out, _err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and time.time() - sent < 5 and b"interrupted" in out, out
    assert any((tmp_path / "cache").glob("sm90_*/meta.json"))
    early = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                             preexec_fn=foreground)
    time.sleep(3)
    os.killpg(early.pid, signal.SIGINT)
    _out, err = early.communicate(timeout=30)
    assert early.returncode == 130 and b"interrupted" in err + _out, err


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
