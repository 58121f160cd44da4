#!/usr/bin/env bash
# session 2026-12-01 f, call 4: short-K prefill tiles (ncu: 4096x32768x512 keeps the tensor pipe 57% busy against 89%
# at K = 16384): forced tiles against the default 256x128 mc2a s3, 5 interleaved rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 400 python3 bench/ab_configs.py --rounds 5 --out "$OUT/ab_short_k_prefill.json" \
  --shape 4096x32768x512 --shape 4096x24576x1536 --shape 4096x7168x2048 \
  --config cluster=1 --config block_m=128,block_n=256 \
  --config block_m=128,block_n=192,cluster=2 --config block_m=128,block_n=128 2>&1 | grep -v -i warn | cut -c1-400
