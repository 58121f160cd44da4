#!/usr/bin/env bash
# session m, call 9: with the weights loaded evict_first, do the pinned-only levers that lost before win now?
# Swapped K splits at few-tile shapes, 128-row swapped tiles at 24576 x 1536; 7 rotated rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 150 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_levers_ef.json" \
  --shape 8x4096x7168 --shape 1x4096x7168 --shape 8x2112x7168 --shape 8x24576x1536 \
  --config swap_ab=1,k_splits=2 --config swap_ab=1,block_m=128 --config swap_ab=1,block_m=128,k_splits=2 \
  2>&1 | grep -v -i warn | tail -6
