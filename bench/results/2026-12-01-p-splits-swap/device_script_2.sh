#!/usr/bin/env bash
# session p, call 2: (a) _wide_splits' few-tile branch (8 splits; 64-row tiles in two M blocks at N <= 256) against
# the tree before (ab_versions, 7 rounds); (b) swap_ab=1 at 17..32 rows against the default (ab_configs, 7 rounds),
# for a rule at M = 17..32 (v0.24 section 5 measured before evict_first and the workspace).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/gemmgen-cache && tar -xJf .devrun/cache2.tar.xz -C /tmp/gemmgen-cache
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 200 python3 bench/ab_versions.py --before .devrun/before --rounds 7 --out "$OUT/abv_few.json" 65x256x7168 128x256x7168 96x384x7168 128x512x7168 128x256x4096 128x256x16384 128x128x7168 100x448x7168 72x320x7168 96x256x16384 2>&1 \
  | grep -v -i warn | tail -14
timeout 330 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_swap_m32.json" --shape 32x2112x7168 --shape 32x24576x1536 --shape 32x32768x512 --shape 32x7168x16384 --shape 32x4096x7168 --shape 32x7168x2048 --shape 32x576x7168 --shape 32x36864x1536 --shape 32x18432x1536 --shape 32x24576x7168 --shape 32x16384x7168 --shape 32x8192x7168 --shape 32x10240x7168 --shape 32x24576x2048 --shape 24x2112x7168 --shape 24x24576x1536 --shape 24x32768x512 --shape 24x7168x16384 --shape 24x4096x7168 --shape 24x7168x2048 --shape 24x16384x7168 --shape 17x24576x1536 --shape 17x7168x16384 --shape 17x4096x7168 --shape 17x7168x2048 --shape 17x32768x512 --config swap_ab=1 2>&1 \
  | grep -v -i warn | grep -E " x|Error" | tail -30
ls $OUT
