#!/usr/bin/env bash
# call 6 (2026-12-01 d): branch probe/a-rows-recipes: M rounded up to 8 rows of A for the bf16 and per-tensor recipes
# too, against e179e4b (whose picks for those recipes equal main's).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 200 python3 bench/ab_versions.py --rounds 5 --before .devrun/m3 --out "$OUT/ab_recipes.json" \
  b:65x2112x7168 b:80x4096x7168 b:100x7168x16384 b:65x7168x2048 b:40x7168x2048 b:33x4096x7168 \
  t:65x2112x7168 t:80x4096x7168 t:100x7168x2048 t:40x4096x7168 t:65x7168x16384 t:33x2112x7168 \
  2>&1 | grep -v -i warn | tail -12 | cut -c1-120
