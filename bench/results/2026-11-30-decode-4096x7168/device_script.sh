#!/usr/bin/env bash
# call 9 (main, kernels = a4ccf96): the (M, 4096, 7168) decode family, default (64x64, 2 K splits) against 64x32 unsplit.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
i=0
for m in 1 8 32 64; do
  i=$((i+1))
  (cd bench && PYTHONPATH=.. timeout 60 python3 sweep.py --rounds 7 --out "$OUT/ab_4096x7168_m$m.json" --ab ${m}x4096x7168 '' block_n=32,k_splits=1 block_n=64,k_splits=1) 2>&1 | grep -v -i warn | tail -3
done
