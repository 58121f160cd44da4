#!/usr/bin/env bash
# session o, call 4: the weights loaded evict_first at 129..1024 rows, pinned against the default (5 rounds): does it
# pay where every tile runs in one round of CTAs on >= 128-row tiles (call 3: 4 wins x1.02-1.065; losses on 64-row
# tiles and over 3.4 rounds)? Predicted wins first, then predicted losses / level.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 300 python3 bench/ab_configs.py --rounds 5 --out "$OUT/ab_ef_win.json" \
  --shape 384x4096x7168 --shape 768x4096x7168 --shape 256x7168x2048 --shape 512x2112x7168 --shape 1024x2112x7168 \
  --shape 512x7168x16384 --shape 384x7168x2048 --shape 200x7168x2048 --config evict_first=1 2>&1 | grep -v -i warn | tail -9
timeout 200 python3 bench/ab_configs.py --rounds 5 --out "$OUT/ab_ef_lose.json" \
  --shape 256x4096x7168 --shape 160x4096x7168 --shape 1024x7168x2048 --shape 256x24576x1536 --shape 768x7168x16384 \
  --config evict_first=1 2>&1 | grep -v -i warn | tail -6
