#!/usr/bin/env bash
# session n, call 8: with splits in the workspace, would the decode model's cluster terms (split cost, co-residency
# caps) pick better at M = 32..128? Its refit picks (pinned) against today's defaults.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
ab() { local out=$1; shift; timeout 45 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_$out.json" "$@" 2>&1 | grep -v -i warn | grep " x" | tail -3; }
ab a --shape 32x4096x7168 --shape 64x4096x7168 --shape 32x3072x1536 --config block_n=64,k_splits=2
ab b --shape 64x1024x4096 --config k_splits=4
ab c --shape 96x2112x7168 --shape 128x2112x7168 --shape 128x2048x7168 --shape 96x2048x7168 --config block_m=128,block_n=64,k_splits=4
ab d --shape 128x1024x4096 --config block_m=128,block_n=32,k_splits=4
ab e --shape 128x4096x7168 --config block_m=128,block_n=64,k_splits=2 --config block_m=128,block_n=32,k_splits=2
