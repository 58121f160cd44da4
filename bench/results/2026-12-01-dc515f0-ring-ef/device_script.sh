#!/usr/bin/env bash
# session m, call 7: the swapped ring's depth now that the weights load evict_first (the model's 8 / 16 / 10 stages
# against 12 and 16), 7 rotated rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 150 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_ring_ef.json" \
  --shape 1x24576x1536 --shape 8x24576x1536 --shape 8x7168x16384 --shape 8x4096x7168 --shape 8x32768x512 \
  --config swap_ab=1,stages=12 --config swap_ab=1,stages=16 --config swap_ab=1,stages=6 2>&1 | grep -v -i warn | tail -6
