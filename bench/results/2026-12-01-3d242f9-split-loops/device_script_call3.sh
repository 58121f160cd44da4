#!/usr/bin/env bash
# session 2026-12-01 j, call 3: column halves (64x192 tile, wave_n 96, two sets) against the default one-set tile
# over the M and N x K where the wave rule picks 64x192 (M 16-64, N ~21.5-25k), 9 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
H1=block_m=64,block_n=192,wave_n=96,acc_sets=2
timeout 400 python3 bench/ab_configs.py --rounds 9 --out "$OUT/ab_halves2.json" \
  --shape 16x24576x1536 --shape 32x24576x1536 --shape 40x24576x1536 --shape 48x24576x1536 --shape 64x24576x1536 \
  --shape 64x24576x512 --shape 48x24576x512 --shape 64x22528x7168 --shape 48x21504x2048 --shape 64x24576x2048 \
  --config $H1 2>&1 | grep -a -v -i warn | tail -20
