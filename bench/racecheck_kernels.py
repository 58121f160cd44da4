"""One kernel of every kind x scale load path (TMA, gathered) x split flavour, each launched once and checked, for
compute-sanitizer's racecheck (shared-memory hazards) to run over; then the report summed per kernel.

    compute-sanitizer --tool racecheck --racecheck-report all --print-limit 100000 \\
        python bench/racecheck_kernels.py > racecheck.log 2>&1
    python bench/racecheck_kernels.py --summarize racecheck.log --out racecheck.json   # exit 1 on any hazard

The kernels are small (racecheck instruments every shared-memory access) and each call's output is compared with the
float64 product of its dequantized inputs, so a kernel racecheck runs is also seen to compute the right thing there.
`--list` prints the cases with the kernel each selects (no GPU needed: the H100 preset).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

CLUSTER_SPLIT = {"block_m": 64, "block_n": 64, "k_splits": 2, "split_global": 0}
GLOBAL_SPLIT = {"block_m": 128, "block_n": 64, "k_splits": 2, "split_global": 1}
SWAPPED_SPLIT = {"swap_ab": 1, "k_splits": 4, "split_global": 1}
PINGPONG = {"pingpong": 1, "block_m": 128, "block_n": 128, "num_sms": 4}


@dataclass(frozen=True)
class Case:
    label: str  # kind / scale load path / split flavour
    call: str  # which public call
    shape: tuple[int, int, int]  # M, N, K (grouped: see _run)
    config: dict[str, int] | None = None
    sa: str = "tma"  # "tma": per_token_cast_to_fp8's layout; "gather": row-major (the producer gathers it)
    sb: str = "tma"  # wgrad: "tma" N-major, "gather" row-major


# Shapes whose rings wrap (more k-blocks per tile than stages) and whose CTAs take several tiles, so every slot is
# refilled after it was read: a slot written once per launch cannot show a write-after-read hazard.
CASES = [
    Case("dense block / SA tma / no split", "dense", (256, 1024, 4096)),
    Case("dense block / SA gather / no split", "dense", (256, 1024, 4096), sa="gather"),
    Case("dense block / SA tma / cluster split", "dense", (512, 2048, 8192), CLUSTER_SPLIT),
    Case("dense block / SA gather / cluster split", "dense", (512, 2048, 8192), CLUSTER_SPLIT, sa="gather"),
    Case("dense block / SA tma / global split", "dense", (520, 1024, 4096), GLOBAL_SPLIT),
    Case("dense block / SA gather / global split", "dense", (520, 1024, 4096), GLOBAL_SPLIT, sa="gather"),
    Case("dense block / SA always gathered (decode) / global split", "dense", (64, 2112, 7168)),
    Case("dense block swapped / SA tma / global split", "dense", (8, 2112, 7168), SWAPPED_SPLIT),
    Case("dense block swapped / SA gather / global split", "dense", (8, 2112, 7168), SWAPPED_SPLIT, sa="gather"),
    Case("dense block multicast / SA tma / no split", "dense", (2048, 2048, 4096), {"cluster": 2}),
    Case("dense block fp32 accumulate / SA tma / no split", "dense_acc", (256, 1024, 4096)),
    Case("dense tensor recipe / epilogue scales / no split", "tensor", (256, 1024, 4096)),
    Case("dense channel recipe / epilogue scales / no split", "channel", (256, 1024, 4096)),
    Case("dense bf16 / no scales / no split", "bf16", (256, 1024, 4096)),
    Case("wgrad / SA tma, SB tma / no split", "wgrad", (256, 1024, 4096)),
    Case("wgrad / SA gather, SB tma / no split", "wgrad", (256, 1024, 4096), sa="gather"),
    Case("wgrad / SA tma, SB gather / no split", "wgrad", (256, 1024, 4096), sb="gather"),
    Case("wgrad / SA gather, SB gather / no split", "wgrad", (256, 1024, 4096), sa="gather", sb="gather"),
    # the production tiles: column B scales loaded at the issue (128x128) and after the wait (128x160)
    Case("wgrad 128x128 / SA tma, SB tma / no split", "wgrad", (512, 2048, 4096), {"block_m": 128, "block_n": 128}),
    Case("wgrad 128x160 / SA tma, SB tma / no split", "wgrad", (512, 2080, 4096),
         {"block_m": 128, "block_n": 160, "stages": 3}),
    Case("k-grouped 128x144 / SA tma, SB tma / no split", "k_grouped", (256, 1152, 1024),
         {"block_m": 128, "block_n": 144}),
    Case("k-grouped / SA tma, SB tma / no split", "k_grouped", (128, 512, 1024)),
    Case("k-grouped / SA gather, SB gather / no split", "k_grouped", (128, 512, 1024), sa="gather", sb="gather"),
    Case("contiguous block / SA tma / no split", "contiguous", (512, 1024, 4096)),
    Case("contiguous block / SA gather / no split", "contiguous", (512, 1024, 4096), sa="gather"),
    Case("masked block / SA tma / no split", "masked", (192, 1024, 4096)),
    Case("masked block / SA gather / no split", "masked", (192, 1024, 4096), sa="gather"),
    Case("contiguous bf16 / no scales / no split", "contiguous_bf16", (512, 1024, 4096)),
    Case("masked bf16 / no scales / no split", "masked_bf16", (192, 1024, 4096)),
    # the ping-pong consumer on a 4-CTA grid: each CTA takes 4 tiles, its two math warpgroups two each in turn
    Case("dense bf16 ping-pong / no scales / no split", "bf16", (256, 1024, 4096), PINGPONG),
    Case("dense channel ping-pong multicast / epilogue scales / no split", "channel", (256, 1024, 4096),
         {**PINGPONG, "cluster": 2}),
    Case("contiguous bf16 ping-pong / no scales / no split", "contiguous_bf16", (512, 1024, 4096), PINGPONG),
    # B multicast to an M-neighbour: an even M-block count, and an odd one (the last pair's second tile past M)
    Case("dense bf16 B multicast / no scales / no split", "bf16", (256, 1024, 4096),
         {"cluster": 2, "multicast_b": 1, "block_m": 128, "block_n": 128, "num_sms": 4}),
    Case("dense block B multicast / SA tma / no split", "dense", (384, 1024, 4096),
         {"cluster": 2, "multicast_b": 1, "block_m": 128, "block_n": 128, "num_sms": 4}),
    Case("wgrad ping-pong / SA tma, SB tma / no split", "wgrad", (256, 1024, 4096),
         {**PINGPONG, "block_m": 64, "acc_sets": 1}),
    Case("k-grouped ping-pong / SA tma, SB tma / no split", "k_grouped", (128, 512, 1024),
         {**PINGPONG, "block_m": 64, "acc_sets": 1}),
]


def _layout(s, how: str):
    return s.contiguous() if how == "gather" else s  # row-major: not the TMA layout, so gathered


def _close(out, ref) -> bool:
    import torch

    valid = ~ref.isnan()
    err = (out.double() - ref).abs()[valid]
    return bool(not out[valid].isnan().any() and (err <= 2**-7 * ref[valid].abs() + 2**-8 * ref[valid].abs().max()
                                                  ).all()) if valid.any() else bool(torch.isnan(out).all())


def _run(case: Case) -> tuple[str, bool]:
    """Launch the case's kernel once on fresh inputs: (kernel name, output close to float64)."""
    import torch

    import gemmgen
    from gemmgen.ir import DType, GemmKind, ScaleRecipe
    from gemmgen.quant import dequantize_a, dequantize_b

    m, n, k = case.shape
    dev = "cuda"
    target = gemmgen.api.device_target(0)
    cfg = case.config
    if case.call in ("dense", "dense_acc"):
        (a, sa), (b, sb) = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device=dev)), \
            gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device=dev))
        ref = dequantize_a(a, sa) @ dequantize_b(b, sb).t()
        acc = case.call == "dense_acc"
        out = torch.zeros(m, n, device=dev) if acc else torch.full((m, n), float("nan"), device=dev,
                                                                    dtype=torch.bfloat16)
        gemmgen.fp8_gemm_nt((a, _layout(sa, case.sa)), (b, sb), out, accumulate=acc, config=cfg)
        name = gemmgen.get_kernel(m, n, k, target, cfg, out_dtype=DType.FP32 if acc else DType.BF16,
                                  accumulate=acc).name
    elif case.call in ("tensor", "channel"):
        cast = gemmgen.per_tensor_cast_to_fp8 if case.call == "tensor" else gemmgen.per_channel_cast_to_fp8
        (a, sa), (b, sb) = cast(torch.randn(m, k, device=dev)), cast(torch.randn(n, k, device=dev))
        ref = (a.double() * (sa.double() if sa.dim() == 0 else sa.double()[:, None])) @ (
            b.double() * (sb.double() if sb.dim() == 0 else sb.double()[:, None])).t()
        out = torch.full((m, n), float("nan"), device=dev, dtype=torch.bfloat16)
        gemmgen.fp8_gemm_nt((a, sa), (b, sb), out, config=cfg)
        name = gemmgen.get_kernel(m, n, k, target, cfg, scales=ScaleRecipe(case.call)).name
    elif case.call == "bf16":
        x, w = torch.randn(m, k, device=dev, dtype=torch.bfloat16), torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        ref = x.double() @ w.double().t()
        out = torch.full((m, n), float("nan"), device=dev, dtype=torch.bfloat16)
        gemmgen.bf16_gemm_nt(x, w, out, config=cfg)
        name = gemmgen.get_kernel(m, n, k, target, cfg, a_dtype=DType.BF16, b_dtype=DType.BF16,
                                  scales=ScaleRecipe.NONE).name
    elif case.call == "wgrad":
        (a, sa), (b, sb) = (gemmgen.per_token_cast_to_fp8(torch.randn(r, k, device=dev)) for r in (m, n))
        ref = dequantize_a(a, sa) @ dequantize_a(b, sb).t()
        out = torch.zeros(m, n, device=dev)
        gemmgen.fp8_gemm_nt_wgrad((a, _layout(sa, case.sa)), (b, _layout(sb, case.sb)), out, config=cfg)
        name = gemmgen.get_kernel(m, n, k, target, cfg, out_dtype=DType.FP32, accumulate=True,
                                  scales=ScaleRecipe.A1x128_B1x128).name
    elif case.call == "k_grouped":
        ks = [k, 0, 2 * k]
        (a, sa), (b, sb) = (gemmgen.per_token_cast_to_fp8(torch.randn(r, sum(ks), device=dev)) for r in (m, n))
        out = torch.zeros(len(ks), m, n, device=dev)
        ref = torch.zeros(len(ks), m, n, dtype=torch.float64, device=dev)
        k0 = 0
        for g, kg in enumerate(ks):
            c, s = slice(k0, k0 + kg), slice(k0 // 128, (k0 + kg) // 128)
            ref[g] = dequantize_a(a[:, c], sa[:, s]) @ dequantize_a(b[:, c], sb[:, s]).t()
            k0 += kg
        gemmgen.k_grouped_fp8_gemm_nt_wgrad((a, _layout(sa, case.sa)), (b, _layout(sb, case.sb)), out, ks,
                                            config=cfg)
        expected_k = max(128, round(sum(ks) / len(ks) / 128) * 128)
        name = gemmgen.get_kernel(m, n, expected_k, target, cfg, kind=GemmKind.K_GROUPED, groups=len(ks),
                                  out_dtype=DType.FP32, accumulate=True, scales=ScaleRecipe.A1x128_B1x128).name
    elif case.call in ("contiguous", "contiguous_bf16"):
        counts = [m // 2, 0, m // 2 + 3]
        layout = gemmgen.contiguous_layout(counts, device=dev)
        x = layout.scatter(torch.randn(sum(counts), k, device=dev))
        w = torch.randn(len(counts), n, k, device=dev)
        out = torch.full((layout.m_total, n), float("nan"), device=dev, dtype=torch.bfloat16)
        ref = torch.full((layout.m_total, n), float("nan"), device=dev, dtype=torch.float64)
        idx = layout.m_indices.long()
        if case.call == "contiguous":
            (a, sa), (b, sb) = gemmgen.per_token_cast_to_fp8(x), gemmgen.per_block_cast_to_fp8(w)
            xd = dequantize_a(a, sa)
            for g in range(len(counts)):
                ref[idx == g] = xd[idx == g] @ dequantize_b(b[g], sb[g]).t()
            gemmgen.m_grouped_fp8_gemm_nt_contiguous((a, _layout(sa, case.sa)), (b, sb), out, layout.m_indices)
            kw = {}
        else:
            xb, wb = x.to(torch.bfloat16), w.to(torch.bfloat16)
            for g in range(len(counts)):
                ref[idx == g] = xb[idx == g].double() @ wb[g].double().t()
            gemmgen.m_grouped_bf16_gemm_nt_contiguous(xb, wb, out, layout.m_indices, config=cfg)
            kw = {"a_dtype": DType.BF16, "b_dtype": DType.BF16, "scales": ScaleRecipe.NONE}
        name = gemmgen.get_kernel(layout.m_total, n, k, target, cfg, kind=GemmKind.M_GROUPED_CONTIGUOUS,
                                  groups=len(counts), **kw).name
    else:  # masked, masked_bf16
        groups, masked = 3, [m, 0, m // 3]
        x, w = torch.randn(groups, m, k, device=dev), torch.randn(groups, n, k, device=dev)
        out = torch.full((groups, m, n), float("nan"), device=dev, dtype=torch.bfloat16)
        ref = torch.full((groups, m, n), float("nan"), device=dev, dtype=torch.float64)
        counts = torch.tensor(masked, dtype=torch.int32, device=dev)
        if case.call == "masked":
            (a, sa), (b, sb) = gemmgen.per_token_cast_to_fp8(x), gemmgen.per_block_cast_to_fp8(w)
            for g, r in enumerate(masked):
                ref[g, :r] = dequantize_a(a[g, :r], sa[g, :r]) @ dequantize_b(b[g], sb[g]).t()
            gemmgen.m_grouped_fp8_gemm_nt_masked((a, _layout(sa, case.sa)), (b, sb), out, counts, expected_m=m)
            kw = {}
        else:
            xb, wb = x.to(torch.bfloat16), w.to(torch.bfloat16)
            for g, r in enumerate(masked):
                ref[g, :r] = xb[g, :r].double() @ wb[g].double().t()
            gemmgen.m_grouped_bf16_gemm_nt_masked(xb, wb, out, counts, expected_m=m)
            kw = {"a_dtype": DType.BF16, "b_dtype": DType.BF16, "scales": ScaleRecipe.NONE}
        name = gemmgen.get_kernel(m, n, k, target, kind=GemmKind.M_GROUPED_MASKED, groups=groups, **kw).name
    torch.cuda.synchronize()
    return name, _close(out, ref)


HAZARD = re.compile(r"Error: Race reported between (\w+) access at (\S+?)\(.*? in (\S+?)\.cu:(\d+)")
AND = re.compile(r"and (\w+) access at (\S+?)\(.*? in (\S+?)\.cu:(\d+) \[(\d+) hazards\]")


def summarize(log: str) -> dict[str, dict[str, object]]:
    """racecheck's report per kernel: its errors (reported pairs), the hazards they count, and the access pairs."""
    kernels: dict[str, dict[str, object]] = {}
    current = None
    for line in log.splitlines():
        if (hit := HAZARD.search(line)) is not None:
            current = kernels.setdefault(hit.group(3), {"errors": 0, "hazards": 0, "pairs": []})
            current["errors"] += 1  # type: ignore[operator]
            first = f"{hit.group(1)} {hit.group(2)} :{hit.group(4)}"
        elif current is not None and (hit := AND.search(line)) is not None:
            current["hazards"] += int(hit.group(5))  # type: ignore[operator]
            pair = f"{first} / {hit.group(1)} {hit.group(2)} :{hit.group(4)}"
            if pair not in current["pairs"]:  # type: ignore[operator]
                current["pairs"].append(pair)  # type: ignore[union-attr]
    return kernels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--summarize", type=Path, help="a racecheck log of this script: the table, exit 1 on hazards")
    parser.add_argument("--ran", type=Path, help="with --summarize: the JSON this script wrote while it ran")
    parser.add_argument("--out", type=Path, help="write the cases (or the summary) as JSON here")
    parser.add_argument("--list", action="store_true", help="the cases and their kernels on the H100 preset")
    parser.add_argument("--only", default="", metavar="TEXT", help="run only the cases whose label contains TEXT")
    args = parser.parse_args()
    if args.summarize:
        report = summarize(args.summarize.read_text(errors="replace"))
        ran = json.loads(args.ran.read_text()) if args.ran else []
        rows = ran or [{"label": "(all)", "kernel": k, "ok": None} for k in report]
        for row in rows:
            found = report.get(row["kernel"], {"errors": 0, "hazards": 0, "pairs": []})
            row.update(found)
            print(f"{row['label']:<58} {row['kernel']:<84} errors {found['errors']:>4} hazards {found['hazards']:>8}"
                  f"  output {'ok' if row['ok'] else 'WRONG' if row['ok'] is False else '?'}")
        missing = [k for k in report if k not in {r["kernel"] for r in rows}]
        for k in missing:
            print(f"(a kernel not in the cases) {k}: errors {report[k]['errors']}")
        if args.out:
            args.out.write_text(json.dumps({"rows": rows, "other_kernels": {k: report[k] for k in missing}}, indent=1))
        bad = sum(int(r["errors"]) for r in rows) + sum(int(report[k]["errors"]) for k in missing)
        wrong = sum(r["ok"] is False for r in rows)
        print(f"{len(rows)} kernels: {bad} racecheck errors, {wrong} wrong outputs")
        sys.exit(1 if bad or wrong else 0)
    if args.list:
        import gemmgen
        from gemmgen.ir import preset

        for case in CASES:
            if case.call == "dense":
                print(case.label, gemmgen.get_kernel(*case.shape, preset("h100"), case.config).name)
            else:
                print(case.label, case.call, case.shape)
        return
    ran = []
    for case in (c for c in CASES if args.only in c.label):
        name, ok = _run(case)
        print(f"{case.label}: {name} {'ok' if ok else 'WRONG'}", flush=True)
        ran.append({"label": case.label, "kernel": name, "ok": ok})
    if args.out:
        args.out.write_text(json.dumps(ran, indent=1))


if __name__ == "__main__":
    main()
