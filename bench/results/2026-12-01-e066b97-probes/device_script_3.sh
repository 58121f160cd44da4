#!/usr/bin/env bash
# call 3 (2026-12-01 c): (1) SA by TMA against SA gathered by cp.async (row-major SA) on the same decode kernels;
# (2) ae8506c (B first, M's A rows for the wave rule's small-M tiles) against e066b97, 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 120 python3 .devrun/sa_gather_probe.py "$OUT/sa_gather.json" 32x4096x7168 32x7168x16384 32x2112x7168 \
  8x4096x7168 32x7168x2048 1x4096x7168 2>&1 | grep -v -i warn | tail -8
timeout 150 python3 bench/ab_versions.py --rounds 7 --before .devrun/m1 --out "$OUT/ab_ae8506c.json" \
  1x24576x1536 8x24576x1536 1x32768x512 8x32768x512 13x32768x512 32x4096x7168 1x2112x7168 4096x4096x7168 \
  2>&1 | grep -v -i warn | tail -9
