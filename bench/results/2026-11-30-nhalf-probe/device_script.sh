#!/usr/bin/env bash
# call 7 (probe/n-halves): correctness of the N-half probe on the 256-row uniform kernels, then A/B against main.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
GEMMGEN_PROBE_NHALF=1 timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_gemm.py \
  -k "4096x7168x2048 or 1000x2048x1536 or 4096x4096x7168 or 8192" > "$OUT/gpu_subset.txt" 2>&1
tail -3 "$OUT/gpu_subset.txt"; grep -E "FAILED" "$OUT/gpu_subset.txt" | head
GEMMGEN_PROBE_NHALF=1 timeout 240 python3 bench/ab_versions.py --rounds 5 --before .devrun/before_a4 --out "$OUT/ab_nhalf.json" \
  4096x7168x16384 4096x4096x7168 4096x7168x2048 8192x8192x8192 4096x24576x1536 2>&1 | grep -v -i warn | tail -6
