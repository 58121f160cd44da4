"""The report of a results file (docs/BENCHMARKING.md): bench.md (one markdown table per section) and bench.png (one
chart panel per section, one bar per implementation, the ceilings as horizontal lines) beside the bench.json.

    python bench/report.py bench/results/<dir>/bench.json      (the chart needs matplotlib: pip install -e '.[bench]')

Sections: prefill (dense, M > 32: kernel TFLOPS, gemmgen against the best peer), decode (dense, M <= 32: kernel us
and TB/s against the best peer), grouped (MoE, TFLOPS on valid rows against each peer: the per-expert cuBLASLt loop,
and DeepGEMM in a run with --deepgemm), host
(per-call host cost of an enqueue loop), recipes (dense rows with section "recipes": gemmgen e5m2 against gemmgen
e4m3, recipe "tensor" against cuBLASLt tensorwise, "channel" against cuBLASLt rowwise), bf16 (gemmgen against cuBLAS
bf16) and wgrad (the "wgrad" and "k_grouped_wgrad" kinds against DeepGEMM in the same run, and each row's "bar").
Rows with "error" are shown as refusals, never as numbers. Only the standard library is needed for the markdown (no
torch).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

PEAK_TFLOPS = 1979.0  # H200 FP8 dense, datasheet
PRACTICAL_TFLOPS = 1560.0  # cuBLASLt per-tensor FP8, the practical ceiling seen (docs/BENCHMARKING.md)
HBM_TBPS = 4.3  # device-to-device copy
AT_TOLERANCE = 0.02  # decode: gemmgen within 2% of the best peer's time counts as "at"
DECODE_MAX_M = 32  # dense rows without a "section" field: M <= 32 is decode

IMPL_ORDER = ["gemmgen", "deepgemm", "cublaslt_blockwise", "cublaslt_tensorwise", "cublaslt_rowwise", "cublas_bf16",
              "cublaslt_loop", "torch_floor"]
IMPL_LABEL = {"gemmgen": "gemmgen", "deepgemm": "DeepGEMM", "cublaslt_blockwise": "cuBLASLt block",
              "cublaslt_tensorwise": "cuBLASLt tensor", "cublaslt_rowwise": "cuBLASLt row",
              "cublas_bf16": "cuBLAS bf16", "cublaslt_loop": "cuBLASLt loop",
              "torch_floor": "torch add_ (one kernel)"}
IMPL_COLOR = {"gemmgen": "#d62728", "deepgemm": "#ff7f0e", "cublaslt_blockwise": "#1f77b4",
              "cublaslt_tensorwise": "#2ca02c", "cublaslt_rowwise": "#9467bd", "cublas_bf16": "#7f7f7f",
              "cublaslt_loop": "#17becf"}
# Chart-only series: section 5's peer of each comparison, section 7's DeepGEMM bar.
IMPL_LABEL.update({"peer": "peer (gemmgen e4m3 / cuBLASLt tensor / cuBLASLt row)", "bar": "DeepGEMM (bar)"})
IMPL_COLOR.update({"peer": "#1f77b4", "bar": "#8c564b"})
HOST_CASES = ["same_tensors", "new_pointers", "row_major_sa"]
SECTIONS = ["prefill", "decode", "grouped", "host", "recipes", "bf16", "wgrad"]
WGRAD_KINDS = ("wgrad", "k_grouped_wgrad")
BLOCK_RECIPE = "1x128/128x128"
# Section 5's comparisons: (title, gemmgen's (recipe, dtype), the peer's impl and (recipe, dtype)).
RECIPE_PAIRS = [("e5m2 vs gemmgen e4m3", (BLOCK_RECIPE, "e5m2"), "gemmgen", (BLOCK_RECIPE, "e4m3")),
                ("tensor vs cuBLASLt tensorwise", ("tensor", "e4m3"), "cublaslt_tensorwise", ("tensor", "e4m3")),
                ("channel vs cuBLASLt rowwise", ("channel", "e4m3"), "cublaslt_rowwise", ("channel", "e4m3"))]


def load(path: Path | str) -> dict:
    return json.loads(Path(path).read_text())


def section_of(r: dict) -> str | None:
    kind = r.get("kind")
    if kind == "dense":
        return r.get("section") or ("decode" if r["m"] <= DECODE_MAX_M else "prefill")
    if kind in ("grouped", "host"):
        return kind
    if kind in WGRAD_KINDS:
        return "wgrad"
    return None


def ok(r: dict | None) -> bool:
    return r is not None and not r.get("error") and r.get("kernel_us") is not None


def geomean(values: Iterable[float]) -> float:
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def impls_of(rows: list[dict]) -> list[str]:
    seen = {r["impl"] for r in rows}
    return [i for i in IMPL_ORDER if i in seen] + sorted(seen - set(IMPL_ORDER))


def label(impl: str) -> str:
    return IMPL_LABEL.get(impl, impl)


def shape_key(r: dict) -> tuple[int, int, int]:
    return r["m"], r["n"], r["k"]


def by_shape(rows: list[dict]) -> dict[tuple[int, int, int], dict[str, dict]]:
    """{(m, n, k): {impl: row}} in first-seen order."""
    table: dict[tuple[int, int, int], dict[str, dict]] = {}
    for r in rows:
        table.setdefault(shape_key(r), {})[r["impl"]] = r
    return table


def _f(value: float | None, fmt: str) -> str:
    return "—" if value is None or (isinstance(value, float) and not math.isfinite(value)) else format(value, fmt)


def _cell(r: dict | None, fmt: Callable[[dict], str], good: Callable[[dict | None], bool] = ok) -> str:
    """A table cell: "—" for no row, "refused"/"error" for a row with an error, else fmt(row)."""
    if r is None:
        return "—"
    if not good(r):
        return "refused" if "refuse" in str(r.get("error", "")).lower() else "error"
    return fmt(r)


def _errors(rows: list[dict]) -> list[str]:
    lines = []
    for r in rows:
        if r.get("error"):
            where = f"{r['m']}x{r['n']}x{r['k']}" + (f" {r['case']}" if r.get("case") else "")
            if r.get("layout"):
                where += f" {r['layout']} {r.get('groups')}x{r.get('expected_m')}"
            elif r.get("kind") == "k_grouped_wgrad":
                where += f" {r.get('groups')} groups"
            if r.get("section") == "recipes":
                where += f" {r.get('recipe')}/{r.get('dtype')}"
            lines.append(f"- {where} {r['impl']}: {str(r['error'])[:240]}")
    return (["", "Refused or failed:", ""] + lines) if lines else []


def best_peer(impls: dict[str, dict], key: str, lower_is_better: bool) -> dict | None:
    peers = [r for i, r in impls.items() if i != "gemmgen" and ok(r)]
    if not peers:
        return None
    pick = min if lower_is_better else max
    return pick(peers, key=lambda r: r[key])


def prefill_table(rows: list[dict]) -> list[str]:
    shapes = by_shape(rows)
    impls = impls_of(rows)
    peers = [i for i in impls if i != "gemmgen"]
    head = (["M", "N", "K"] + [label(i) for i in impls] + ["best peer", "gemmgen / best peer"]
            + [f"gemmgen / {label(p)}" for p in peers] + ["gemmgen call us", "calc_diff", "config"])
    lines = ["## 1. Dense prefill (kernel TFLOPS, cold L2)", "", "| " + " | ".join(head) + " |",
             "|" + "---:|" * (len(head) - 1) + "---|"]
    ratios: dict[str, list[float]] = {"best": [], **{p: [] for p in peers}}
    wins = 0
    for (m, n, k), got in shapes.items():
        g = got.get("gemmgen")
        best = best_peer(got, "tflops", lower_is_better=False)
        cells = [str(m), str(n), str(k)] + [_cell(got.get(i), lambda r: f"{r['tflops']:.0f}") for i in impls]
        if ok(g) and best is not None:
            ratio = g["tflops"] / best["tflops"]
            ratios["best"].append(ratio)
            wins += ratio >= 1.0
            cells += [f"{label(best['impl'])} {best['tflops']:.0f}", f"{ratio:.2f}"]
        else:
            cells += [f"{label(best['impl'])} {best['tflops']:.0f}" if best else "—", "—"]
        for p in peers:
            if ok(g) and ok(got.get(p)):
                ratio = g["tflops"] / got[p]["tflops"]
                ratios[p].append(ratio)
                cells.append(f"{ratio:.2f}")
            else:
                cells.append("—")
        cells += [_f(g.get("call_us") if g else None, ".1f"), _f(g.get("calc_diff") if g else None, ".1e"),
                  (g or {}).get("config", "") or "—"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Geometric mean gemmgen / best peer: {geomean(ratios['best']):.3f} "
                  f"(gemmgen at or above the best peer on {wins} of {len(ratios['best'])} shapes)"]
    for p in peers:
        lines.append(f"Geometric mean gemmgen / {label(p)}: {geomean(ratios[p]):.3f} ({len(ratios[p])} shapes)")
    gemmgen_rows = [got["gemmgen"] for got in shapes.values() if "gemmgen" in got]
    return lines + bar_summary(gemmgen_rows, lambda r: "{m}x{n}x{k}".format(**r), "shapes") + _errors(rows) + [""]


def bar_summary(rows: list[dict], name: Callable[[dict], str], unit: str) -> list[str]:
    """gemmgen's rows against the fixed bars they carry (docs/BENCHMARKING.md): how many at or above, the geometric
    mean, and each one below; nothing where no row carries a bar (an older results file, or --shape rows)."""
    pairs = [(r, r["tflops"] / r["bar"]) for r in rows if ok(r) and r.get("bar")]
    if not pairs:
        return []
    below = [f"{name(r)} {r['tflops']:.0f}/{r['bar']} ({ratio:.3f})" for r, ratio in pairs if ratio < 1.0]
    return [f"gemmgen against the fixed bars of docs/BENCHMARKING.md: at or above on {len(pairs) - len(below)} of "
            f"{len(pairs)} {unit}, geometric mean {geomean(ratio for _, ratio in pairs):.3f}"
            + (f"; below: {', '.join(below)}" if below else "")]


def decode_verdict(ratio: float) -> str:
    """gemmgen's kernel time over the best peer's: below, at (within AT_TOLERANCE) or above."""
    if ratio < 1 - AT_TOLERANCE:
        return "below"
    return "at" if ratio <= 1 + AT_TOLERANCE else "above"


def decode_table(rows: list[dict]) -> list[str]:
    shapes = by_shape(rows)
    impls = impls_of(rows)
    head = (["M", "N", "K"] + [f"{label(i)} us / TB/s" for i in impls]
            + ["best peer us", "gemmgen / best (time)", "gemmgen vs best", "calc_diff", "config"])
    lines = ["## 2. Dense decode (kernel us / TB/s, cold L2; lower us is better)", "",
             f"TB/s = the FP8 problem's bytes (A + B + D + scales) / kernel time, for every impl (bf16 physically "
             f"moves about twice that); HBM ~{HBM_TBPS} TB/s. \"at\" = within {AT_TOLERANCE:.0%} of the best peer.",
             "", "| " + " | ".join(head) + " |", "|" + "---:|" * (len(head) - 2) + "---|---|"]
    ratios, verdicts = [], {"below": 0, "at": 0, "above": 0}
    for (m, n, k), got in shapes.items():
        g = got.get("gemmgen")
        best = best_peer(got, "kernel_us", lower_is_better=True)
        cells = [str(m), str(n), str(k)] + [_cell(got.get(i), lambda r: f"{r['kernel_us']:.1f} / {r['tbps']:.2f}")
                                            for i in impls]
        if ok(g) and best is not None:
            ratio = g["kernel_us"] / best["kernel_us"]
            ratios.append(ratio)
            verdict = decode_verdict(ratio)
            verdicts[verdict] += 1
            cells += [f"{label(best['impl'])} {best['kernel_us']:.1f}", f"{ratio:.2f}", verdict]
        else:
            cells += [f"{label(best['impl'])} {best['kernel_us']:.1f}" if best else "—", "—", "—"]
        cells += [_f(g.get("calc_diff") if g else None, ".1e"), (g or {}).get("config", "") or "—"]
        lines.append("| " + " | ".join(cells) + " |")
    n = len(ratios)
    lines += ["", f"gemmgen at or below the best peer on {verdicts['below'] + verdicts['at']} of {n} shapes "
                  f"(below {verdicts['below']}, at {verdicts['at']}, above {verdicts['above']}); geometric mean "
                  f"gemmgen / best peer kernel time: {geomean(ratios):.3f}"]
    return lines + _errors(rows) + [""]


def grouped_table(rows: list[dict]) -> list[str]:
    """gemmgen against every peer of the same case (the cuBLASLt loop, and DeepGEMM when the run had it)."""
    peers = [i for i in impls_of(rows) if i != "gemmgen"]
    head = (["layout", "groups x expected", "valid rows", "N", "K", "gemmgen"] + [label(p) for p in peers]
            + [f"gemmgen / {label(p)}" for p in peers] + ["gemmgen us", "calc_diff", "config"])
    lines = ["## 3. MoE grouped (kernel TFLOPS on valid rows, cold L2)", "", "| " + " | ".join(head) + " |",
             "|---|---|" + "---:|" * (len(head) - 3) + "---|"]
    ratios: dict[str, list[float]] = {p: [] for p in peers}

    def case_of(r: dict) -> tuple:
        return r.get("layout"), r.get("groups"), r.get("expected_m"), r["n"], r["k"]
    for r in (r for r in rows if r["impl"] == "gemmgen"):
        got = {p.get("impl"): p for p in rows if p["impl"] != "gemmgen" and case_of(p) == case_of(r)}
        good = ok(r)
        cells = [str(r.get("layout")), f"{r.get('groups')} x {r.get('expected_m')}",
                 str(r.get("valid_m")) if good else "—", str(r["n"]), str(r["k"]),
                 _cell(r, lambda x: f"{x['tflops']:.0f}")]
        cells += [_cell(got.get(p), lambda x: f"{x['tflops']:.0f}") for p in peers]
        for p in peers:
            ratio = r["tflops"] / got[p]["tflops"] if good and ok(got.get(p)) else None
            ratios[p] += [ratio] if ratio else []
            cells.append(_f(ratio, ".2f"))
        cells += [_f(r.get("kernel_us") if good else None, ".1f"), _f(r.get("calc_diff") if good else None, ".1e"),
                  r.get("config", "") if good else "—"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"Geometric mean gemmgen / {label(p)}: {geomean(ratios[p]):.3f} ({len(ratios[p])} cases)"
              for p in peers]
    lines += bar_summary([r for r in rows if r["impl"] == "gemmgen"],
                         lambda r: f"{r.get('layout')} {r.get('groups')} x {r.get('expected_m')} {r['n']}x{r['k']}",
                         "cases")
    return lines + _errors(rows) + [""]


def host_table(rows: list[dict]) -> list[str]:
    lines = ["## 4. Host overhead (us per call: an enqueue loop's wall time / its calls, no sync inside)", "",
             "same_tensors: the same tensors every call; new_pointers: rotating sets of A, SA and out (B fixed; "
             "new tensor maps for A and out); row_major_sa: as new_pointers with SA row-major [M, ceil(K/128)] "
             "(gemmgen gathers it in the kernel: still one kernel per call). In brackets: the kernel us of the same "
             "calls (where it is about the us per call, the loop was GPU-bound rather than host-bound). torch add_ "
             "(one kernel): torch's own one-kernel call small.add_(1) in the same loop right after, the host's floor "
             "at that moment (its speed moves up to 1.8x within minutes: bench/NOTES.md v0.29).", "",
             "| M | N | K | impl | " + " | ".join(HOST_CASES) + " |",
             "|---:|---:|---:|---|" + "---:|" * len(HOST_CASES)]
    groups: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        groups.setdefault((r["m"], r["n"], r["k"], r["impl"]), {})[r.get("case", "")] = r
    order = {i: n for n, i in enumerate(IMPL_ORDER)}
    for (m, n, k, impl), cases in sorted(groups.items(), key=lambda kv: (kv[0][:3], order.get(kv[0][3], 99))):
        cells = [_cell(cases.get(c), lambda r: f"{r['us_per_call']:.1f} ({r['kernel_us']:.1f})", r_ok)
                 for c in HOST_CASES]
        lines.append(f"| {m} | {n} | {k} | {label(impl)} | " + " | ".join(cells) + " |")
    return lines + _errors(rows) + [""]


def _recipe_key(r: dict) -> tuple[str, str]:
    return r.get("recipe") or BLOCK_RECIPE, r.get("dtype") or "e4m3"


def recipe_pairs(rows: list[dict]) -> list[tuple[str, tuple[int, int, int], dict | None, dict | None]]:
    """Section 5's (comparison, shape, gemmgen row, peer row), shapes in first-seen order; a pair with neither row is
    left out."""
    found: dict[tuple, dict] = {}
    for r in rows:
        found[(shape_key(r), r["impl"], _recipe_key(r))] = r
    pairs = []
    for shape in by_shape(rows):
        for title, mine, peer_impl, theirs in RECIPE_PAIRS:
            g, p = found.get((shape, "gemmgen", mine)), found.get((shape, peer_impl, theirs))
            if g is not None or p is not None:
                pairs.append((title, shape, g, p))
    return pairs


def recipes_table(rows: list[dict]) -> list[str]:
    head = ["M", "N", "K", "comparison", "gemmgen", "peer", "gemmgen / peer", "gemmgen us", "gemmgen calc_diff",
            "peer calc_diff", "config"]
    lines = ["## 5. Scale recipes and e5m2 (dense, kernel TFLOPS, cold L2)", "",
             "e5m2: A and B both float8_e5m2, block-scaled as e4m3 (1x128 A, 128x128 B), against gemmgen e4m3 on the "
             "same bf16 inputs. tensor / channel: one scale per tensor / per row of A and B (applied in the "
             "epilogue) against torch._scaled_mm tensorwise / rowwise (use_fast_accum=True) on the same FP8 inputs. "
             "calc_diff against the float64 product of the bf16 inputs.", "",
             "| " + " | ".join(head) + " |", "|" + "---:|" * 3 + "---|" + "---:|" * 6 + "---|"]
    ratios: dict[str, list[float]] = {title: [] for title, *_ in RECIPE_PAIRS}
    for title, (m, n, k), g, p in recipe_pairs(rows):
        cells = [str(m), str(n), str(k), title, _cell(g, lambda r: f"{r['tflops']:.0f}"),
                 _cell(p, lambda r: f"{r['tflops']:.0f}")]
        if ok(g) and ok(p):
            ratio = g["tflops"] / p["tflops"]
            ratios[title].append(ratio)
            cells.append(f"{ratio:.2f}")
        else:
            cells.append("—")
        cells += [_f(g.get("kernel_us") if g else None, ".1f"), _f(g.get("calc_diff") if g else None, ".1e"),
                  _f(p.get("calc_diff") if p else None, ".1e"), (g or {}).get("config", "") or "—"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for title, values in ratios.items():
        if values:
            lines.append(f"Geometric mean gemmgen / peer, {title}: {geomean(values):.3f} ({len(values)} shapes)")
    return lines + _errors(rows) + [""]


def bf16_table(rows: list[dict]) -> list[str]:
    head = ["M", "N", "K", "gemmgen", "cuBLAS bf16", "gemmgen / cuBLAS", "gemmgen us", "gemmgen call us", "calc_diff",
            "config"]
    lines = ["## 6. BF16 dense (kernel TFLOPS, cold L2)", "", "| " + " | ".join(head) + " |",
             "|" + "---:|" * (len(head) - 1) + "---|"]
    ratios, wins = [], 0
    for (m, n, k), got in by_shape(rows).items():
        g, p = got.get("gemmgen"), got.get("cublas_bf16")
        cells = [str(m), str(n), str(k), _cell(g, lambda r: f"{r['tflops']:.0f}"),
                 _cell(p, lambda r: f"{r['tflops']:.0f}")]
        if ok(g) and ok(p):
            ratio = g["tflops"] / p["tflops"]
            ratios.append(ratio)
            wins += ratio >= 1.0
            cells.append(f"{ratio:.2f}")
        else:
            cells.append("—")
        cells += [_f(g.get("kernel_us") if g else None, ".1f"), _f(g.get("call_us") if g else None, ".1f"),
                  _f(g.get("calc_diff") if g else None, ".1e"), (g or {}).get("config", "") or "—"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Geometric mean gemmgen / cuBLAS bf16: {geomean(ratios):.3f} (gemmgen at or above cuBLAS on "
                  f"{wins} of {len(ratios)} shapes)"]
    return lines + _errors(rows) + [""]


def wgrad_case(r: dict) -> str:
    return f"{r.get('groups')} x {r['m']} x {r['n']}" if r["kind"] == "k_grouped_wgrad" else f"{r['m']} x {r['n']}"


def wgrad_table(rows: list[dict]) -> list[str]:
    """gemmgen against DeepGEMM in the same run where it ran (--deepgemm), else against the bar."""
    key = lambda r: (r["kind"], r.get("groups"), r["m"], r["n"], r["k"])  # noqa: E731
    peer = {key(r): r for r in rows if r["impl"] == "deepgemm"}
    head = ["kind", "case", "K", "gemmgen", "DeepGEMM", "gemmgen / DeepGEMM", "bar (H200)", "gemmgen us",
            "DeepGEMM us", "calc_diff", "config"]
    lines = ["## 7. Weight gradient (FP32 out accumulated, 1x128 scales on A and B; kernel TFLOPS, cold L2)", "",
             "case: M x N, or groups x M x N for the k-grouped kind, whose K is the average per group (every group "
             "the same). DeepGEMM (with --deepgemm) ran beside gemmgen in the same run (its k-grouped call launches "
             "one kernel per group, all counted); the bar is DeepGEMM's kernel TFLOPS measured by the project on an "
             "H200 (docs/BENCHMARKING.md).", "",
             "| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 3) + "---|"]
    ratios: dict[str, list[float]] = {kind: [] for kind in WGRAD_KINDS}
    for r in rows:
        if r["impl"] != "gemmgen":
            continue
        d = peer.get(key(r))
        cells = [r["kind"], wgrad_case(r), str(r["k"]), _cell(r, lambda x: f"{x['tflops']:.0f}"),
                 _cell(d, lambda x: f"{x['tflops']:.0f}") if d else "—"]
        if ok(r) and d and ok(d):
            ratio = r["tflops"] / d["tflops"]
            ratios[r["kind"]].append(ratio)
            cells.append(f"{ratio:.3f}")
        else:
            cells.append("—")
        cells += [_f(r.get("bar"), ".0f"), _f(r.get("kernel_us"), ".1f"), _f((d or {}).get("kernel_us"), ".1f"),
                  _f(r.get("calc_diff"), ".1e"), r.get("config", "") or "—"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for kind, values in ratios.items():
        if values:
            lines.append(f"Geometric mean gemmgen / DeepGEMM, {kind}: {geomean(values):.3f} (at or above on "
                         f"{sum(v >= 1.0 for v in values)} of {len(values)} cases)")
    return lines + _errors(rows) + [""]


def r_ok(r: dict | None) -> bool:
    return ok(r) and r.get("us_per_call") is not None


def markdown(data: dict, png_name: str | None = None) -> str:
    env = data.get("env", {})
    lines = [f"# {env.get('gpu', '?')}, {env.get('date', '?')}, gemmgen {env.get('gemmgen_commit', '?')}", "",
             f"torch {env.get('torch', '?')}, NVRTC {env.get('nvrtc', '?')}. Kernel time: every kernel of a call, "
             "L2 flushed before each call (docs/BENCHMARKING.md). calc_diff: against the float64 product of the "
             "bf16 inputs before quantisation."
             + (f" Each row is the median of up to {env['passes']} passes over the sections (`kernel_us_passes` "
                "lists them; a pass's row is measured seconds after the others', so a power-cap dip lands in one "
                "pass, not in the row)."
                if env.get("passes", 1) > 1 else ""), ""]
    if png_name:
        lines += [f"![benchmark chart]({png_name})", ""]
    tables = {"prefill": prefill_table, "decode": decode_table, "grouped": grouped_table, "host": host_table,
              "recipes": recipes_table, "bf16": bf16_table, "wgrad": wgrad_table}
    rows = data.get("rows", [])
    for section in SECTIONS:
        picked = [r for r in rows if section_of(r) == section]
        if picked:
            lines += tables[section](picked)
    other = [r for r in rows if section_of(r) is None]
    if other:
        lines += [f"({len(other)} rows of other kinds not shown: {sorted({r.get('kind') for r in other})})", ""]
    return "\n".join(lines).rstrip() + "\n"


# ---------------------------------------------------------------------------------------------------- the chart
def _bars(ax, groups: list[str], series: dict[str, list[float | None]], rotation: int = 45) -> None:
    """Grouped bars: one group per x label, one bar per impl (a missing value leaves its slot empty)."""
    width = 0.8 / max(1, len(series))
    for j, (impl, values) in enumerate(series.items()):
        xs = [i - 0.4 + width * (j + 0.5) for i in range(len(groups))]
        ax.bar([x for x, v in zip(xs, values, strict=True) if v is not None],
               [v for v in values if v is not None], width, label=label(impl), color=IMPL_COLOR.get(impl))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=rotation, ha="right" if rotation else "center", fontsize=8)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.grid(axis="y", alpha=0.3)


def _series(rows: list[dict], keys: list, key_of, value) -> dict[str, list[float | None]]:
    table: dict[str, dict] = {}
    for r in rows:
        if ok(r):
            table.setdefault(r["impl"], {})[key_of(r)] = value(r)
    return {impl: [table[impl].get(k) for k in keys] for impl in impls_of(rows) if impl in table}


def _ceilings(ax, lines: list[tuple[float, str, str]], top: float) -> None:
    for y, text, style in lines:
        ax.axhline(y, color="black", linestyle=style, linewidth=1)
        ax.text(ax.get_xlim()[1], y, f" {text}", va="center", ha="left", fontsize=8)
    ax.set_ylim(0, max([top * 1.15] + [y * 1.15 for y, _, _ in lines]))  # room for the legend above the lines


def chart(data: dict, path: Path | str) -> bool:
    """Write the chart; False (with a message) when matplotlib is not installed or there is nothing to draw."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib is not installed, so no chart (pip install -e '.[bench]', or pip install "
              "matplotlib); the markdown is written anyway", file=sys.stderr)
        return False
    rows = data.get("rows", [])
    present = [s for s in SECTIONS if any(section_of(r) == s for r in rows)]
    if not present:
        print("report: no rows to chart", file=sys.stderr)
        return False
    fig, axes = plt.subplots(len(present), 1, figsize=(17, 4.8 * len(present)), squeeze=False)
    env = data.get("env", {})
    fig.suptitle(f"gemmgen {env.get('gemmgen_commit', '?')} on {env.get('gpu', '?')}, {env.get('date', '?')} "
                 "(kernel time, cold L2)", fontsize=12)
    compute = [(PEAK_TFLOPS, f"FP8 peak {PEAK_TFLOPS:.0f} (datasheet)", "--"),
               (PRACTICAL_TFLOPS, f"~{PRACTICAL_TFLOPS:.0f} practical", ":")]
    for ax, section in zip(axes[:, 0], present, strict=True):
        picked = [r for r in rows if section_of(r) == section]
        if section in ("prefill", "decode"):
            keys = list(by_shape(picked))
            labels = [f"{m}x{n}x{k}" for m, n, k in keys]
            field = "tflops" if section == "prefill" else "tbps"
            series = _series(picked, keys, shape_key, lambda r, f=field: r[f])
            _bars(ax, labels, series)
            top = max((v for s in series.values() for v in s if v is not None), default=1.0)
            if section == "prefill":
                ax.set_title("1. Dense prefill: kernel TFLOPS (higher is better)")
                ax.set_ylabel("TFLOPS")
                _ceilings(ax, compute, top)
            else:
                ax.set_title("2. Dense decode: TB/s of the FP8 problem's bytes (higher is better)")
                ax.set_ylabel("TB/s")
                _ceilings(ax, [(HBM_TBPS, f"HBM ~{HBM_TBPS} TB/s", "--")], top)
        elif section == "grouped":
            def key_of(r):
                return r.get("layout"), r.get("groups"), r.get("expected_m"), r["n"], r["k"]
            keys = list(dict.fromkeys(key_of(r) for r in picked))
            labels = [f"{lay[:6]} {g}x{e}\n{n}x{k}" for lay, g, e, n, k in keys]
            series = _series(picked, keys, key_of, lambda r: r["tflops"])
            _bars(ax, labels, series, rotation=0)
            ax.set_title("3. MoE grouped: kernel TFLOPS on valid rows (higher is better)")
            ax.set_ylabel("TFLOPS")
            _ceilings(ax, compute, max((v for s in series.values() for v in s if v is not None), default=1.0))
        elif section == "recipes":
            pairs = recipe_pairs(picked)
            labels = [f"{m}x{n}x{k}\n{title.split()[0]}" for title, (m, n, k), _, _ in pairs]
            series = {"gemmgen": [g["tflops"] if ok(g) else None for _, _, g, _ in pairs],
                      "peer": [p["tflops"] if ok(p) else None for _, _, _, p in pairs]}
            _bars(ax, labels, series, rotation=0)
            ax.set_title("5. Recipes: gemmgen e5m2 / tensor / channel against gemmgen e4m3 / cuBLASLt tensorwise / "
                         "cuBLASLt rowwise: kernel TFLOPS (higher is better)")
            ax.set_ylabel("TFLOPS")
            _ceilings(ax, compute, max((v for s in series.values() for v in s if v is not None), default=1.0))
        elif section == "bf16":
            keys = list(by_shape(picked))
            series = _series(picked, keys, shape_key, lambda r: r["tflops"])
            _bars(ax, [f"{m}x{n}x{k}" for m, n, k in keys], series)
            ax.set_title("6. BF16 dense: kernel TFLOPS (higher is better)")
            ax.set_ylabel("TFLOPS")
            _ceilings(ax, [(PEAK_TFLOPS / 2, f"BF16 peak {PEAK_TFLOPS / 2:.0f} (datasheet)", "--")],
                      max((v for s in series.values() for v in s if v is not None), default=1.0))
        elif section == "wgrad":
            cases = [r for r in picked if r["impl"] == "gemmgen"]
            labels = [f"{wgrad_case(r)}\nK {r['k']}" for r in cases]
            series = {"gemmgen": [r["tflops"] if ok(r) else None for r in cases],
                      "bar": [r.get("bar") for r in cases]}
            _bars(ax, labels, series, rotation=0)
            ax.set_title("7. Weight gradient (k-grouped: groups x M x N, K per group): kernel TFLOPS against "
                         "DeepGEMM's (bar; higher is better)")
            ax.set_ylabel("TFLOPS")
            _ceilings(ax, compute, max((v for s in series.values() for v in s if v is not None), default=1.0))
        else:
            def key_of(r):
                return r["m"], r["n"], r["k"], r.get("case")
            keys = list(dict.fromkeys(key_of(r) for r in picked))
            labels = [f"{m}x{n}x{k}\n{case}" for m, n, k, case in keys]
            series = _series([r for r in picked if r_ok(r)], keys, key_of, lambda r: r["us_per_call"])
            _bars(ax, labels, series, rotation=0)
            ax.set_title("4. Host: us per call in an enqueue loop (lower is better)")
            ax.set_ylabel("us per call")
            top = max((v for s in series.values() for v in s if v is not None), default=1.0)
            ax.set_ylim(0, top * 1.15)
        ax.legend(loc="upper left", fontsize=8, ncol=len(IMPL_ORDER))
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_report(json_path: Path | str, *, png: bool = True) -> tuple[Path, Path | None]:
    """bench.md (always) and bench.png (where matplotlib is importable) beside `json_path`."""
    json_path = Path(json_path)
    data = load(json_path)
    md_path, png_path = json_path.with_suffix(".md"), json_path.with_suffix(".png")
    drew = False
    if png:
        try:
            drew = chart(data, png_path)
        except Exception as exc:  # noqa: BLE001 - a chart failure must not cost the markdown
            print(f"report: the chart failed ({type(exc).__name__}: {exc}); the markdown is written anyway",
                  file=sys.stderr)
    md_path.write_text(markdown(data, png_path.name if drew else None))
    return md_path, png_path if drew else None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench_json", type=Path)
    ap.add_argument("--no-png", action="store_true", help="the markdown only")
    args = ap.parse_args(argv)
    if not args.bench_json.is_file():
        raise SystemExit(f"report: no such file: {args.bench_json}")
    md, png = write_report(args.bench_json, png=not args.no_png)
    print(f"wrote {md}" + (f" and {png}" if png else ""))


if __name__ == "__main__":
    main()
