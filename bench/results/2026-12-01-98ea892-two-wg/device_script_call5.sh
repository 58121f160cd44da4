#!/usr/bin/env bash
# session 2026-12-01 j, call 5: mid-M prefill (192-1536 rows, outside the bench's sets) defaults against the tiles
# the wave rule passes over, now that two-set 64x96/128x96 tiles are no longer serialized (5 rounds, ab_configs).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)-dirty
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
S=""; for s in 192x4096x7168 192x7168x2048 192x7168x16384 384x2112x7168 384x4096x7168 384x7168x2048 384x7168x16384 \
  768x2112x7168 768x4096x7168 768x7168x2048 768x7168x16384 1536x4096x7168; do S="$S --shape $s"; done
timeout 520 python3 bench/ab_configs.py --rounds 5 --out "$OUT/ab_mid_m.json" $S \
  --config block_m=64,block_n=96 --config block_m=64,block_n=128 --config block_m=128,block_n=96 \
  --config block_m=128,block_n=128 --config block_m=128,block_n=192 --config block_m=256,block_n=128 \
  --config block_m=64,block_n=192,wave_n=96,acc_sets=2 2>&1 | grep -a -v -i warn | tail -14
