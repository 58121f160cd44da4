"""bench/report.py on a small synthetic results file (CPU only): the markdown's rows, ratios, geomeans and verdicts,
refusals shown as such, and the PNG chart where matplotlib is installed."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import report  # noqa: E402

ENV = {"gpu": "NVIDIA H200", "torch": "2.11.0+cu130", "nvrtc": "13.0", "gemmgen_commit": "abc1234",
       "date": "2026-12-01 10:00:00", "method": "synthetic"}


def dense(impl: str, m: int, n: int, k: int, tflops: float | None, section: str | None = None, **extra) -> dict:
    """A dense row whose kernel time follows from `tflops` (None: an error row)."""
    r = {"kind": "dense", "impl": impl, "m": m, "n": n, "k": k, "config": f"cfg-{impl}", **extra}
    if section:
        r["section"] = section
    if tflops is None:
        return {**r, "kernel_us": None, "tflops": None, "tbps": None, "call_us": None, "calc_diff": None,
                "error": "RuntimeError: cuBLASLt block-scaled refused every scale layout"}
    us = 2 * m * n * k / (tflops * 1e12) * 1e6
    nbytes = m * k + n * k + 2 * m * n
    return {**r, "kernel_us": us, "tflops": tflops, "tbps": nbytes / us / 1e6, "call_us": us + 10,
            "calc_diff": 6.8e-4}


def decode(impl: str, m: int, n: int, k: int, us: float | None) -> dict:
    r = {"kind": "dense", "impl": impl, "m": m, "n": n, "k": k, "section": "decode", "config": f"cfg-{impl}"}
    if us is None:
        return {**r, "kernel_us": None, "tflops": None, "tbps": None, "call_us": None, "calc_diff": None,
                "error": "RuntimeError: refused M=1"}
    nbytes = m * k + n * k + 2 * m * n
    return {**r, "kernel_us": us, "tflops": 2 * m * n * k / us / 1e6, "tbps": nbytes / us / 1e6, "call_us": us + 8,
            "calc_diff": 6.8e-4}


def host(impl: str, case: str, us_per_call: float | None) -> dict:
    r = {"kind": "host", "impl": impl, "m": 64, "n": 7168, "k": 2048, "case": case, "config": "k"}
    if us_per_call is None:
        return {**r, "kernel_us": None, "tflops": None, "tbps": None, "call_us": None, "calc_diff": None,
                "us_per_call": None, "error": "RuntimeError: cuBLASLt block-scaled refused a row-major SA"}
    return {**r, "kernel_us": 12.5, "tflops": 150.0, "tbps": 2.5, "call_us": 20.0, "calc_diff": 6.8e-4,
            "us_per_call": us_per_call}


def grouped(impl: str, groups: int, tflops: float) -> dict:
    return {"kind": "grouped", "impl": impl, "m": 34176, "n": 4096, "k": 7168, "kernel_us": 1000.0,
            "tflops": tflops, "tbps": 0.4, "call_us": 1100.0, "calc_diff": 6.8e-4, "config": "g",
            "layout": "contiguous", "groups": groups, "expected_m": 8192, "valid_m": 33984}


ROWS = [
    # prefill 64x2112x7168: gemmgen 200, block 100, tensor 160, bf16 80 -> best peer tensor, ratio 1.25
    dense("gemmgen", 64, 2112, 7168, 200.0, "prefill"),
    dense("cublaslt_blockwise", 64, 2112, 7168, 100.0, "prefill"),
    dense("cublaslt_tensorwise", 64, 2112, 7168, 160.0, "prefill"),
    dense("cublas_bf16", 64, 2112, 7168, 80.0, "prefill"),
    # prefill 4096x7168x2048 (no section field: classified by M): block refused -> best peer tensor 1250, ratio 0.80
    dense("gemmgen", 4096, 7168, 2048, 1000.0),
    dense("cublaslt_blockwise", 4096, 7168, 2048, None),
    dense("cublaslt_tensorwise", 4096, 7168, 2048, 1250.0),
    dense("cublas_bf16", 4096, 7168, 2048, 600.0),
    # decode 1x2112x7168: gemmgen 10 us, block refused, tensor 12, bf16 20 -> best 12, ratio 0.833 "below"
    decode("gemmgen", 1, 2112, 7168, 10.0),
    decode("cublaslt_blockwise", 1, 2112, 7168, None),
    decode("cublaslt_tensorwise", 1, 2112, 7168, 12.0),
    decode("cublas_bf16", 1, 2112, 7168, 20.0),
    # decode 32x576x7168: gemmgen 8.1, block 8.0 -> ratio 1.0125 "at"; tensor 9, bf16 15
    decode("gemmgen", 32, 576, 7168, 8.1),
    decode("cublaslt_blockwise", 32, 576, 7168, 8.0),
    decode("cublaslt_tensorwise", 32, 576, 7168, 9.0),
    decode("cublas_bf16", 32, 576, 7168, 15.0),
    # decode 8x7168x16384: gemmgen 40 us, best peer 30 -> ratio 1.333 "above"
    decode("gemmgen", 8, 7168, 16384, 40.0),
    decode("cublaslt_blockwise", 8, 7168, 16384, 30.0),
    decode("cublaslt_tensorwise", 8, 7168, 16384, 31.0),
    decode("cublas_bf16", 8, 7168, 16384, 55.0),
    grouped("gemmgen", 4, 1200.0), grouped("cublaslt_loop", 4, 1000.0),
    host("gemmgen", "same_tensors", 9.5), host("gemmgen", "new_pointers", 31.25), host("gemmgen", "row_major_sa", 40.0),
    host("cublaslt_blockwise", "same_tensors", 14.0), host("cublaslt_blockwise", "new_pointers", 15.0),
    host("cublaslt_blockwise", "row_major_sa", None),
]


@pytest.fixture
def bench_json(tmp_path: Path) -> Path:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"env": ENV, "rows": ROWS}))
    return path


def _row(md: str, prefix: str) -> list[str]:
    """The cells of the one table line starting with `prefix` (e.g. '| 64 | 2112 | 7168 |')."""
    hits = [line for line in md.splitlines() if line.startswith(prefix)]
    assert len(hits) == 1, f"expected one line starting {prefix!r}, got {hits}"
    return [c.strip() for c in hits[0].strip().strip("|").split("|")]


def _section(md: str, title: str) -> str:
    start = md.index(title)
    end = md.find("\n## ", start + 1)
    return md[start:end if end > 0 else len(md)]


def test_sections_and_order(bench_json: Path) -> None:
    md = report.markdown(report.load(bench_json))
    assert md.startswith("# NVIDIA H200, 2026-12-01 10:00:00, gemmgen abc1234\n")
    titles = [line for line in md.splitlines() if line.startswith("## ")]
    assert [t.split(".")[0] for t in titles] == ["## 1", "## 2", "## 3", "## 4"]


def test_prefill_table(bench_json: Path) -> None:
    md = _section(report.markdown(report.load(bench_json)), "## 1. Dense prefill")
    header = _row(md, "| M |")
    assert header[3:7] == ["gemmgen", "cuBLASLt block", "cuBLASLt tensor", "cuBLAS bf16"]
    small = dict(zip(header, _row(md, "| 64 | 2112 | 7168 |"), strict=True))
    assert small["gemmgen"] == "200" and small["cuBLASLt block"] == "100"
    assert small["best peer"] == "cuBLASLt tensor 160"
    assert small["gemmgen / best peer"] == "1.25"
    assert small["gemmgen / cuBLASLt block"] == "2.00"
    assert small["gemmgen / cuBLAS bf16"] == "2.50"
    assert small["config"] == "cfg-gemmgen"
    large = dict(zip(header, _row(md, "| 4096 | 7168 | 2048 |"), strict=True))
    assert large["cuBLASLt block"] == "refused"
    assert large["gemmgen / best peer"] == "0.80"
    assert large["gemmgen / cuBLASLt block"] == "—"
    # geomean over both shapes of gemmgen / best peer: sqrt(1.25 * 0.8) = 1.000; against block: one shape, 2.000
    assert "Geometric mean gemmgen / best peer: 1.000 (gemmgen at or above the best peer on 1 of 2 shapes)" in md
    assert "Geometric mean gemmgen / cuBLASLt block: 2.000 (1 shapes)" in md
    assert f"Geometric mean gemmgen / cuBLAS bf16: {math.sqrt(2.5 * 1000 / 600):.3f} (2 shapes)" in md
    assert "- 4096x7168x2048 cublaslt_blockwise: RuntimeError: cuBLASLt block-scaled refused" in md


def test_decode_table(bench_json: Path) -> None:
    md = _section(report.markdown(report.load(bench_json)), "## 2. Dense decode")
    header = _row(md, "| M |")
    m1 = dict(zip(header, _row(md, "| 1 | 2112 | 7168 |"), strict=True))
    nbytes = 7168 + 2112 * 7168 + 2 * 2112
    assert m1["gemmgen us / TB/s"] == f"10.0 / {nbytes / 10.0 / 1e6:.2f}"
    assert m1["cuBLASLt block us / TB/s"] == "refused"
    assert m1["best peer us"] == "cuBLASLt tensor 12.0"
    assert m1["gemmgen / best (time)"] == "0.83" and m1["gemmgen vs best"] == "below"
    at = dict(zip(header, _row(md, "| 32 | 576 | 7168 |"), strict=True))
    assert at["best peer us"] == "cuBLASLt block 8.0" and at["gemmgen vs best"] == "at"
    above = dict(zip(header, _row(md, "| 8 | 7168 | 16384 |"), strict=True))
    assert above["gemmgen / best (time)"] == "1.33" and above["gemmgen vs best"] == "above"
    geo = (10 / 12 * 8.1 / 8.0 * 40 / 30) ** (1 / 3)
    assert (f"gemmgen at or below the best peer on 2 of 3 shapes (below 1, at 1, above 1); geometric mean "
            f"gemmgen / best peer kernel time: {geo:.3f}") in md


def test_grouped_and_host_tables(bench_json: Path) -> None:
    md = report.markdown(report.load(bench_json))
    grouped_md = _section(md, "## 3. MoE grouped")
    cells = _row(grouped_md, "| contiguous | 4 x 8192 |")
    assert cells[5:8] == ["1200", "1000", "1.20"]
    assert "Geometric mean gemmgen / cuBLASLt loop: 1.200 (1 cases)" in grouped_md
    host_md = _section(md, "## 4. Host overhead")
    assert _row(host_md, "| 64 | 7168 | 2048 | gemmgen |")[4:] == ["9.5 (12.5)", "31.2 (12.5)", "40.0 (12.5)"]
    assert _row(host_md, "| 64 | 7168 | 2048 | cuBLASLt block |")[4:] == ["14.0 (12.5)", "15.0 (12.5)", "refused"]


def test_decode_verdict_bounds() -> None:
    assert report.decode_verdict(0.97) == "below"
    assert report.decode_verdict(0.99) == "at" and report.decode_verdict(1.02) == "at"
    assert report.decode_verdict(1.03) == "above"


def test_write_report_markdown_always(bench_json: Path) -> None:
    md, png = report.write_report(bench_json, png=False)
    assert md == bench_json.with_suffix(".md") and png is None
    text = md.read_text()
    assert "| 64 | 2112 | 7168 | 200 | 100 | 160 | 80 |" in text
    assert "![benchmark chart]" not in text  # no chart, no link to one


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                    reason="matplotlib is not installed (pip install -e '.[bench]')")
def test_write_report_png(bench_json: Path) -> None:
    md, png = report.write_report(bench_json)
    assert png == bench_json.with_suffix(".png")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # four panels of bars, not an empty canvas
    assert "![benchmark chart](bench.png)" in md.read_text()


def test_bench_shape_sets_and_arguments() -> None:
    """bench_gemm's sections hold the documented shapes, bytes and argument spellings (imports torch, runs nothing)."""
    import bench_gemm as bg

    nk = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]
    assert bg.PREFILL_SHAPES == [(m, n, k) for m in (64, 128, 4096) for n, k in nk] + [(8192, 8192, 8192)]
    assert bg.DECODE_SHAPES == [(m, n, k) for m in (1, 8, 32) for n, k in nk + [(576, 7168)]]
    assert bg.HOST_SHAPES == [(64, 7168, 2048), (4096, 7168, 2048)]
    # A + B + D + SA (4 M ceil(K/128)) + SB (4 ceil(N/128) ceil(K/128)), a partial N block rounded up
    assert bg.dense_bytes(64, 7168, 2048) == 64 * 2048 + 7168 * 2048 + 2 * 64 * 7168 + 4 * 64 * 16 + 4 * 56 * 16
    assert bg.dense_bytes(1, 576, 7168) == 7168 + 576 * 7168 + 2 * 576 + 4 * 56 + 4 * 5 * 56
    assert bg.parse_sections(["1,2,3,4"]) == ["1", "2", "3", "4"]
    assert bg.parse_sections(["4", "1"]) == ["1", "4"]
    assert bg.parse_sections(["dense", "grouped"]) == ["1", "3"]
    with pytest.raises(SystemExit):
        bg.parse_sections(["5"])
    assert bg.parse_shape("64x7168x2048") == (64, 7168, 2048)
    explicit = [(1, 576, 7168), (64, 7168, 2048), (32, 2112, 7168)]
    assert bg.dense_shapes("2", explicit) == [(1, 576, 7168), (32, 2112, 7168)]
    assert bg.dense_shapes("1", explicit) == [(64, 7168, 2048)]
    assert bg.dense_shapes("1", None) == bg.PREFILL_SHAPES
