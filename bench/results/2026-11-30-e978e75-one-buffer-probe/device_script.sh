#!/usr/bin/env bash
# call 4: host pieces: one-buffer launch (extra) checked and timed against the slot launch, 3 shapes.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
for shape in 4096x7168x2048 64x7168x2048 1x7168x16384; do
  timeout 150 python3 bench/host_overhead.py $shape --json "$OUT/host_overhead.json" 2>&1 | grep -v -i warn | tee -a "$OUT/host_log.txt" | grep -E "layout|one-buffer|new_pointers|DenseCall|cuLaunch|torch floor"
done
