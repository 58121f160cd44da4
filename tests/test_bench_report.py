"""bench/report.py on a small synthetic results file (CPU only): the markdown's rows, ratios, geomeans and verdicts,
refusals shown as such, and the PNG chart where matplotlib is installed; bench_gemm's sections 5-7 run dry on the
CPU (stub timers and stand-ins for the gemmgen entry points) so their rows and the report on them are exercised."""

from __future__ import annotations

import functools
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


def family(kind: str, impl: str, m: int, n: int, k: int, tflops: float | None, **extra) -> dict:
    """A row of sections 5-7 (dense with a section field, or a wgrad kind); None: an error row."""
    r = {"kind": kind, "impl": impl, "m": m, "n": n, "k": k, "config": f"cfg-{impl}", **extra}
    if tflops is None:
        return {**r, "kernel_us": None, "tflops": None, "tbps": None, "call_us": None, "calc_diff": None,
                "error": "TypeError: fp8_gemm_nt() got an unexpected keyword argument 'recipe'"}
    flops = 2 * m * n * k * extra.get("groups", 1)
    us = flops / (tflops * 1e12) * 1e6
    return {**r, "kernel_us": us, "tflops": tflops, "tbps": 1.0, "call_us": us + 10, "calc_diff": 7e-4}


def recipe(impl: str, recipe_: str, dtype: str, tflops: float | None, m: int = 4096, n: int = 7168,
           k: int = 2048) -> dict:
    return family("dense", impl, m, n, k, tflops, section="recipes", recipe=recipe_, dtype=dtype)


FAMILY_ROWS = [
    # recipes 4096x7168x2048: e5m2 1300 / e4m3 1250 = 1.04; tensor 1400 / 1500 = 0.93; channel refused vs row 1450
    recipe("gemmgen", "1x128/128x128", "e4m3", 1250.0), recipe("gemmgen", "1x128/128x128", "e5m2", 1300.0),
    recipe("gemmgen", "tensor", "e4m3", 1400.0), recipe("gemmgen", "channel", "e4m3", None),
    recipe("cublaslt_tensorwise", "tensor", "e4m3", 1500.0), recipe("cublaslt_rowwise", "channel", "e4m3", 1450.0),
    # recipes 4096x2112x7168: only the block rows (a gemmgen without recipe=): e5m2 1100 / e4m3 1000 = 1.10
    recipe("gemmgen", "1x128/128x128", "e4m3", 1000.0, n=2112, k=7168),
    recipe("gemmgen", "1x128/128x128", "e5m2", 1100.0, n=2112, k=7168),
    # bf16: 4096x7168x2048 gemmgen 600 / cuBLAS 650; 64x2112x7168 gemmgen 120 / cuBLAS 100
    family("dense", "gemmgen", 4096, 7168, 2048, 600.0, section="bf16", recipe="none", dtype="bf16"),
    family("dense", "cublas_bf16", 4096, 7168, 2048, 650.0, section="bf16", recipe="none", dtype="bf16"),
    family("dense", "gemmgen", 64, 2112, 7168, 120.0, section="bf16", recipe="none", dtype="bf16"),
    family("dense", "cublas_bf16", 64, 2112, 7168, 100.0, section="bf16", recipe="none", dtype="bf16"),
    # wgrad: 7168x2112 K 4096 at 1000 against bar 955; k-grouped 4 x 7168 x 4096 K 8192 at 935 against 1039 (0.90)
    family("wgrad", "gemmgen", 7168, 2112, 4096, 1000.0, recipe="1x128/1x128", out_dtype="float32", bar=955),
    family("wgrad", "gemmgen", 512, 32768, 8192, None, recipe="1x128/1x128", out_dtype="float32", bar=1011),
    family("k_grouped_wgrad", "gemmgen", 7168, 4096, 8192, 935.1, groups=4, ks=[8192] * 4, recipe="1x128/1x128",
           out_dtype="float32", bar=1039),
    # DeepGEMM beside them: 7168x2112 at 950 (gemmgen 1000 / 950); the k-grouped case at 1000 (935.1 / 1000)
    family("wgrad", "deepgemm", 7168, 2112, 4096, 950.0, recipe="1x128/1x128", out_dtype="float32", bar=955),
    family("k_grouped_wgrad", "deepgemm", 7168, 4096, 8192, 1000.0, groups=4, ks=[8192] * 4, recipe="1x128/1x128",
           out_dtype="float32", bar=1039),
]

ROWS = [
    # prefill 64x2112x7168: gemmgen 200, block 100, tensor 160, bf16 80 -> best peer tensor, ratio 1.25
    dense("gemmgen", 64, 2112, 7168, 200.0, "prefill", bar=183),
    dense("cublaslt_blockwise", 64, 2112, 7168, 100.0, "prefill"),
    dense("cublaslt_tensorwise", 64, 2112, 7168, 160.0, "prefill"),
    dense("cublas_bf16", 64, 2112, 7168, 80.0, "prefill"),
    # prefill 4096x7168x2048 (no section field: classified by M): block refused -> best peer tensor 1250, ratio 0.80
    dense("gemmgen", 4096, 7168, 2048, 1000.0, bar=1278),
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
    {**grouped("gemmgen", 4, 1200.0), "bar": 1402}, grouped("cublaslt_loop", 4, 1000.0), grouped("deepgemm", 4, 1250.0),
    host("gemmgen", "same_tensors", 9.5), host("gemmgen", "new_pointers", 31.25), host("gemmgen", "row_major_sa", 40.0),
    host("cublaslt_blockwise", "same_tensors", 14.0), host("cublaslt_blockwise", "new_pointers", 15.0),
    host("cublaslt_blockwise", "row_major_sa", None), host("torch_floor", "same_tensors", 7.0),
    *FAMILY_ROWS,
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
    assert [t.split(".")[0] for t in titles] == ["## 1", "## 2", "## 3", "## 4", "## 5", "## 6", "## 7"]
    assert "rows of other kinds not shown" not in md
    # the family's dense rows stay out of the prefill table (they carry a section)
    prefill = _section(md, "## 1. Dense prefill")
    assert "| 4096 | 7168 | 2048 | 1000 | refused | 1250 | 600 |" in prefill  # section 1's row, not section 6's
    assert "| 4096 | 2112 |" not in prefill and "| 64 | 2112 | 7168 | 200 |" in prefill


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
    # against the fixed bars the rows carry: 200 / 183 above, 1000 / 1278 below
    assert (f"gemmgen against the fixed bars of docs/BENCHMARKING.md: at or above on 1 of 2 shapes, geometric mean "
            f"{math.sqrt(200 / 183 * 1000 / 1278):.3f}; below: 4096x7168x2048 1000/1278 (0.782)") in md


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
    # every peer of the case gets a column and a ratio (DeepGEMM sorts before cuBLASLt, as in IMPL_ORDER)
    assert cells[5:10] == ["1200", "1250", "1000", "0.96", "1.20"]
    assert "Geometric mean gemmgen / cuBLASLt loop: 1.200 (1 cases)" in grouped_md
    assert "Geometric mean gemmgen / DeepGEMM: 0.960 (1 cases)" in grouped_md
    assert ("gemmgen against the fixed bars of docs/BENCHMARKING.md: at or above on 0 of 1 cases, geometric mean "
            "0.856; below: contiguous 4 x 8192 4096x7168 1200/1402 (0.856)") in grouped_md
    host_md = _section(md, "## 4. Host overhead")
    assert _row(host_md, "| 64 | 7168 | 2048 | gemmgen |")[4:] == ["9.5 (12.5)", "31.2 (12.5)", "40.0 (12.5)"]
    assert _row(host_md, "| 64 | 7168 | 2048 | cuBLASLt block |")[4:] == ["14.0 (12.5)", "15.0 (12.5)", "refused"]
    # torch's one-kernel call in the same loop, after the peers: the host's floor, under same_tensors only
    assert _row(host_md, "| 64 | 7168 | 2048 | torch add_ (one kernel) |")[4:] == ["7.0 (12.5)", "—", "—"]
    assert host_md.index("| cuBLASLt block |") < host_md.index("| torch add_ (one kernel) |")


def test_recipes_table(bench_json: Path) -> None:
    md = _section(report.markdown(report.load(bench_json)), "## 5. Scale recipes")
    header = _row(md, "| M |")
    e5m2 = dict(zip(header, _row(md, "| 4096 | 7168 | 2048 | e5m2 vs gemmgen e4m3 |"), strict=True))
    assert (e5m2["gemmgen"], e5m2["peer"], e5m2["gemmgen / peer"]) == ("1300", "1250", "1.04")
    tensor = dict(zip(header, _row(md, "| 4096 | 7168 | 2048 | tensor vs cuBLASLt tensorwise |"), strict=True))
    assert (tensor["gemmgen"], tensor["peer"], tensor["gemmgen / peer"]) == ("1400", "1500", "0.93")
    channel = dict(zip(header, _row(md, "| 4096 | 7168 | 2048 | channel vs cuBLASLt rowwise |"), strict=True))
    assert (channel["gemmgen"], channel["peer"], channel["gemmgen / peer"]) == ("error", "1450", "—")
    assert _row(md, "| 4096 | 2112 | 7168 | e5m2 vs gemmgen e4m3 |")[4:7] == ["1100", "1000", "1.10"]
    assert "| 4096 | 2112 | 7168 | tensor" not in md  # neither row: no line
    assert f"Geometric mean gemmgen / peer, e5m2 vs gemmgen e4m3: {math.sqrt(1.04 * 1.1):.3f} (2 shapes)" in md
    assert "Geometric mean gemmgen / peer, tensor vs cuBLASLt tensorwise: 0.933 (1 shapes)" in md
    assert "Geometric mean gemmgen / peer, channel" not in md  # no pair measured on both sides
    assert "- 4096x7168x2048 channel/e4m3 gemmgen: TypeError" in md


def test_bf16_and_wgrad_tables(bench_json: Path) -> None:
    md = report.markdown(report.load(bench_json))
    bf16 = _section(md, "## 6. BF16 dense")
    header = _row(bf16, "| M |")
    big = dict(zip(header, _row(bf16, "| 4096 | 7168 | 2048 |"), strict=True))
    assert (big["gemmgen"], big["cuBLAS bf16"], big["gemmgen / cuBLAS"]) == ("600", "650", "0.92")
    assert _row(bf16, "| 64 | 2112 | 7168 |")[3:6] == ["120", "100", "1.20"]
    assert (f"Geometric mean gemmgen / cuBLAS bf16: {math.sqrt(600 / 650 * 1.2):.3f} (gemmgen at or above cuBLAS on "
            "1 of 2 shapes)") in bf16
    wgrad = _section(md, "## 7. Weight gradient")
    header = _row(wgrad, "| kind |")
    dense_w = dict(zip(header, _row(wgrad, "| wgrad | 7168 x 2112 | 4096 |"), strict=True))
    assert (dense_w["gemmgen"], dense_w["DeepGEMM"], dense_w["gemmgen / DeepGEMM"], dense_w["bar (H200)"]) == \
        ("1000", "950", f"{1000 / 950:.3f}", "955")
    assert _row(wgrad, "| wgrad | 512 x 32768 | 8192 |")[3:7] == ["error", "—", "—", "1011"]  # no peer row
    kg = dict(zip(header, _row(wgrad, "| k_grouped_wgrad | 4 x 7168 x 4096 | 8192 |"), strict=True))
    assert (kg["gemmgen"], kg["DeepGEMM"], kg["gemmgen / DeepGEMM"]) == ("935", "1000", "0.935")
    assert f"Geometric mean gemmgen / DeepGEMM, wgrad: {1000 / 950:.3f} (at or above on 1 of 1 cases)" in wgrad
    assert f"Geometric mean gemmgen / DeepGEMM, k_grouped_wgrad: {0.935:.3f} (at or above on 0 of 1 cases)" in wgrad
    assert "- 7168x4096x8192" not in wgrad and "- 512x32768x8192 gemmgen: TypeError" in wgrad


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
    assert len(data) > 20_000  # seven panels of bars, not an empty canvas
    assert "![benchmark chart](bench.png)" in md.read_text()


def test_bench_shape_sets_and_arguments() -> None:
    """bench_gemm's sections hold the documented shapes, bytes and argument spellings (imports torch, runs nothing)."""
    import bench_gemm as bg

    nk = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]
    assert bg.PREFILL_SHAPES == [(m, n, k) for m in (64, 128, 4096) for n, k in nk] + [(8192, 8192, 8192)]
    assert bg.DECODE_SHAPES == [(m, n, k) for m in (1, 8, 32) for n, k in nk + [(576, 7168)]]
    assert bg.HOST_SHAPES == [(64, 7168, 2048), (4096, 7168, 2048)]
    # the bars cover the sections' shapes and cases, with docs/BENCHMARKING.md's numbers
    assert set(bg.PREFILL_BARS) == set(bg.PREFILL_SHAPES) and set(bg.GROUPED_BARS) == set(bg.GROUPED_CASES)
    docs = (BENCH.parent / "docs" / "BENCHMARKING.md").read_text()
    prefill_doc = " ".join(docs.split("Dense prefill (M x N x K: bar):")[1].split("MoE grouped")[0].split())
    assert prefill_doc.rstrip(".") == ", ".join(f"{m}x{n}x{k}: {v}" for (m, n, k), v in bg.PREFILL_BARS.items())
    grouped_doc = " ".join(docs.split("MoE grouped (layout, groups x rows, N x K: bar):")[1].split("Training")[0]
                           .split())
    for (layout, g, rows, n, k), v in bg.GROUPED_BARS.items():
        case = grouped_doc.split(f"{layout} {g}x{rows} ")[1].split(";")[0].split(".")[0]  # "4096x7168: 1402, ..."
        assert f"{n}x{k}: {v}" in case.split(", "), (layout, g, rows, case)
    # A + B + D + SA (4 M ceil(K/128)) + SB (4 ceil(N/128) ceil(K/128)), a partial N block rounded up
    assert bg.dense_bytes(64, 7168, 2048) == 64 * 2048 + 7168 * 2048 + 2 * 64 * 7168 + 4 * 64 * 16 + 4 * 56 * 16
    assert bg.dense_bytes(1, 576, 7168) == 7168 + 576 * 7168 + 2 * 576 + 4 * 56 + 4 * 5 * 56
    assert bg.parse_sections(["1,2,3,4"]) == ["1", "2", "3", "4"]
    assert bg.parse_sections(["4", "1"]) == ["1", "4"]
    assert bg.parse_sections(["dense", "grouped"]) == ["1", "3"]
    assert bg.parse_sections(["recipes,bf16", "wgrad"]) == ["5", "6", "7"]
    assert bg.parse_sections(["all"]) == ["1", "2", "3", "4", "5", "6", "7"]
    assert bg.parse_sections([bg.DEFAULT_SECTIONS]) == ["1", "2", "3", "4"]
    with pytest.raises(SystemExit):
        bg.parse_sections(["8"])
    assert bg.parse_shape("64x7168x2048") == (64, 7168, 2048)
    explicit = [(1, 576, 7168), (64, 7168, 2048), (32, 2112, 7168)]
    assert bg.dense_shapes("2", explicit) == [(1, 576, 7168), (32, 2112, 7168)]
    assert bg.dense_shapes("1", explicit) == [(64, 7168, 2048)]
    assert bg.dense_shapes("1", None) == bg.PREFILL_SHAPES
    assert bg.RECIPE_SHAPES == [(4096, n, k) for n, k in nk] + [(8192, 8192, 8192)]
    assert bg.BF16_SHAPES == bg.PREFILL_SHAPES
    assert len(bg.WGRAD_SHAPES) == 12 and set(bg.WGRAD_SHAPES) == set(bg.WGRAD_BARS)
    assert len(bg.K_GROUPED_CASES) == 6
    # out [M, N] fp32 read and written, both operands' 1x128 scales
    assert bg.wgrad_bytes(512, 32768, 4096) == 512 * 4096 + 32768 * 4096 + 8 * 512 * 32768 + 4 * (512 + 32768) * 32


# ------------------------------------------------------------------------- bench_gemm sections 5-7, dry on the CPU
def _fake_family(monkeypatch: pytest.MonkeyPatch, bg) -> None:
    """CPU stand-ins: DEVICE cpu, stub timers (each timed callable still runs twice, so accumulating calls keep
    adding after the checked one), and the family's gemmgen entry points computed from dequantised inputs."""
    import torch

    import gemmgen
    from gemmgen.quant import dequantize_a, dequantize_b

    def dense(a, b, out, *, accumulate=False, config=None, recipe="1x128/128x128"):
        (qa, sa), (qb, sb) = a, b
        if recipe == "1x128/128x128":
            da, db = dequantize_a(qa, sa), dequantize_b(qb, sb)
        elif recipe == "tensor":
            assert sa.dim() == 0 and sb.dim() == 0
            da, db = qa.double() * sa.double(), qb.double() * sb.double()
        else:
            assert recipe == "channel" and sa.shape == (qa.shape[0],) and sb.shape == (qb.shape[0],)
            da, db = qa.double() * sa.double()[:, None], qb.double() * sb.double()[:, None]
        return out.copy_(da @ db.t())

    def wgrad(a, b, out, accumulate=True):
        assert accumulate
        return out.add_(dequantize_a(*a) @ dequantize_a(*b).t())

    def k_grouped(a, b, out, ks):
        da, db = dequantize_a(*a), dequantize_a(*b)
        start = 0
        for g, kg in enumerate(ks):
            out[g] += da[:, start:start + kg] @ db[:, start:start + kg].t()
            start += kg
        return out

    def bf16(a, b, out):
        return out.copy_(a.float() @ b.float().t())

    def stub_kernel_seconds(fn):
        fn()
        fn()
        return 1e-3, ["stub_kernel"]

    monkeypatch.setattr(bg, "DEVICE", "cpu")
    monkeypatch.setattr(bg, "kernel_seconds", stub_kernel_seconds)
    monkeypatch.setattr(bg, "call_seconds", lambda fn: 2e-3)
    monkeypatch.setattr(bg, "env_info", lambda method: dict(ENV))
    for name, fn in (("fp8_gemm_nt", dense), ("fp8_gemm_nt_wgrad", wgrad), ("k_grouped_fp8_gemm_nt_wgrad", k_grouped),
                     ("bf16_gemm_nt", bf16)):
        monkeypatch.setattr(gemmgen, name, fn, raising=False)

    def scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16, use_fast_accum=False, **kw):
        # torch's CPU _scaled_mm takes per-tensor scales only (torch 2.11 refuses rowwise there): the same product
        return ((a.float() * scale_a.float()) @ (b.float() * scale_b.float())).to(out_dtype)

    monkeypatch.setattr(torch, "_scaled_mm", scaled_mm)
    torch.set_num_threads(min(4, torch.get_num_threads()))


def test_host_floor_row_dry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Section 4's floor row times torch's own one-kernel call through the same enqueue loop, and a failure there is
    an error row, not a crash (CPU stand-ins for the device and the timers)."""
    import bench_gemm as bg

    _fake_family(monkeypatch, bg)
    seen = []

    def enqueue(calls, n):
        seen.append(calls[0]().clone())  # the callable really runs: small.add_(1)
        return 6.5, 7.5
    monkeypatch.setattr(bg, "enqueue_us", enqueue)
    r = bg.host_floor_row(64, 7168, 2048)
    assert (r["kind"], r["impl"], r["case"], r["us_per_call"], r["synced_us_per_call"]) == (
        "host", "torch_floor", "same_tensors", 6.5, 7.5)
    assert r["kernels"] == ["stub_kernel"] and not r.get("error") and bool((seen[0] == 1).all())

    def fails(calls, n):
        raise RuntimeError("no loop")
    monkeypatch.setattr(bg, "enqueue_us", fails)
    bad = bg.host_floor_row(64, 7168, 2048)
    assert bad["impl"] == "torch_floor" and bad["us_per_call"] is None and "no loop" in bad["error"]


def test_family_sections_dry_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys) -> None:
    """main() with --sections recipes,bf16,wgrad --shape on the CPU: every row of the schema, then the report."""
    import bench_gemm as bg

    _fake_family(monkeypatch, bg)
    out = tmp_path / "bench.json"
    bg.main(["--out", str(out), "--sections", "recipes,bf16,wgrad", "--shape", "256x256x512", "--quick"])
    rows = json.loads(out.read_text())["rows"]
    assert not [r for r in rows if r.get("error")], [r["error"] for r in rows if r.get("error")]
    got = [(r["kind"], r["impl"], r.get("section"), r.get("recipe"), r.get("dtype")) for r in rows]
    assert got == [("dense", "gemmgen", "recipes", "1x128/128x128", "e4m3"),
                   ("dense", "gemmgen", "recipes", "1x128/128x128", "e5m2"),
                   ("dense", "gemmgen", "recipes", "tensor", "e4m3"),
                   ("dense", "gemmgen", "recipes", "channel", "e4m3"),
                   ("dense", "cublaslt_tensorwise", "recipes", "tensor", "e4m3"),
                   ("dense", "cublaslt_rowwise", "recipes", "channel", "e4m3"),
                   ("dense", "gemmgen", "bf16", "none", "bf16"),
                   ("dense", "cublas_bf16", "bf16", "none", "bf16"),
                   ("wgrad", "gemmgen", None, "1x128/1x128", "e4m3")]
    for r in rows:
        assert (r["m"], r["n"], r["k"]) == (256, 256, 512)
        assert r["kernel_us"] == 1000.0 and r["call_us"] == 2000.0
        assert r["tflops"] == pytest.approx(2 * 256 * 256 * 512 / 1e-3 / 1e12)
        assert r["config"]  # a gemmgen row without a kernel name names the profiler's kernels
        # quantised rows carry the quantisation error; the bf16 rows and the dequantised references much less
        assert r["calc_diff"] < (1e-4 if r["dtype"] == "bf16" else 1e-2)
        if "calc_diff_dequant" in r:
            assert r["calc_diff_dequant"] < 1e-5
    assert rows[-1]["calc_diff"] < 1e-3
    assert rows[-1]["out_dtype"] == "float32" and rows[-1]["bar"] is None  # no published figure for this shape
    assert rows[-1]["tbps"] == pytest.approx(bg.wgrad_bytes(256, 256, 512) / 1e-3 / 1e12)
    md = out.with_suffix(".md").read_text()
    for title in ("## 5. Scale recipes", "## 6. BF16 dense", "## 7. Weight gradient"):
        assert title in md
    assert "Geometric mean gemmgen / peer, tensor vs cuBLASLt tensorwise: 1.000 (1 shapes)" in md
    assert "wgrad 256x256x512: gemmgen 1x128/1x128/e4m3" in capsys.readouterr().out


def test_passes_keep_each_rows_median(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """--passes 3: each row is its median pass (kernel time; the host rows' us per call), every pass's time kept;
    rows that differ between passes are refused, and --passes 0 is an error."""
    import bench_gemm as bg

    _fake_family(monkeypatch, bg)
    times = iter([3e-3, 1e-3, 2e-3, 3e-3, 1e-3, 2e-3])  # in measurement order: two rows (gemmgen, cuBLAS bf16) a pass
    monkeypatch.setattr(bg, "kernel_seconds", lambda fn: (next(times), ["k"]))
    out = tmp_path / "bench.json"
    bg.main(["--out", str(out), "--sections", "bf16", "--shape", "256x256x512", "--quick", "--passes", "3"])
    data = json.loads(out.read_text())
    assert data["env"]["passes"] == 3 and "median of up to 3 passes" in out.with_suffix(".md").read_text()
    assert bg.ROTATION == 0 and bg.IMPL_SETTLE_S == 0.0  # reset after the run
    rows = data["rows"]
    # pass 2 measures cuBLAS first (ROTATION 1), so it draws 2 ms and gemmgen 3 ms; pass 3 starts at gemmgen again
    assert [r["kernel_us_passes"] for r in rows] == [[3000.0, 3000.0, 1000.0], [1000.0, 2000.0, 2000.0]]
    assert [r["kernel_us"] for r in rows] == [3000.0, 2000.0]
    host = [{"kind": "host", "impl": "x", "m": 1, "n": 1, "k": 1, "case": "c", "us_per_call": t, "kernel_us": 9.0}
            for t in (4.0, 2.0)]
    merged = bg.merge_passes([[host[0]], [host[1]]])
    assert merged[0]["us_per_call"] == 4.0 and merged[0]["us_per_call_passes"] == [4.0, 2.0]  # the slower middle
    err = dict(host[1], us_per_call=None, error="refused")
    assert bg.merge_passes([[err], [host[0]]])[0]["us_per_call"] == 4.0
    # rows are matched by what they measured, not by position: a pass that lacks a row (or has another) keeps both
    other = dict(host[1], impl="y")
    merged = bg.merge_passes([[host[0], other], [host[1]], [other, host[0]]])
    assert [(r["impl"], r["us_per_call"], r["us_per_call_passes"]) for r in merged] == \
        [("x", 4.0, [4.0, 2.0, 4.0]), ("y", 2.0, [2.0, 2.0])]
    with pytest.raises(SystemExit):
        bg.main(["--out", str(out), "--sections", "bf16", "--passes", "0"])


def test_rotated_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pass p measures a shape's implementations starting at the p-th; the rows come back in the canonical order."""
    import bench_gemm as bg

    order: list[str] = []

    def measure(name: str) -> dict:
        order.append(name)
        return {"impl": name}

    for rotation, want in ((0, "abc"), (1, "bca"), (2, "cab"), (4, "bca")):
        monkeypatch.setattr(bg, "ROTATION", rotation)
        order.clear()
        rows = bg.in_rotated_order({name: functools.partial(measure, name) for name in "abc"})
        assert "".join(order) == want and [r["impl"] for r in rows] == ["a", "b", "c"]


def test_heavy_shapes_settle_before_each_implementation(monkeypatch: pytest.MonkeyPatch) -> None:
    """At >= HEAVY_FLOPS each implementation is measured after an idle pause (none follows another's power-capped
    clock); lighter shapes, a CPU run, or --settle-impl-s 0 pause never."""
    import bench_gemm as bg

    events: list[str] = []
    monkeypatch.setattr(bg.time, "sleep", lambda s: events.append(f"sleep {s}"))
    monkeypatch.setattr(bg.torch.cuda, "synchronize", lambda: events.append("sync"))
    measures = {name: functools.partial(lambda n: events.append(n) or {"impl": n}, name) for name in "ab"}
    for device, settle, flops, want in (("cuda", 0.5, 1e12, ["sync", "sleep 0.5", "a", "sync", "sleep 0.5", "b"]),
                                        ("cuda", 0.5, 1e10, ["a", "b"]), ("cuda", 0.0, 1e12, ["a", "b"]),
                                        ("cpu", 0.5, 1e12, ["a", "b"])):
        monkeypatch.setattr(bg, "DEVICE", device)
        monkeypatch.setattr(bg, "IMPL_SETTLE_S", settle)
        events.clear()
        bg.in_rotated_order(measures, flops)
        assert events == want, (device, settle, flops)


def test_k_grouped_wgrad_dry_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import bench_gemm as bg

    _fake_family(monkeypatch, bg)
    monkeypatch.setitem(bg.K_GROUPED_BARS, (3, 256, 128, 256), 900)
    (r,) = bg.k_grouped_wgrad_rows(3, 256, 128, 256)
    assert (r["kind"], r["impl"], r["m"], r["n"], r["k"], r["groups"], r["ks"]) == \
        ("k_grouped_wgrad", "gemmgen", 256, 128, 256, 3, [256] * 3)
    assert r["bar"] == 900 and not r.get("error")
    assert r["tflops"] == pytest.approx(2 * 256 * 128 * 768 / 1e-3 / 1e12)
    assert r["calc_diff"] < 1e-3 and r["calc_diff_dequant"] < 1e-5


def test_family_sections_skip_missing_entry_points(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """A gemmgen without the family's entry points: each section says so and gives no rows (and runs nothing)."""
    import bench_gemm as bg

    import gemmgen

    _fake_family(monkeypatch, bg)
    missing = ("fp8_gemm_nt_wgrad", "k_grouped_fp8_gemm_nt_wgrad", "bf16_gemm_nt")
    for name in missing:
        monkeypatch.delattr(gemmgen, name)
    # gemmgen loads its calls lazily (PEP 562): a real entry point must not come back through the lazy table
    monkeypatch.setattr(gemmgen, "_LAZY", {k: v for k, v in gemmgen._LAZY.items() if k not in missing})
    assert list(bg.family_rows("6", None)) == []
    assert list(bg.family_rows("7", None)) == []
    printed = capsys.readouterr().out
    for name in ("bf16_gemm_nt", "fp8_gemm_nt_wgrad", "k_grouped_fp8_gemm_nt_wgrad"):
        assert f"skipped: gemmgen has no {name}\n" in printed
    monkeypatch.setattr(gemmgen, "fp8_gemm_nt", lambda a, b, out, *, accumulate=False, config=None: out)
    assert not bg.gemmgen_has("fp8_gemm_nt", "recipe")
    rows = [r for _, new in bg.family_rows("5", [(128, 128, 256)]) for r in new]
    assert [(r["impl"], r["recipe"], r["dtype"]) for r in rows] == [("gemmgen", "1x128/128x128", "e4m3"),
                                                                    ("gemmgen", "1x128/128x128", "e5m2")]
    assert "skipped: gemmgen has no fp8_gemm_nt(recipe=...)" in capsys.readouterr().out


def test_measure_resets_before_the_checked_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """An accumulating call's out is zeroed (reset) right before the call whose result is checked."""
    import bench_gemm as bg
    import torch

    _fake_family(monkeypatch, bg)
    acc = torch.full((2, 2), 5.0)

    def setup():
        return (lambda: acc.add_(1.0)), None, None, {}

    r = bg._measure("wgrad", "gemmgen", (2, 2, 16), setup, flops=128, nbytes=64, ref=torch.ones(2, 2),
                    reset=acc.zero_)
    assert r["calc_diff"] == 0.0 and r["config"] == "stub_kernel"
    assert acc[0, 0].item() == 3.0  # the checked call, then the stub timer's two


def test_deepgemm_peer_folder_is_checked(tmp_path: Path) -> None:
    """--deepgemm names the folder and what it must hold when DeepGEMM's tree or CUTLASS's headers are missing."""
    import bench_gemm as bg

    with pytest.raises(SystemExit, match=r"--deepgemm .*include/cute and include/cutlass"):
        bg.main(["--deepgemm", str(tmp_path), "--sections", "1", "--out", str(tmp_path / "b.json")])
    (tmp_path / "deep_gemm" / "include" / "cute").mkdir(parents=True)
    (tmp_path / "deep_gemm" / "include" / "deep_gemm").mkdir()
    with pytest.raises(SystemExit, match=r"--deepgemm .*include/cutlass"):  # cute alone is not enough
        bg.main(["--deepgemm", str(tmp_path), "--sections", "1", "--out", str(tmp_path / "b.json")])


def test_deepgemm_peer_calls_and_unload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in deep_gemm package: load imports it from the folder; the dense call converts SA once at setup and
    passes DeepGEMM's argument order; a bench run without --deepgemm drops a peer an earlier run loaded."""
    import bench_gemm as bg
    import deepgemm_peer
    import torch

    pkg = tmp_path / "deep_gemm"
    for d in ("deep_gemm", "cute", "cutlass"):
        (pkg / "include" / d).mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "calls = []\n"
        "def get_col_major_tma_aligned_tensor(sa):\n    calls.append('align')\n    return sa * 2\n"
        "def gemm_fp8_fp8_bf16_nt(lhs, rhs, out):\n    calls.append(('gemm', lhs, rhs))\n"
        "    out.copy_(lhs[0] @ rhs[0].t())\n")
    monkeypatch.delitem(sys.modules, "deep_gemm", raising=False)
    try:
        dg = deepgemm_peer.load(tmp_path)
        assert deepgemm_peer.loaded() is dg and dg.__file__ == str(pkg / "__init__.py")
        a, sa, b, sb = torch.ones(2, 4), torch.full((2, 1), 3.0), torch.ones(3, 4), torch.ones(1, 1)
        out = torch.zeros(2, 3)
        fn = deepgemm_peer.dense(a, sa, b, sb, out)
        assert dg.calls == ["align"]  # SA converted once, outside the timed call
        assert fn() is out and torch.equal(out, torch.full((2, 3), 4.0))
        kind, lhs, rhs = dg.calls[1]
        assert kind == "gemm" and lhs[0] is a and torch.equal(lhs[1], sa * 2) and rhs[0] is b and rhs[1] is sb

        class Stop(Exception):
            pass

        def stop(_values):
            raise Stop
        monkeypatch.setattr(bg, "parse_sections", stop)
        with pytest.raises(Stop):
            bg.main(["--sections", "1", "--out", str(tmp_path / "b.json")])
        assert deepgemm_peer.loaded() is None
    finally:
        deepgemm_peer.unload()
        sys.path[:] = [p for p in sys.path if p != str(tmp_path.resolve())]


def test_pdl_chain_markdown() -> None:
    """bench/pdl_chain.py's table: one row per shape, the PDL gain, missing peers as '-', errors listed."""
    import pdl_chain

    rows = [{"m": 1, "n": 7168, "k": 2048, "layers": 19, "pdl_bitwise_equal": True, "errors": {},
             "per_layer_us": {"gemmgen": 7.0, "gemmgen_pdl": 6.2, "cublaslt_tensorwise": 7.1},
             "per_layer_tbps": {"gemmgen_pdl": 2.38}, "isolated_kernel_us": {"gemmgen": 7.6}},
            {"m": 32, "n": 4096, "k": 7168, "layers": 10, "pdl_bitwise_equal": None,
             "errors": {"gemmgen_pdl": "RuntimeError: capture"}, "per_layer_us": {"gemmgen": 11.8},
             "per_layer_tbps": {}, "isolated_kernel_us": {"gemmgen": 13.1}}]
    text = pdl_chain.markdown(rows, {"gpu": "H200", "gemmgen_commit": "abc"})
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    assert lines[0].startswith("| M | N | K | layers | gemmgen us | gemmgen PDL us | cuBLASLt tensor us | PDL gain")
    assert lines[1] == "| 1 | 7168 | 2048 | 19 | 7.0 | 6.2 | 7.1 | 0.8 | 2.38 | 7.6 | True |  |"
    assert lines[2] == ("| 32 | 4096 | 7168 | 10 | 11.8 | - | - | - | - | 13.1 | None | "
                        "gemmgen_pdl: RuntimeError: capture |")
    assert "gemmgen abc" in text and "DeepGEMM" not in lines[0]
