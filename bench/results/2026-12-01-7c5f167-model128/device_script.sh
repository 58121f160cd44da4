#!/usr/bin/env bash
# session n, call 11: the 128-row decode refit's unmeasured picks (pinned) against today's defaults (data for Next 1).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
ab() { local out=$1; shift; timeout 60 python3 bench/ab_configs.py --rounds 5 --out "$OUT/ab_$out.json" "$@" 2>&1 | grep -v -i warn | grep " x" | tail -4; }
ab a --shape 65x2112x7168 --shape 96x1536x7168 --shape 112x2112x2048 --config block_m=128,block_n=64,k_splits=4
ab b --shape 65x4096x7168 --shape 80x3072x1536 --config block_m=128,block_n=64,k_splits=2
ab c --shape 96x1024x4096 --shape 112x1024x4096 --config block_m=128,block_n=32,k_splits=4
ab d --shape 112x4096x7168 --config block_m=128,block_n=128,k_splits=4 --config block_m=128,block_n=64,k_splits=2
