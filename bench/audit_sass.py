"""Compile every distinct default kernel over a grid of problems and flag SASS pathologies (CPU only, no GPU).

Flags: `serialized` (a full wgmma wait after every wgmma group: ptxas could not keep groups in flight), `no-inflight`
(a two-set kernel with no wait that leaves a group in flight), `spills` (ptxas spill stores or loads).

    PYTHONPATH=. GEMMGEN_CACHE_DIR=/tmp/audit-cache python bench/audit_sass.py --out audit.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gemmgen.errors import GemmgenError
from gemmgen.ir import DType, GemmKind, Kernel, ScaleRecipe
from gemmgen.ir.problem import GemmProblem
from gemmgen.ir.target import H200_SXM
from gemmgen.passes import run_pipeline
from gemmgen.sass.parse import parse, wgmma_waits
from gemmgen.stages import build

NK = [(2112, 7168), (576, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048),
      (1536, 7168), (3072, 1536), (4608, 7168), (18432, 7168), (7168, 4608), (1024, 1024), (8192, 8192)]
MS = [1, 4, 8, 16, 24, 32, 40, 48, 64, 80, 96, 128, 160, 192, 256, 384, 512, 768, 1024, 1536, 2048, 4096, 8192]
KINDS: dict[str, dict] = {
    "block": {}, "tensor": {"scales": ScaleRecipe.TENSOR}, "channel": {"scales": ScaleRecipe.CHANNEL},
    "bf16": {"a_dtype": DType.BF16, "b_dtype": DType.BF16, "scales": ScaleRecipe.NONE},
    "fp32_out": {"out_dtype": DType.FP32},
    "masked": {"kind": GemmKind.M_GROUPED_MASKED, "groups": 4},
    "contiguous": {"kind": GemmKind.M_GROUPED_CONTIGUOUS, "groups": 4},
}


def distinct_kernels() -> dict[str, tuple[str, GemmProblem]]:
    seen: dict[str, tuple[str, GemmProblem]] = {}
    for tag, kw in KINDS.items():
        for n, k in NK:
            for m in MS:
                rows = 4 * m if tag == "contiguous" else m  # contiguous: 4 experts of m rows, 128-aligned
                if tag == "contiguous" and rows % 128:
                    continue
                try:
                    problem = GemmProblem(rows, n, k, **kw)
                    kernel = run_pipeline(Kernel(problem), H200_SXM)
                except (GemmgenError, ValueError):
                    continue
                assert kernel.name is not None
                seen.setdefault(kernel.name, (tag, problem))
    return seen


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    kernels = distinct_kernels()
    print(f"{len(kernels)} distinct kernels", flush=True)
    flagged = []
    for name, (tag, problem) in sorted(kernels.items()):
        built = build(problem)
        waits = wgmma_waits(parse(built.sass))
        res = built.resources
        flags = []
        if waits.serialized:
            flags.append("serialized")
        assert built.kernel.plan is not None
        if built.config.acc_sets == 2 and problem.scales.promotes and built.kernel.plan.k_steps >= 2 \
                and not waits.in_flight:
            flags.append("no-inflight")
        if res.spill_stores or res.spill_loads:
            flags.append("spills")
        if flags:
            flagged.append({"name": name, "kind": tag, "problem": problem.short(), "flags": flags,
                            "mma": waits.mma, "full_waits": waits.full, "in_flight_waits": waits.in_flight,
                            "spill_stores": res.spill_stores, "spill_loads": res.spill_loads})
            print("FLAG", flagged[-1], flush=True)
    args.out.write_text(json.dumps({"kernels": len(kernels), "flagged": flagged}, indent=1))
    print(f"{len(flagged)} of {len(kernels)} flagged")


if __name__ == "__main__":
    main()
