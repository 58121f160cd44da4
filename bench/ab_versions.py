"""Interleaved A/B of this tree's kernels (dense FP8, bf16, FP8 wgrad, grouped) against an earlier commit's, in one
process on one GPU.

The earlier tree is imported as `gemmgen_before` from --before (bench/device_run.sh's `before` section makes it:
`git archive <commit> gemmgen` renamed, since the package imports itself only relatively). Each round times both
versions once (alternating which goes first); the median per version is reported, with the outputs compared.

    PYTHONPATH=. python bench/ab_versions.py --before .devrun/before --out ab.json 64x2112x7168 4096x7168x16384
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import env_info, kernel_seconds  # noqa: E402

import gemmgen  # noqa: E402


def _ab(calls: dict, outs: dict, flops: int, rounds: int, **fields) -> dict:
    """Time both versions in alternating order each round; medians as TFLOPS, and whether their outputs agree."""
    times: dict[str, list[float]] = {"before": [], "after": []}
    stamps: list[float] = []  # each round's start (unix s), to line the rounds up with a clock log
    for r in range(rounds):
        stamps.append(round(time.time(), 3))
        for version in (("before", "after") if r % 2 == 0 else ("after", "before")):
            times[version].append(kernel_seconds(calls[version])[0])
    torch.cuda.synchronize()
    med = {v: statistics.median(ts) for v, ts in times.items()}
    return {**fields, "rounds": rounds,
            "tflops": {v: flops / t / 1e12 for v, t in med.items()},
            "all_tflops": {v: [flops / t / 1e12 for t in ts] for v, ts in times.items()},
            "after_over_before": med["before"] / med["after"], "round_unix_s": stamps,
            "bitwise_equal": bool(torch.equal(outs["before"], outs["after"]))}


def ab_shape(before, m: int, n: int, k: int, rounds: int) -> dict:
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    outs = {v: torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for v in ("before", "after")}
    calls = {"before": lambda: before.fp8_gemm_nt((a, sa), (b, sb), outs["before"]),
             "after": lambda: gemmgen.fp8_gemm_nt((a, sa), (b, sb), outs["after"])}
    names = {"before": before.get_kernel(m, n, k, before.api.device_target(0)).name,
             "after": gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0)).name}
    return _ab(calls, outs, 2 * m * n * k, rounds, m=m, n=n, k=k, names=names)


def ab_bf16(before, m: int, n: int, k: int, rounds: int) -> dict:
    """bf16_gemm_nt: bf16 inputs, bf16 out."""
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    outs = {v: torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for v in ("before", "after")}
    calls = {"before": lambda: before.bf16_gemm_nt(a, b, outs["before"]),
             "after": lambda: gemmgen.bf16_gemm_nt(a, b, outs["after"])}
    return _ab(calls, outs, 2 * m * n * k, rounds, m=m, n=n, k=k, recipe="bf16")


def ab_scaled(before, m: int, n: int, k: int, rounds: int, recipe: str) -> dict:
    """fp8_gemm_nt with recipe="tensor" (one FP32 scale per operand) or "channel" (one per row of A and of B), bf16
    out."""
    cast = gemmgen.per_tensor_cast_to_fp8 if recipe == "tensor" else gemmgen.per_channel_cast_to_fp8
    a, sa = cast(torch.randn(m, k, device="cuda"))
    b, sb = cast(torch.randn(n, k, device="cuda"))
    outs = {v: torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for v in ("before", "after")}
    calls = {"before": lambda: before.fp8_gemm_nt((a, sa), (b, sb), outs["before"], recipe=recipe),
             "after": lambda: gemmgen.fp8_gemm_nt((a, sa), (b, sb), outs["after"], recipe=recipe)}
    return _ab(calls, outs, 2 * m * n * k, rounds, m=m, n=n, k=k, recipe=recipe)


def ab_wgrad(before, m: int, n: int, k: int, rounds: int) -> dict:
    """fp8_gemm_nt_wgrad with accumulate=False (out = A.B^T, fp32; 1x128 scales on both operands)."""
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
    b, sb = gemmgen.per_token_cast_to_fp8(torch.randn(n, k, device="cuda"))
    outs = {v: torch.empty(m, n, device="cuda", dtype=torch.float32) for v in ("before", "after")}
    calls = {"before": lambda: before.fp8_gemm_nt_wgrad((a, sa), (b, sb), outs["before"], accumulate=False),
             "after": lambda: gemmgen.fp8_gemm_nt_wgrad((a, sa), (b, sb), outs["after"], accumulate=False)}
    return _ab(calls, outs, 2 * m * n * k, rounds, m=m, n=n, k=k, recipe="wgrad")


def ab_grouped(before, groups: int, m: int, n: int, k: int, rounds: int, valid: int | None = None) -> dict:
    """The contiguous MoE grouped GEMM: `groups` experts of `m` rows each (128-aligned); the first `valid` rows of
    each valid (the rest padding, m_indices -1: tiles stored row by row), every row where `valid` is None."""
    valid = m if valid is None else valid
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(groups * m, k, device="cuda"))
    pairs = [gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda")) for _ in range(groups)]
    b, sb = torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])
    m_indices = torch.arange(groups, device="cuda", dtype=torch.int32).repeat_interleave(m)
    m_indices.view(groups, m)[:, valid:] = -1
    outs = {v: torch.zeros(groups * m, n, device="cuda", dtype=torch.bfloat16) for v in ("before", "after")}
    calls = {"before": lambda: before.m_grouped_fp8_gemm_nt_contiguous((a, sa), (b, sb), outs["before"], m_indices),
             "after": lambda: gemmgen.m_grouped_fp8_gemm_nt_contiguous((a, sa), (b, sb), outs["after"], m_indices)}
    return _ab(calls, outs, 2 * groups * valid * n * k, rounds, groups=groups, m=m, n=n, k=k, valid=valid)


def ab_masked(before, groups: int, m: int, n: int, k: int, rounds: int, valid: int | None = None) -> dict:
    """The masked MoE grouped GEMM: `groups` experts of M_max = `m` rows, masked_m[g] = valid - 8 * g (as decoding's
    ragged counts; valid = m where None), expected_m = valid (as the bench passes its expected rows)."""
    valid = m if valid is None else valid
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(groups, m, k, device="cuda"))
    pairs = [gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda")) for _ in range(groups)]
    b, sb = torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])
    masked_m = torch.tensor([max(valid - 8 * g, 0) for g in range(groups)], device="cuda", dtype=torch.int32)
    outs = {v: torch.zeros(groups, m, n, device="cuda", dtype=torch.bfloat16) for v in ("before", "after")}
    calls = {"before": lambda: before.m_grouped_fp8_gemm_nt_masked((a, sa), (b, sb), outs["before"], masked_m, valid),
             "after": lambda: gemmgen.m_grouped_fp8_gemm_nt_masked((a, sa), (b, sb), outs["after"], masked_m, valid)}
    return _ab(calls, outs, 2 * int(masked_m.sum()) * n * k, rounds, groups=groups, m=m, n=n, k=k, layout="masked",
               valid=valid)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("shapes", nargs="+", help="MxNxK, gG:MxNxK (contiguous grouped), mG:MxNxK (masked), "
                                               "b:MxNxK (bf16), t:MxNxK (fp8 per-tensor), c:MxNxK (per-channel) "
                                               "or w:MxNxK (fp8 wgrad); grouped ones may end @V: V valid rows "
                                               "per group (masked: V - 8g) ...")
    ap.add_argument("--before", type=Path, required=True, help="folder holding the gemmgen_before package")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    for shape in args.shapes:  # checked before the earlier tree is imported
        grouped, _, dims = shape.rpartition(":")
        if not re.fullmatch(r"\d+x\d+x\d+" + (r"(@\d+)?" if grouped[:1] in ("g", "m") else ""), dims) \
                or not re.fullmatch(r"|b|t|c|w|[gm]\d+", grouped):
            ap.error(f"shape {shape!r}: expected MxNxK with an optional b:, t:, c:, w:, gG: or mG: prefix "
                     "(grouped: an optional @V suffix)")
    sys.path.insert(0, str(args.before.resolve()))
    import gemmgen_before  # type: ignore[import-not-found]

    results = []
    # MxNxK (dense), gG:MxNxK (contiguous grouped, G experts of M rows), mG:MxNxK (masked, G experts of M_max rows),
    # b:MxNxK (bf16 dense), t:MxNxK (fp8 per-tensor scales), c:MxNxK (per-channel scales) or w:MxNxK (fp8 weight
    # gradient, out fp32)
    for shape in args.shapes:
        grouped, _, dims = shape.rpartition(":")
        dims, _, valid_rows = dims.partition("@")
        valid = int(valid_rows) if valid_rows else None
        m, n, k = (int(v) for v in dims.split("x"))
        if valid is not None and not 0 < valid <= m:
            raise SystemExit(f"shape {shape!r}: @V must be 1..{m} valid rows per group")
        if grouped in ("b", "w"):
            res = (ab_bf16 if grouped == "b" else ab_wgrad)(gemmgen_before, m, n, k, args.rounds)
        elif grouped in ("t", "c"):
            res = ab_scaled(gemmgen_before, m, n, k, args.rounds, "tensor" if grouped == "t" else "channel")
        elif grouped.startswith("m"):
            res = ab_masked(gemmgen_before, int(grouped[1:]), m, n, k, args.rounds, valid)
        elif grouped:
            res = ab_grouped(gemmgen_before, int(grouped[1:]), m, n, k, args.rounds, valid)
        else:
            res = ab_shape(gemmgen_before, m, n, k, args.rounds)
        results.append(res)
        print(f"{shape}: before {res['tflops']['before']:.0f} after {res['tflops']['after']:.0f} TFLOPS "
              f"(x{res['after_over_before']:.3f}, bitwise equal {res['bitwise_equal']})", flush=True)
    args.out.write_text(json.dumps({"env": env_info(__doc__ or ""), "rows": results}, indent=1))


if __name__ == "__main__":
    main()
