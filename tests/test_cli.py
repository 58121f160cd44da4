"""The CLI through click's CliRunner: build (summary, --json, --emit, --dump-ir, cache), inspect, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gemmgen.cli import main


def _build_json(runner: CliRunner, out: Path, *extra: str) -> dict:
    res = runner.invoke(main, ["build", "--shape", "128x4096x7168", "--out", str(out), "--json", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_build_writes_every_artifact_and_reports(runner: CliRunner, tmp_path: Path) -> None:
    s = _build_json(runner, tmp_path)
    folder = Path(s["out"])
    for fname in ("kernel.cu", "kernel.ptx", "kernel.cubin", "kernel.sass", "ir.txt", "meta.json"):
        assert (folder / fname).is_file(), fname
    assert s["resources"]["spill_stores"] == 0 and s["resources"]["dynamic_smem"] > 0
    assert s["sass_counts"]["QGMMA"] > 0 and s["sass_counts"]["UTMALDG"] > 0
    assert s["config"]["stages"] >= 3 and s["config"]["math_warpgroups"] in (1, 2)
    waits = s["wgmma_waits"]  # from the SASS: each group's wait, no wait after every wgmma
    assert waits["mma"] == s["sass_counts"]["QGMMA"] and waits["full"] >= 1 and waits["serialized"] is False
    assert _build_json(runner, tmp_path)["from_cache"] is True


def test_build_text_summary(runner: CliRunner, tmp_path: Path) -> None:
    res = runner.invoke(main, ["build", "--shape", "4096x7168x16384", "--out", str(tmp_path), "--config",
                               "block_m=256", "--config", "block_n=128", "--config", "cluster=2"])
    assert res.exit_code == 0, res.output
    for word in ("block 256x128x128", "stages", "cluster 2 (multicast A)", "regs", "spills 0 B", "smem",
                 "QGMMA", "UTMALDG", "FFMA", "full waits", "compile"):
        assert word in res.output, word


def test_forced_config_is_used(runner: CliRunner, tmp_path: Path) -> None:
    s = _build_json(runner, tmp_path, "--config", "block_n=64", "--config", "stages=5")
    assert (s["config"]["block_n"], s["config"]["stages"]) == (64, 5)


def test_illegal_config_lists_every_rule(runner: CliRunner, tmp_path: Path) -> None:
    res = runner.invoke(main, ["build", "--shape", "64x2112x7168", "--out", str(tmp_path), "--config", "stages=2",
                               "--config", "block_n=7"])
    assert res.exit_code != 0
    assert "stages=2" in res.output and "block_n=7" in res.output


@pytest.mark.parametrize("args,words", [
    (["--shape", "64x2112"], "MxNxK"),
    (["--shape", "64x2112x7000"], "multiple of 16"),
    (["--shape", "64x2112x7168", "--config", "nope=1"], "unknown field"),
    (["--shape", "64x2112x7168", "--emit", "cu,exe"], "exe"),
])
def test_bad_cli_input(runner: CliRunner, tmp_path: Path, args: list[str], words: str) -> None:
    res = runner.invoke(main, ["build", "--out", str(tmp_path), *args])
    assert res.exit_code != 0 and words in res.output, res.output


def test_emit_subset_and_dump_ir(runner: CliRunner, tmp_path: Path) -> None:
    dump = tmp_path / "ir"
    s = _build_json(runner, tmp_path / "out", "--emit", "cu,ptx", "--dump-ir", str(dump))
    assert sorted(p.name for p in Path(s["out"]).iterdir()) == ["kernel.cu", "kernel.ptx"]
    assert (dump / "00_input.ir.txt").is_file() and (dump / "09_name_kernel.ir.txt").is_file()


def test_inspect(runner: CliRunner, tmp_path: Path) -> None:
    s = _build_json(runner, tmp_path)
    res = runner.invoke(main, ["inspect", s["out"], "--grep", "QGMMA"])
    assert res.exit_code == 0 and "QGMMA.64x" in res.output and "FFMA" not in res.output
    res = runner.invoke(main, ["inspect", s["name"], "--out", str(tmp_path), "--show", "ptx", "--grep", "wgmma"])
    assert res.exit_code == 0 and "wgmma.mma_async" in res.output
    res = runner.invoke(main, ["inspect", s["out"], "--show", "resources"])
    assert res.exit_code == 0 and "REG:" in res.output and "dynamic shared memory" in res.output
    res = runner.invoke(main, ["inspect", s["out"], "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["name"] == s["name"]
    res = runner.invoke(main, ["inspect", s["out"]])  # the human summary, as `build` prints it
    assert res.exit_code == 0 and f"kernel   {s['name']}" in res.output and "M=run time" in res.output
    res = runner.invoke(main, ["inspect", "no_such_kernel", "--out", str(tmp_path)])
    assert res.exit_code != 0 and "no built kernel" in res.output
    res = runner.invoke(main, ["inspect", s["out"], "--grep", "NOT_AN_OPCODE_XYZ"])
    assert res.exit_code != 0


def test_nvrtc_repro_command(runner: CliRunner, tmp_path: Path) -> None:
    bad = tmp_path / "bad.cu"
    bad.write_text("int x = ;\n")
    res = runner.invoke(main, ["nvrtc", str(bad)])
    assert res.exit_code == 1 and "error" in res.output.lower() and "FAILED" in res.output


@pytest.mark.parametrize("layout,shape,kind", [("contiguous", "1024x4096x7168", "m_grouped_contiguous"),
                                               ("masked", "256x7168x2048", "m_grouped_masked")])
def test_build_grouped(runner: CliRunner, tmp_path: Path, layout: str, shape: str, kind: str) -> None:
    dump = tmp_path / "ir"
    res = runner.invoke(main, ["build", "--shape", shape, "--groups", "4", "--layout", layout, "--out",
                               str(tmp_path), "--json", "--dump-ir", str(dump)])
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    assert s["problem"]["kind"] == kind and s["problem"]["groups"] == 4 and kind.split("_")[-1][:6] in s["name"]
    assert s["resources"]["spill_stores"] == 0 and s["sass_counts"]["QGMMA"] > 0
    plan = (dump / "09_name_kernel.ir.txt").read_text()
    assert f"scheduler {kind}" in plan and "tma tmap_a" in plan and "params " in plan
    text = runner.invoke(main, ["build", "--shape", shape, "--groups", "4", "--layout", layout, "--out",
                                str(tmp_path)])
    assert text.exit_code == 0 and f"{kind} with 4 groups" in text.output


@pytest.mark.parametrize("args,words", [
    (["--shape", "1024x4096x7168", "--groups", "4"], "--groups and --layout go together"),
    (["--shape", "1024x4096x7168", "--layout", "masked"], "--groups and --layout go together"),
    (["--shape", "1000x4096x7168", "--groups", "4", "--layout", "contiguous"], "multiple of 128"),
    (["--shape", "1024x4096x7168", "--groups", "0", "--layout", "masked"], "--groups"),
    (["--shape", "1024x4096x7168", "--groups", "4", "--layout", "ragged"], "--layout"),
    (["--shape", "1024x4096x7168", "--groups", "4", "--layout", "contiguous", "--config", "block_m=256"],
     "block_m=256: a contiguous grouped layout"),
])
def test_bad_grouped_cli_input(runner: CliRunner, tmp_path: Path, args: list[str], words: str) -> None:
    res = runner.invoke(main, ["build", "--out", str(tmp_path), *args])
    assert res.exit_code != 0 and words in res.output, res.output
    assert "Traceback" not in res.output


def test_build_wgrad(runner: CliRunner, tmp_path: Path) -> None:
    """`--recipe 1x128/1x128 --out-dtype fp32 --accumulate`: the weight-gradient kernel (column B scales) builds."""
    res = runner.invoke(main, ["build", "--shape", "4096x7168x4096", "--recipe", "1x128/1x128", "--out-dtype", "fp32",
                               "--accumulate", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    assert "_s1d1d_" in s["name"] and "_fp32_acc_" in s["name"] and s["resources"]["spill_stores"] == 0
    assert any("estimate" in r["reason"] for r in s["reasons"] if r["pass"] == "select_config")
    bf16 = runner.invoke(main, ["build", "--shape", "4096x7168x4096", "--recipe", "1x128/1x128", "--out",
                                str(tmp_path)])
    assert bf16.exit_code != 0 and "scales 1x128/1x128: the weight-gradient GEMM writes float32" in bf16.output
    assert "Traceback" not in bf16.output


def test_build_bf16_and_recipes(tmp_path) -> None:
    """--dtype-a/--dtype-b bf16 default to the 'none' recipe; --recipe names the others; the name carries both."""
    import json as _json

    from click.testing import CliRunner as _Runner

    from gemmgen.cli import main as _main
    runner = _Runner()
    res = runner.invoke(_main, ["build", "--shape", "256x512x1024", "--dtype-a", "bf16", "--dtype-b", "bf16",
                                "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    assert _json.loads(res.output)["name"].startswith("sm90_bf16_bf16_")
    res = runner.invoke(_main, ["build", "--shape", "256x512x1024", "--recipe", "channel", "--out", str(tmp_path),
                                "--json"])
    assert res.exit_code == 0 and "_schannel_" in _json.loads(res.output)["name"], res.output
    res = runner.invoke(_main, ["build", "--shape", "256x512x1024", "--dtype-a", "bf16", "--recipe", "tensor",
                                "--out", str(tmp_path)])
    assert res.exit_code != 0 and "bf16" in res.output
