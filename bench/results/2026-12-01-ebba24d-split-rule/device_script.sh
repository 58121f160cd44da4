#!/usr/bin/env bash
# session n, call 3: GPU suite (all but grouped) with K splits in the workspace by default and the few-tile swap;
# the new defaults timed against the old picks (pinned) at the decode shapes whose kernel changed.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 260 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs --ignore=tests/test_gpu_grouped.py \
  > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $?"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -12
ab() { local out=$1; shift; timeout 60 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_$out.json" "$@" 2>&1 | grep -v -i warn | grep x | tail -3; }
OLD2=block_n=32,k_splits=2,split_global=0; OLD4=block_n=32,k_splits=4,split_global=0; OLD64=block_n=64,k_splits=4,split_global=0
ab 2112 --shape 1x2112x7168 --shape 16x2112x7168 --config $OLD2
ab 576 --shape 1x576x7168 --shape 16x576x7168 --shape 8x512x7168 --shape 8x256x7168 --config $OLD4
ab 1536 --shape 8x1536x7168 --shape 8x1024x4096 --config $OLD64
ab 2048 --shape 8x2048x7168 --config $OLD2
ab 3072 --shape 8x3072x1536 --config block_n=64,k_splits=2,split_global=0
ab 4224 --shape 8x4224x7168 --shape 1x4096x7168 --config split_global=0 --config swap_ab=0
ab midm --shape 32x1536x7168 --shape 64x1024x4096 --shape 96x4096x4096 --shape 128x1536x7168 --shape 96x2112x7168 --config split_global=0
