#!/usr/bin/env bash
# session call 10: balanced persistent grid. The stream-K runs measured the whole-tile kernel faster on a grid of
# ceil(units / rounds) clusters (the fewest that keep the round count: every round full) than on every SM:
# 4096x7168x16384 x1.014 / x1.012 (128 SMs), 2304x7168x4096 x1.011 (126). Interleaved A/B, 7 rounds, of the default
# against num_sms = that grid, on every bench shape with more units than clusters.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
for pair in 64x32768x512:128 128x32768x512:128 4096x2112x7168:118 4096x24576x1536:128 4096x32768x512:128 \
            4096x7168x16384:128 4096x4096x7168:128 4096x7168x2048:128 8192x8192x8192:128; do
  shape=${pair%%:*}; sms=${pair##*:}
  timeout 60 python3 bench/ab_configs.py --out "$OUT/ab_grid_$shape.json" --rounds 7 --shape $shape \
    --config num_sms=$sms 2>&1 | grep -v -i warn
done
