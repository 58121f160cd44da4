#!/usr/bin/env bash
# session 2026-12-01 i, call 5: the ring depth of streaming tiles. Call 4 found 12 stages x1.022-1.032 over the
# default 16 (13) at 7168x16384; sweep the depth on every decode-rule and 64/128-row shape of the bench.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
ab() { s=$1; shift; args=(); for c in "$@"; do args+=(--config "$c"); done
  timeout 120 python3 bench/ab_configs.py --out "$OUT/ab_$s.json" --rounds 5 --shape $s "${args[@]}" 2>&1 | grep -a -v -i warn; }
ab 1x7168x16384 block_m=64,block_n=64,k_splits=1,stages=8 block_m=64,block_n=64,k_splits=1,stages=10 block_m=64,block_n=64,k_splits=1,stages=11 block_m=64,block_n=64,k_splits=1,stages=12 block_m=64,block_n=64,k_splits=1,stages=13 block_m=64,block_n=64,k_splits=1,stages=14
ab 32x7168x16384 block_m=64,block_n=64,k_splits=1,stages=10 block_m=64,block_n=64,k_splits=1,stages=11 block_m=64,block_n=64,k_splits=1,stages=12 block_m=64,block_n=64,k_splits=1,stages=13 block_m=64,block_n=64,k_splits=1,stages=14
ab 64x7168x16384 block_m=64,block_n=64,k_splits=1,stages=9 block_m=64,block_n=64,k_splits=1,stages=10 block_m=64,block_n=64,k_splits=1,stages=11 block_m=64,block_n=64,k_splits=1,stages=12
ab 128x7168x16384 block_m=128,block_n=64,k_splits=1,stages=5 block_m=128,block_n=64,k_splits=1,stages=6 block_m=128,block_n=64,k_splits=1,stages=7
ab 1x4096x7168 block_m=64,block_n=64,k_splits=2,stages=8 block_m=64,block_n=64,k_splits=2,stages=10 block_m=64,block_n=64,k_splits=2,stages=12 block_m=64,block_n=64,k_splits=2,stages=14
ab 32x4096x7168 block_m=64,block_n=32,k_splits=1,stages=8 block_m=64,block_n=32,k_splits=1,stages=10 block_m=64,block_n=32,k_splits=1,stages=12 block_m=64,block_n=32,k_splits=1,stages=14
ab 64x4096x7168 block_m=64,block_n=32,k_splits=1,stages=8 block_m=64,block_n=32,k_splits=1,stages=10 block_m=64,block_n=32,k_splits=1,stages=12 block_m=64,block_n=32,k_splits=1,stages=14
ab 1x7168x2048 block_m=64,block_n=64,k_splits=1,stages=8 block_m=64,block_n=64,k_splits=1,stages=10 block_m=64,block_n=64,k_splits=1,stages=12 block_m=64,block_n=64,k_splits=1,stages=14
ab 32x7168x2048 block_m=64,block_n=64,k_splits=1,stages=8 block_m=64,block_n=64,k_splits=1,stages=10 block_m=64,block_n=64,k_splits=1,stages=12 block_m=64,block_n=64,k_splits=1,stages=14
ab 64x7168x2048 block_m=64,block_n=64,k_splits=1,stages=8 block_m=64,block_n=64,k_splits=1,stages=10 block_m=64,block_n=64,k_splits=1,stages=11 block_m=64,block_n=64,k_splits=1,stages=12
ab 1x2112x7168 block_m=64,block_n=32,k_splits=2,stages=8 block_m=64,block_n=32,k_splits=2,stages=10 block_m=64,block_n=32,k_splits=2,stages=12 block_m=64,block_n=32,k_splits=2,stages=14
ab 32x2112x7168 block_m=64,block_n=32,k_splits=2,stages=8 block_m=64,block_n=32,k_splits=2,stages=10 block_m=64,block_n=32,k_splits=2,stages=12 block_m=64,block_n=32,k_splits=2,stages=14
ab 1x576x7168 block_m=64,block_n=32,k_splits=4,stages=8 block_m=64,block_n=32,k_splits=4,stages=10 block_m=64,block_n=32,k_splits=4,stages=12 block_m=64,block_n=32,k_splits=4,stages=14
ab 1x24576x1536 block_m=64,block_n=192,k_splits=1,stages=5 block_m=64,block_n=192,k_splits=1,stages=6
