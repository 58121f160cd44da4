#!/usr/bin/env bash
# call 8 (main 02598d4, kernels = a4ccf96): M = 64 decode-regime sweep with the current kernel (stage cap 16).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
timeout 400 python3 bench/sweep_decode.py --out "$OUT/sweep_m64.json" --m 64 --stages 16 \
  --nk 4096x7168 7168x2048 32768x512 2112x7168 7168x16384 2>&1 | grep -v -i warn | tail -8
