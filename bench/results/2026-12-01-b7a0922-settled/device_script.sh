#!/usr/bin/env bash
# session 2026-12-01 h, call 5: sections 1 and 3 with DeepGEMM in 3 rotated passes, each implementation of a heavy
# shape after its own 0.5 s idle pause (--settle-impl-s, new): does the order effect of call 1 go away?
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
export DG_JIT_CACHE_DIR=/tmp/dgcache
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 250 > "$OUT/clocks.csv" 2>&1 &
LOGGER=$!
timeout 250 python3 bench/deepgemm_peer.py .devrun/dg --jobs 6 > /tmp/dg_warm.txt 2>&1; echo "dg warm rc $?"
timeout 300 python3 bench/bench_gemm.py --passes 3 --sections 1 3 --deepgemm .devrun/dg --out "$OUT/bench.json" 2>&1 \
  | grep -v -i warn | grep -E "^(section|[0-9]+ rows|Geometric|gemmgen at|Traceback|[A-Za-z]*Error)" | cut -c1-700
kill $LOGGER
