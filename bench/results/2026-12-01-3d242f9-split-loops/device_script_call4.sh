#!/usr/bin/env bash
# session 2026-12-01 j, call 4: masked decode kernels (64-row tiles, two sets, K = 2048) spill 28 B / 36 B in
# NVRTC 13.0: the default (two sets, spilling) against one set, same tile.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 300 python3 bench/ab_masked_configs.py --rounds 9 --out "$OUT/ab_masked_sets.json" \
  --case 4x64x16x7168x2048 --case 4x64x32x7168x2048 --case 4x128x64x7168x2048 --case 8x128x32x7168x2048 \
  --case 4x64x32x4096x7168 --config acc_sets=1 2>&1 | grep -a -v -i warn | tail -12
