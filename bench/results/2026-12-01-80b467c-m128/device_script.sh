#!/usr/bin/env bash
# call 7 (2026-12-01 c): M = 128 as two 64-row M blocks, now that 64x32 tiles gather SA (x1.07 at 64x4096x7168):
# 128x2112x7168 (default 128x32, two K splits, 132 CTAs) and 128x4096x7168 (128x64, two K splits). ab_configs, 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 150 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_m128.json" --shape 128x2112x7168 \
  --shape 128x4096x7168 --config block_m=64,block_n=32 --config block_m=64,block_n=32,stages=16 \
  --config block_m=64,block_n=64,stages=13 --config block_m=64,block_n=64,stages=13,sa_gather=1 \
  2>&1 | grep -v -i warn | tail -4
