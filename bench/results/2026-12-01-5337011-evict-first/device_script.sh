#!/usr/bin/env bash
# session m, call 4: the weights loaded L2 evict_first (evict_first=1) against the default policy, decode shapes
# (swapped and unswapped) and two prefill shapes, 7 rotated rounds; GPU cases of the dense suite with it pinned.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 330 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_evict_first.json" \
  --shape 1x7168x16384 --shape 8x7168x16384 --shape 8x24576x1536 --shape 1x4096x7168 --shape 8x4096x7168 \
  --shape 1x2112x7168 --shape 8x576x7168 --shape 32x24576x1536 --shape 32x7168x2048 --shape 64x7168x2048 \
  --shape 8x32768x512 --shape 32x4096x7168 --shape 128x4096x7168 --shape 4096x7168x2048 --shape 8x10240x7168 \
  --config evict_first=1 2>&1 | grep -v -i warn | tail -16
