#!/usr/bin/env bash
# call 9 (2026-12-01 d): ab_versions' t:/c: specs after folding them into ab_scaled (a tool check, 3 rounds).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 80 python3 bench/ab_versions.py --rounds 3 --before .devrun/m3 --out "$OUT/ab_scaled.json" \
  t:72x2112x7168 c:72x2112x7168 2>&1 | grep -v -i warn | tail -2 | cut -c1-120
