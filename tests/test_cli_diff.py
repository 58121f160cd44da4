"""`gemmgen diff` and `gemmgen inspect --histogram` on kernels built here (no GPU), and the comparisons under them."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gemmgen.cli import main
from gemmgen.sass import compare

SASS = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;                         /* 0x00000a00ff017b82 */
                                                                                  /* 0x000fe20000000800 */
        /*0010*/                   FFMA R20, R43, R3, R20 ;                       /* 0x000000032b147223 */
                                                                                  /* 0x000fc80000000014 */
        /*0020*/              @!P1 BRA `(.L_x_12) ;                               /* 0x0000000000009947 */
                                                                                  /* 0x000fea0003800000 */
"""



def _build(runner: CliRunner, out: Path, *args: str) -> str:
    res = runner.invoke(main, ["build", "--shape", "64x2112x7168", "--out", str(out), "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)["name"]


def test_instruction_lines_drop_addresses_labels_and_optionally_registers() -> None:
    assert compare.instruction_lines(SASS) == ["LDC R1, c[0x0][0x28]", "FFMA R20, R43, R3, R20", "@!P1 BRA `(.L)"]
    renumbered = SASS.replace("R20", "R22").replace(".L_x_12", ".L_x_99")
    assert compare.instruction_lines(renumbered) != compare.instruction_lines(SASS)
    assert compare.instruction_lines(renumbered, registers=False) == compare.instruction_lines(SASS, False)
    assert compare.sass_diff(SASS, SASS.replace("0x000fe20000000800", "0x001fc40000000800"), ("a", "b")) == []


def test_histogram_rows_put_the_largest_change_first() -> None:
    rows = compare.histogram_rows(compare.Counter({"FFMA": 10, "LDS": 4}), compare.Counter({"FFMA": 12, "LDG": 5}))
    assert rows == [("LDG", 0, 5), ("LDS", 4, 0), ("FFMA", 10, 12)]
    assert compare.field_changes({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 4}) == [("b", 2, 3), ("c", None, 4)]
    assert compare.plan_diff(["x", "y"], ["x", "z"]) == ["-y", "+z"]


def test_diff_of_two_built_kernels(runner: CliRunner, tmp_path: Path) -> None:
    split = _build(runner, tmp_path, "--config", "k_splits=2")
    whole = _build(runner, tmp_path, "--config", "k_splits=1")
    res = runner.invoke(main, ["diff", split, whole, "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["kernels"] == [split, whole]
    assert {"field": "k_splits", "first": 2, "second": 1} in d["config"]
    assert any("split-K" in line for line in d["plan"])
    hist = {r["opcode"]: (r["first"], r["second"]) for r in d["histogram"]}
    assert hist["QGMMA"][0] > 0 and hist["QGMMA"][0] == hist["QGMMA"][1]
    assert hist.get("ATOMG", (0, 0))[0] > hist.get("ATOMG", (0, 0))[1]  # the workspace's arrival counter
    assert d["sass"][0].startswith("--- ") and any(line.startswith("-") for line in d["sass"][2:])
    text = runner.invoke(main, ["diff", split, whole, "--out", str(tmp_path), "--max-lines", "4"])
    assert text.exit_code == 0 and "k_splits" in text.output and "first 4 shown" in text.output
    same = runner.invoke(main, ["diff", whole, str(tmp_path / whole), "--out", str(tmp_path)])
    assert same.exit_code == 0 and "sass: the same instruction stream" in same.output, same.output
    assert "config: the same" in same.output


def test_inspect_histogram(runner: CliRunner, tmp_path: Path) -> None:
    name = _build(runner, tmp_path)
    res = runner.invoke(main, ["inspect", name, "--out", str(tmp_path), "--histogram", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["name"] == name and d["opcodes"]["QGMMA"] > 0 and d["total"] == sum(d["opcodes"].values())
    full = runner.invoke(main, ["inspect", name, "--out", str(tmp_path), "--histogram", "--full-opcodes"])
    assert full.exit_code == 0 and "QGMMA.64x" in full.output
    bad = runner.invoke(main, ["inspect", name, "--out", str(tmp_path), "--histogram", "--show", "ptx"])
    assert bad.exit_code != 0 and "--histogram" in bad.output


def test_diff_errors_name_what_is_missing(runner: CliRunner, tmp_path: Path) -> None:
    res = runner.invoke(main, ["diff", "sm90_nosuch", "sm90_other", "--out", str(tmp_path)])
    assert res.exit_code != 0 and "no built kernel 'sm90_nosuch'" in res.output
