"""Config sweep of the grouped cases (kernel TFLOPS on valid rows, the bench's method), with the dense kernel of
the same config on the same rows beside each: the difference is what the grouped scheduler and epilogue cost.

    PYTHONPATH=. python bench/sweep_grouped.py --out sweep.json contiguous:4:8192:4096:7168 masked:1:1024:4096:7168
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gemm import grouped_case  # noqa: E402
from common import kernel_seconds  # noqa: E402

import gemmgen  # noqa: E402
from gemmgen.errors import IllegalConfigError  # noqa: E402
from gemmgen.ir import parse_overrides  # noqa: E402

CONFIGS = [None] + [{"block_m": bm, "block_n": bn, "cluster": c} for bm, bn, c in (
    (128, 128, 1), (128, 128, 2), (128, 112, 1), (128, 144, 1), (128, 160, 1), (128, 160, 2), (128, 192, 1),
    (128, 192, 2), (128, 64, 2), (64, 128, 1), (64, 128, 2), (64, 192, 1))]


def sweep(spec: str, configs: list | None = None) -> list[dict]:
    layout, groups, expected, n, k = spec.split(":")
    case = grouped_case(layout, int(groups), int(expected), int(n), int(k))
    valid = sum(case.sizes)
    flops = 2 * valid * int(n) * int(k)
    dense_a = case.a if layout == "contiguous" else case.a.view(-1, int(k))
    dense_sa = case.sa if layout == "contiguous" else gemmgen.tma_aligned_scales(case.sa.reshape(-1, case.sa.shape[-1]))
    dense_out = torch.empty(dense_a.shape[0], int(n), device="cuda", dtype=torch.bfloat16)
    rows = []
    if layout == "contiguous":  # the dense kernel the heuristic picks for these rows (256-row tiles are legal there)
        dense = lambda: gemmgen.fp8_gemm_nt((dense_a, dense_sa), (case.b[0], case.sb[0]), dense_out)  # noqa: E731
        dsecs = kernel_seconds(dense)[0]
        rows.append({"case": spec, "config": "dense default", "name": gemmgen.get_kernel(
            dense_a.shape[0], int(n), int(k), gemmgen.api.device_target(0)).name,
            "dense_tflops": 2 * dense_a.shape[0] * int(n) * int(k) / dsecs / 1e12})
        print(f"  {spec} dense default {rows[-1]['name']}: {rows[-1]['dense_tflops']:.0f}", flush=True)
    for cfg in configs if configs is not None else CONFIGS:
        try:
            name = case.kernel_name(cfg)
        except (IllegalConfigError, ValueError):
            continue
        secs = kernel_seconds(lambda cfg=cfg: case.call(cfg))[0]
        rec = {"case": spec, "config": cfg or "default", "name": name, "tflops": flops / secs / 1e12}
        if layout == "contiguous":  # the same rows through the dense kernel of this config (one expert's B)
            dcfg = cfg or {f: getattr(gemmgen.get_kernel(case.m_rows, int(n), int(k), gemmgen.api.device_target(0),
                                                         None, kind=gemmgen.GemmKind.M_GROUPED_CONTIGUOUS,
                                                         groups=int(groups)).config, f)
                           for f in ("block_m", "block_n", "cluster")}
            dense = lambda dcfg=dcfg: gemmgen.fp8_gemm_nt((dense_a, dense_sa), (case.b[0], case.sb[0]), dense_out,  # noqa: E731
                                                           config=dcfg)
            dsecs = kernel_seconds(dense)[0]
            rec["dense_same_config_tflops"] = 2 * dense_a.shape[0] * int(n) * int(k) / dsecs / 1e12
            rec["dense_us"], rec["grouped_us"] = dsecs * 1e6, secs * 1e6
        rows.append(rec)
        print(f"  {spec} {str(cfg or 'default'):50s} {rec['tflops']:6.0f}"
              + (f"  dense same config {rec['dense_same_config_tflops']:6.0f}" if "dense_us" in rec else ""),
              flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="+", help="layout:groups:expected:N:K ...")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--config", action="append", default=None, metavar="K=V,K=V",
                    help="time these configs (and the default) instead of the built-in list; repeatable")
    args = ap.parse_args()
    configs = None if args.config is None else [None] + [
        parse_overrides(c.split(",")) for c in args.config]
    rows = [r for spec in args.cases for r in sweep(spec, configs)]
    args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
