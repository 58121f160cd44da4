#!/usr/bin/env bash
# call 7 (main 13d3f0d): the M = 128 decode-regime sweep on the current kernel (every block_n x k_splits, 128-row
# tiles), to refit the stream model's 128-row terms (call 6: 128x4096x7168 128x32 unsplit x1.020 over the pick).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
timeout 400 python3 bench/sweep_decode.py --out "$OUT/sweep_m128.json" --m 128 --block-m 128 --nk 2112x7168 4096x7168 7168x16384 7168x2048 576x7168 2>&1 | grep -v -i warn | tail -40
