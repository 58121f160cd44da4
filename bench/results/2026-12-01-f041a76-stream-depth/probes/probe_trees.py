"""Probe: this tree's dense block-recipe kernel against variant trees (gemmgen_<name> packages under .devrun/pv/<name>),
and this tree's per-tensor recipe on the same shape, interleaved in rotated order, 7 rounds, kernel time (bench/common)."""
import importlib, json, statistics, sys, time
from pathlib import Path
import torch
sys.path.insert(0, "bench")
from common import env_info, kernel_seconds
import gemmgen

variants = sys.argv[2].split(",") if len(sys.argv) > 2 else []
out = Path(sys.argv[1])
mods = {"main": gemmgen}
for v in variants:
    sys.path.insert(0, f".devrun/pv/{v}")
    mods[v] = importlib.import_module(f"gemmgen_{v}")
shapes = sys.argv[3].split(",")
rows = []
for shape in shapes:
    m, n, k = (int(x) for x in shape.split("x"))
    a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
    b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    at, sat = gemmgen.per_tensor_cast_to_fp8(torch.randn(m, k, device="cuda"))
    bt, sbt = gemmgen.per_tensor_cast_to_fp8(torch.randn(n, k, device="cuda"))
    outs = {name: torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for name in list(mods) + ["tensor"]}
    calls = {name: (lambda mod=mod, o=outs[name]: mod.fp8_gemm_nt((a, sa), (b, sb), o)) for name, mod in mods.items()}
    calls["tensor"] = lambda: gemmgen.fp8_gemm_nt((at, sat), (bt, sbt), outs["tensor"], recipe="tensor")
    names = list(calls)
    times = {nm: [] for nm in names}
    for r in range(7):
        order = names[r % len(names):] + names[:r % len(names)]
        for nm in order:
            times[nm].append(kernel_seconds(calls[nm])[0] * 1e6)
    med = {nm: statistics.median(t) for nm, t in times.items()}
    row = {"shape": shape, "us": med, "all_us": times,
           "kernel": gemmgen.get_kernel(m, n, k, gemmgen.api.device_target(0)).name,
           "ratio_main_over": {nm: med["main"] / med[nm] for nm in names}}
    rows.append(row)
    print(shape, " ".join(f"{nm} {med[nm]:.2f}" for nm in names), "| main/x", " ".join(f"{nm} {row['ratio_main_over'][nm]:.3f}" for nm in names), flush=True)
out.write_text(json.dumps({"env": env_info(__doc__), "rows": rows}, indent=1))
