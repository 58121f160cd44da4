#!/usr/bin/env bash
# session call 7 (data for NOTES v0.11 Next 3): masked at <= 64 expected rows (decode MoE), where the wave rule over
# expected rows stays: 64-row tiles over 8 draws per case. No code depends on it this session.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 150 python3 bench/sweep_masked_draws.py --draws 8 --tiles 64x64 64x96 64x128 64x160 64x192 64x256 \
  --out "$OUT/masked_draws_small.json" 8:64:4096:7168 16:32:7168:2048 32:16:4096:7168 8:48:7168:2048 2>&1 \
  | grep -v -i warn | tail -4
