"""Grouped cases: this tree, the before tree and DeepGEMM, rotated rounds (kernel time, every kernel counted)."""
import json, statistics, sys
from pathlib import Path
sys.path.insert(0, "bench"); sys.path.insert(0, str(Path(sys.argv[1]).resolve()))
import torch, gemmgen, gemmgen_before as before
import bench_gemm as bg, deepgemm_peer as dp
from common import rotated_kernel_us, env_info
dp.load(Path(sys.argv[2]))
rounds = int(sys.argv[3]); out = {"env": env_info("rotated rounds, kernel time"), "rows": []}
for m, n, k in [(4096, 32768, 512)]:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16); w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    a, sa = gemmgen.per_token_cast_to_fp8(x); b, sb = gemmgen.per_block_cast_to_fp8(w)
    outs = {v: torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16) for v in ("after", "before", "deepgemm")}
    calls = {"after": lambda: gemmgen.fp8_gemm_nt((a, sa), (b, sb), outs["after"]),
             "before": lambda: before.fp8_gemm_nt((a, sa), (b, sb), outs["before"]),
             "deepgemm": dp.dense(a, sa, b, sb, outs["deepgemm"])}
    try:
        calls["deepgemm"]()
    except Exception as exc:  # DeepGEMM's JIT failing must not lose the A/B
        print("deepgemm failed:", exc); calls.pop("deepgemm"); outs.pop("deepgemm")
    for f in calls.values(): f()
    torch.cuda.synchronize()
    ref = x.double() @ w.double().t()
    diffs = {v: float(1 - 2 * (o.double() * ref).sum() / (o.double() ** 2 + ref ** 2).sum()) for v, o in outs.items()}
    times, seen = rotated_kernel_us(calls, rounds)
    med = {v: statistics.median(t) for v, t in times.items()}
    row = {"case": ["dense", m, n, k], "us": med, "all_us": times, "kernels": seen, "calc_diff": diffs,
           "tflops": {v: 2 * m * n * k / t / 1e6 for v, t in med.items()},
           "after_over_before": med["before"] / med["after"], "after_over_deepgemm": med.get("deepgemm", 0) / med["after"]}
    out["rows"].append(row)
    print((m, n, k), {v: round(t, 2) for v, t in med.items()}, "after/before x%.3f" % row["after_over_before"],
          "after/deepgemm x%.3f" % row["after_over_deepgemm"], {v: "%.1e" % d for v, d in diffs.items()}, seen["after"], flush=True)
for case in [("masked", 1, 1024, 4096, 7168), ("masked", 2, 512, 7168, 2048), ("contiguous", 4, 8192, 4096, 7168)]:
    c = bg.grouped_case(*case)
    ops = ((c.a, c.sa), (c.b, c.sb))
    outs = {k: torch.full_like(c.out, float("nan")) for k in ("after", "before", "deepgemm")}
    if c.layout == "contiguous":
        calls = {"after": lambda: gemmgen.m_grouped_fp8_gemm_nt_contiguous(*ops, outs["after"], c.grouped_layout),
                 "before": lambda: before.m_grouped_fp8_gemm_nt_contiguous(*ops, outs["before"], c.grouped_layout),
                 "deepgemm": dp.contiguous(c.a, c.sa, c.b, c.sb, outs["deepgemm"], c.grouped_layout)}
    else:
        calls = {"after": lambda: gemmgen.m_grouped_fp8_gemm_nt_masked(*ops, outs["after"], c.grouped_layout, c.expected),
                 "before": lambda: before.m_grouped_fp8_gemm_nt_masked(*ops, outs["before"], c.grouped_layout, c.expected),
                 "deepgemm": dp.masked(c.a, c.sa, c.b, c.sb, outs["deepgemm"], c.grouped_layout, c.expected)}
    try:
        calls["deepgemm"]()
    except Exception as exc:  # DeepGEMM's JIT failing must not lose the A/B
        print("deepgemm failed:", exc); calls.pop("deepgemm"); outs.pop("deepgemm")
    for f in calls.values(): f()
    torch.cuda.synchronize()
    diffs = {}
    for k in outs:
        parts = [(c.rows_of(outs[k], g, s).double(), c.rows_of(c.x, g, s).double() @ c.w[g].double().t()) for g, s in c.segments]
        got = torch.cat([p[0].flatten() for p in parts]); ref = torch.cat([p[1].flatten() for p in parts])
        diffs[k] = float(1 - 2 * (got * ref).sum() / (got * got + ref * ref).sum())
    times, seen = rotated_kernel_us(calls, rounds)
    flops = 2 * sum(s.stop - s.start for _, s in c.segments) * c.b.shape[1] * c.b.shape[2]
    med = {k: statistics.median(v) for k, v in times.items()}
    row = {"case": list(case), "us": med, "all_us": times, "kernels": seen, "calc_diff": diffs,
           "tflops": {k: flops / v / 1e6 for k, v in med.items()},
           "after_over_before": med["before"] / med["after"], "after_over_deepgemm": med.get("deepgemm", 0) / med["after"]}
    out["rows"].append(row)
    print(case, {k: round(v, 2) for k, v in med.items()}, "after/before x%.3f" % row["after_over_before"],
          "after/deepgemm x%.3f" % row["after_over_deepgemm"], {k: "%.1e" % v for k, v in diffs.items()},
          seen["after"], flush=True)
Path(sys.argv[4]).write_text(json.dumps(out, indent=1))
