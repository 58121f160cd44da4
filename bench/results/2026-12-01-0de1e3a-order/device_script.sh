#!/usr/bin/env bash
# call 7: is 1x2112x7168's bench time an order effect (the first decode shape)? The decode section alone, in two
# orders, one process each.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 60 python3 bench/bench_gemm.py --sections 2 --shape 1x2112x7168 --shape 8x2112x7168 --shape 1x2112x7168 \
  --out "$OUT/first_m1/bench.json" 2>&1 | grep -E "^decode" | cut -c1-110
timeout 60 python3 bench/bench_gemm.py --sections 2 --shape 8x2112x7168 --shape 1x2112x7168 --shape 8x2112x7168 \
  --out "$OUT/first_m8/bench.json" 2>&1 | grep -E "^decode" | cut -c1-110
