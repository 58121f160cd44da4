#!/usr/bin/env bash
# call 6 (2026-12-01 c): N = 7168 decode tiles: 64x64 runs 112 CTAs on 132 SMs; 64x56 gives 128 CTAs, 64x112 with
# two K splits 128. ab_configs, 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 200 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_n7168.json" --shape 1x7168x16384 \
  --shape 8x7168x16384 --shape 32x7168x16384 --shape 64x7168x16384 --shape 32x7168x2048 --shape 64x7168x2048 \
  --config block_n=56 --config block_n=112,k_splits=2 --config block_n=56,sa_gather=1 2>&1 | grep -v -i warn | tail -8
