#!/usr/bin/env bash
# session l, call 7: the M <= 16 swap rule at N whose 64-row weight tiles fill the 132 CTAs unevenly (18432: 2.2
# rounds, 12288: 1.45) and evenly (16384: 1.94, 8192: 0.97), against swap_ab=0, 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 200 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_waves.json" \
  --shape 8x18432x7168 --shape 8x18432x2048 --shape 16x18432x7168 --shape 8x36864x1536 --shape 1x12288x7168 \
  --shape 8x16384x7168 --shape 8x8192x7168 --shape 8x10240x7168 \
  --config swap_ab=0 2>&1 | grep -v -i warn | tail -8
