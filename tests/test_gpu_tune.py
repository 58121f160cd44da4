"""GPU tier: `gemmgen tune` on two small shapes writes a table that the next call selects from, and what it selects
computes the right thing against float64."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import gemmgen
from gemmgen.cli import main
from gemmgen.quant import dequantize_a, dequantize_b
from gemmgen.tuning import table

pytestmark = pytest.mark.gpu


def test_tune_writes_a_table_the_next_call_selects_from(settings, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GEMMGEN_CACHE_DIR", str(settings.cache_dir))
    monkeypatch.setattr(table, "TABLES", table.Tables(on_load=list(table.TABLES.on_load)))
    monkeypatch.setattr("gemmgen.stages.TABLES", table.TABLES)
    path = tmp_path / "tuned.json"
    res = CliRunner().invoke(main, ["tune", "--shape", "128x1024x1024", "--shape", "8x1024x2048", "--top", "3",
                                    "--rounds", "3", "--table", str(path), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["table"] == str(path) and len(report["rows"]) == 2
    for result in report["results"]:
        timed = [r for r in result["rows"] if r["us"] is not None]
        assert len(timed) >= 2 and all(r["diff"] < 1e-3 for r in timed), result
        assert sum(r["default"] for r in result["rows"]) == 1
    rows = table.read_rows(path)
    n_at = table.PROBLEM_KEYS.index("n")
    assert {(r.m_lo, r.key[n_at]) for r in rows} == {(128, 1024), (8, 1024)}
    table.load_tuned(path)
    for row, (m, n, k) in ((report["rows"][0], (128, 1024, 1024)), (report["rows"][1], (8, 1024, 2048))):
        kernel = gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0))
        assert kernel.name == row["provenance"]["kernel"], (kernel.name, row)
        assert any(who == "tuned" for who, _ in kernel.kernel.reasons)
        a = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
        b = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
        out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        gemmgen.fp8_gemm_nt(a, b, out)
        torch.cuda.synchronize()
        ref = dequantize_a(*a) @ dequantize_b(*b).t()
        err = (out.double() - ref).abs()
        assert (err <= 2**-8 * ref.abs() + 2**-11 * ref.abs().max()).all()
