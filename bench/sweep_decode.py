"""Decode-regime sweep (one M block: M <= 64, or <= 128 with --block-m 128): kernel time of every legal
(block_n, k_splits) for the (N, K) pairs of the decode table, against the default config; the data select_config's
decode rule is checked against. With `--a-rows`, each candidate runs with A slots of only the rows M has
(GemmConfig.a_rows, the fewest of select_config.STREAM_A_ROWS), and with `--stages`, at each stage cap (the deepest
legal ring up to each).

    PYTHONPATH=. python bench/sweep_decode.py --out sweep_decode.json --m 1 32 64 [--a-rows] [--stages 16 32]
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import kernel_seconds  # type: ignore[import-not-found]  # noqa: E402

import gemmgen  # noqa: E402
from gemmgen.errors import IllegalConfigError  # noqa: E402
from gemmgen.legality import check  # noqa: E402
from gemmgen.passes.select_config import stream_a_rows  # noqa: E402

NK = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048), (576, 7168)]
BNS = [32, 64, 96, 128, 160, 192]
SPLITS = [1, 2, 3, 4]  # 6-8 never won (sweep of 2026-11-30, bench/NOTES.md v0.3)


def configs(k: int, m: int = 1, a_rows: bool = False, caps: tuple[int, ...] = (),
            block_ms: tuple[int, ...] = (64,), bns: tuple[int, ...] = tuple(BNS)) -> list[dict[str, int]]:
    """Every (block_m, block_n, k_splits) (with a_rows = the decode rows for M, and x each stage cap, where asked)."""
    kb = -(-k // 128)
    base = [{"block_m": bm, "block_n": bn, "k_splits": s} for bm in block_ms for bn in bns for s in SPLITS
            if kb % s == 0]
    rows = [stream_a_rows(m)] if a_rows else [None]
    out = []
    for cfg in base:
        for r in rows:
            with_rows = cfg if r is None else {**cfg, "a_rows": r}
            for cap in caps or (None,):
                stages = None if cap is None else deepest_stages(m, k, with_rows, cap)
                if cap is None or stages is not None:
                    out.append(with_rows if stages is None else {**with_rows, "stages": stages})
    return [dict(t) for t in dict.fromkeys(tuple(sorted(c.items())) for c in out)]  # unique, in order


def deepest_stages(m: int, k: int, cfg: dict[str, int], cap: int) -> int | None:
    """The deepest legal ring up to `cap` for this candidate (N does not enter shared memory)."""
    target = gemmgen.ir.H200_SXM
    for stages in range(cap, 2, -1):
        full = gemmgen.ir.GemmConfig(**{**cfg, "stages": stages, "cluster": 1, "num_sms": target.num_sms})
        if not check(gemmgen.GemmProblem(m, 4096, k), full, target):
            return stages
    return None


def _build(args: tuple) -> None:
    m, n, k, cfg = args
    try:
        gemmgen.build(gemmgen.GemmProblem(m, n, k), cfg)
    except (IllegalConfigError, ValueError):
        pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--m", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--a-rows", action="store_true", help="also sweep A slots of only M's rows (a_rows)")
    ap.add_argument("--stages", type=int, nargs="*", default=[], help="stage caps (deepest legal ring up to each)")
    ap.add_argument("--nk", nargs="*", default=[], help="NxK pairs (default: the decode table's seven)")
    ap.add_argument("--block-m", type=int, nargs="*", default=[64], help="tile rows to sweep (64; 128 for M = 128)")
    ap.add_argument("--bn", type=int, nargs="*", default=BNS, help="tile widths to sweep")
    args = ap.parse_args()
    nks = [tuple(int(v) for v in s.split("x")) for s in args.nk] or NK
    caps, bms, bns = tuple(args.stages), tuple(args.block_m), tuple(args.bn)
    jobs = [(m, n, k, c) for m in args.m for n, k in nks for c in configs(k, m, args.a_rows, caps, bms, bns)]
    jobs += [(m, n, k, None) for m in args.m for n, k in nks]
    with ProcessPoolExecutor() as pool:
        list(pool.map(_build, jobs, chunksize=2))
    target = gemmgen.api.device_target(0)
    rows = []
    for m in args.m:
        for n, k in nks:
            a, sa = gemmgen.per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
            b, sb = gemmgen.per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
            out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            byts = m * k + n * k + 2 * m * n + 4 * m * (k // 128) + 4 * (-(-n // 128)) * (-(-k // 128))
            default = gemmgen.get_kernel(m, n, k, target).name
            res = []
            for cfg in [None, *configs(k, m, args.a_rows, caps, bms, bns)]:
                try:
                    kern = gemmgen.get_kernel(m, n, k, target, cfg)
                except (IllegalConfigError, ValueError):
                    continue
                secs, _ = kernel_seconds(lambda kern=kern, a=a, sa=sa, b=b, sb=sb, out=out: kern(a, sa, b, sb, out))
                res.append({"m": m, "n": n, "k": k, "config": cfg or "default", "name": kern.name,
                            "us": secs * 1e6, "tbps": byts / secs / 1e12, "is_default": kern.name == default})
            rows += res
            best = min(res, key=lambda r: r["us"])
            dflt = next(r for r in res if r["config"] == "default")
            print(f"{m}x{n}x{k}: default {dflt['us']:6.1f} us ({dflt['tbps']:.2f} TB/s) {dflt['name'][30:]}; "
                  f"best {best['us']:6.1f} us {best['config']}", flush=True)
            args.out.write_text(json.dumps(rows, indent=1))  # after each shape: a timeout keeps what ran


if __name__ == "__main__":
    main()
