#!/usr/bin/env bash
# session o, call 1: the _wide_splits rule (128-row tiles in workspace K splits, M = 65..128, >= 32 k-blocks) against
# the previous tree's defaults, on the shapes it changes that were not measured; and the rule's edges (more splits at
# few tiles, the bn tie at 2112, K of 24-28 k-blocks).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 330 python3 bench/ab_versions.py --before .devrun/before --out "$OUT/ab_versions.json" --rounds 7 \
  80x2112x7168 112x2112x7168 128x2112x7168 80x4096x7168 128x4096x7168 65x4096x4096 112x4096x4096 128x4096x4096 \
  65x3072x4096 128x3072x4096 65x1536x7168 112x1536x7168 65x2048x7168 112x2048x7168 65x1024x4096 80x1024x4096 \
  2>&1 | grep -v -i warn | tail -40
ab() { local out=$1; shift; timeout 80 python3 bench/ab_configs.py --rounds 5 --out "$OUT/ab_$out.json" "$@" 2>&1 | grep -v -i warn | grep " x" | tail -6; }
ab few --shape 128x576x7168 --shape 96x512x7168 --shape 128x256x7168 --config block_m=128,block_n=32,k_splits=8 --config block_m=128,block_n=32,k_splits=7
ab tie --shape 96x2112x7168 --shape 128x1536x7168 --config block_m=128,block_n=32,k_splits=2
ab k24 --shape 96x2112x3072 --shape 128x2048x3072 --config block_m=128,block_n=64,k_splits=3
ab k28 --shape 96x4096x3584 --shape 128x4096x3584 --config block_m=128,block_n=64,k_splits=2
