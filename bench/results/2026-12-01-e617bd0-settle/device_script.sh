#!/usr/bin/env bash
# call 8: the section pause. 8192^3 (prefill) then the decode shapes 1x2112x7168 and 8x2112x7168, with no pause
# (as before) and with the 2 s default, one process each.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
for s in 0 2; do
  timeout 70 python3 bench/bench_gemm.py --sections 1 2 --settle-s $s --shape 8192x8192x8192 --shape 1x2112x7168 \
    --shape 8x2112x7168 --out "$OUT/settle_$s/bench.json" 2>&1 | grep -E "^decode" | cut -c1-110
done
