#!/usr/bin/env bash
# call 6: the grouped section three times (gemmgen and the cuBLASLt loop, no DeepGEMM), each its own process: how
# much the contiguous rows move between runs of the same kernels.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
for i in 1 2 3; do
  timeout 60 python3 bench/bench_gemm.py --sections 3 --out "$OUT/grouped_$i/bench.json" 2>&1 \
    | grep -E "^grouped \('contiguous'" | cut -c1-120
done
