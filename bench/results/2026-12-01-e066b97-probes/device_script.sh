#!/usr/bin/env bash
# call 2 (2026-12-01 c): (1) the N = 24576 / 32768 decode shapes (prefill rule, a_rows = 64) with A slots of M's rows,
# which since 62ee0ee also shrink the SA box (ab_configs, 7 rounds); (2) probe p5 (B issued before A and SA) against
# main on prefill and grouped shapes (ab_versions, 7 rounds).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 120 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_n24576.json" --shape 1x24576x1536 \
  --shape 8x24576x1536 --shape 32x24576x1536 --config a_rows=m,block_n=192,stages=6 --config a_rows=m \
  --config a_rows=m,block_n=192 --config a_rows=m,block_n=128 2>&1 | grep -v -i warn | tail -20
timeout 120 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_n32768.json" --shape 1x32768x512 \
  --shape 8x32768x512 --shape 32x32768x512 --config a_rows=m,block_n=128,stages=8 --config a_rows=m \
  --config a_rows=m,block_n=128 --config a_rows=m,block_n=256 2>&1 | grep -v -i warn | tail -20
GEMMGEN_CACHE_DIR=/tmp/cache-p5 PYTHONPATH=.devrun/p5:.devrun/m0:. timeout 150 python3 bench/ab_versions.py \
  --rounds 7 --before .devrun/m0 --out "$OUT/ab_p5_prefill.json" 4096x7168x16384 4096x2112x7168 128x2112x7168 \
  64x7168x2048 128x7168x16384 g8:4096x4096x7168 g32:256x4096x7168 m4:256x4096x7168 2>&1 | grep -v -i warn | tail -9
