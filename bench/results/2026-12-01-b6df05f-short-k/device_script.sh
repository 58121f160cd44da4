#!/usr/bin/env bash
# session 2026-12-01 f, call 2: (1) _short_k above 32 rows (this tree) against aaaf793 (.devrun/m6), 9 rounds;
# (2) probe: the TMA thread waits for G ring slots at once and issues their k-blocks back to back (G = 4: .devrun/pg4,
# G = 2: .devrun/pg2; rings of >= 8 stages), against this tree's per-slot issue, on memory-bound shapes, 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 150 python3 bench/ab_versions.py --rounds 9 --before .devrun/m6 --out "$OUT/ab_short_k.json" \
  33x32768x512 48x32768x512 64x32768x512 80x32768x512 96x32768x512 112x32768x512 128x32768x512 \
  16x32768x512 256x32768x512 2>&1 | grep -v -i warn | tail -9 | cut -c1-150
S="1x7168x16384 32x7168x16384 64x7168x16384 128x7168x16384 1x4096x7168 32x4096x7168 8x2112x7168 1x7168x2048 1x576x7168 64x7168x2048 128x7168x2048"
timeout 170 python3 bench/ab_versions.py --rounds 7 --before .devrun/pg4 --out "$OUT/ab_group4.json" $S \
  2>&1 | grep -v -i warn | tail -11 | cut -c1-150
timeout 170 python3 bench/ab_versions.py --rounds 7 --before .devrun/pg2 --out "$OUT/ab_group2.json" $S \
  2>&1 | grep -v -i warn | tail -11 | cut -c1-150
