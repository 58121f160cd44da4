#!/usr/bin/env bash
# session m, call 1: the 128-row swapped tile's GPU cases (first run), then it timed against the default,
# swap_ab=0 and the 64-row swap at uneven and even rounds, 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs -k "swap" > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $?"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -8
timeout 300 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_swap128.json" \
  --shape 8x10240x7168 --shape 1x12288x7168 --shape 8x18432x7168 --shape 8x4096x7168 \
  --shape 16x10240x7168 --shape 8x24576x1536 --shape 8x7168x16384 --shape 8x7168x2048 \
  --config swap_ab=0 --config swap_ab=1 --config swap_ab=1,block_m=128 2>&1 | grep -v -i warn | tail -30
