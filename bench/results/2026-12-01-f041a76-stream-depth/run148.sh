#!/usr/bin/env bash
# session 2026-12-01 i, call 3: a ladder from the block kernel to the per-tensor one at the streaming shapes:
# nosa / noscale (producer without SA box / without any scale load), wholek_sa (this producer, the whole-K consumer
# loop: no promotion), wholek (both), and the per-tensor recipe. Timing only (the variants' numbers are wrong).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 400 python3 .devrun/probe_trees.py "$OUT/probe_ladder.json" nosa,noscale,wholek_sa,wholek \
  32x7168x16384,64x7168x16384,8x7168x16384,32x24576x1536,64x24576x1536,64x7168x2048 2>&1 | grep -a -v -i warn | tee "$OUT/probe_ladder.txt"
