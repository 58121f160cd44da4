#!/usr/bin/env bash
# session q, call 3: bench sections 1-4, 3 rotated passes, DeepGEMM built by its own JIT (warmed in call 2).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
export DG_JIT_CACHE_DIR=$PWD/generated/dgcache
OUT=${OUT:-/tmp/out}
[ -d .devrun/dg ] || tar -xJf .devrun/pack/dg.tar.xz -C .devrun
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 250 > "$OUT/clocks.csv" 2>&1 &
LOGGER=$!
timeout 560 python3 bench/bench_gemm.py --passes 3 --sections 1 2 3 4 --deepgemm .devrun/dg --out "$OUT/bench.json" 2>&1 \
  | grep -a -v -i warn | grep -a -E "^(section|[0-9]+ rows|Geometric|gemmgen at|gemmgen against|Traceback|[A-Za-z]*Error)" | cut -c1-700
kill $LOGGER
ls $OUT
