#!/usr/bin/env bash
# call 6 (main 13d3f0d): M = 128 stream picks, interleaved (sweep.py --ab, 7 rounds): the sweep of call 4 had
# 128x4096x7168 at 464 TFLOPS with 128x32 unsplit against the default 128x64 split in 2 (451).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
timeout 100 python3 bench/sweep.py --rounds 7 --out "$OUT/ab_128x4096x7168.json" --ab 128x4096x7168 '' block_n=32,k_splits=1 block_n=32,k_splits=2 block_n=64,k_splits=1 2>&1 | grep -v -i warn | tail -5
timeout 100 python3 bench/sweep.py --rounds 7 --out "$OUT/ab_128x576x7168.json" --ab 128x576x7168 '' block_n=32,k_splits=2 block_n=32,k_splits=3 block_n=64,k_splits=4 2>&1 | grep -v -i warn | tail -5
timeout 100 python3 bench/sweep.py --rounds 7 --out "$OUT/ab_128x2112x7168.json" --ab 128x2112x7168 '' block_n=32,k_splits=1 block_n=64,k_splits=2 block_n=32,k_splits=3 2>&1 | grep -v -i warn | tail -5
