#!/usr/bin/env bash
# session 2026-12-01 i, call 4: the block kernel's consumer at the streaming shapes: one accumulator set, and the
# ring's depth (a backlog of landed slots at the end of the stream would cost ~ stages x the consumer's per-k-block time).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
for s in 32x7168x16384 64x7168x16384 8x7168x16384; do
  timeout 150 python3 bench/ab_configs.py --out "$OUT/ab_$s.json" --rounds 7 --shape $s \
    --config acc_sets=1 --config stages=12 --config stages=8 --config acc_sets=1,stages=12 2>&1 | grep -a -v -i warn
done
timeout 100 python3 bench/ab_configs.py --out "$OUT/ab_32x24576x1536.json" --rounds 7 --shape 32x24576x1536 \
    --config stages=4 --config stages=5 --config block_n=128 2>&1 | grep -a -v -i warn
