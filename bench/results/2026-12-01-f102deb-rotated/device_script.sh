#!/usr/bin/env bash
# session 2026-12-01 g, call 6 (the last ~290 s of device time): bench sections 1 and 3 in 3 passes with the
# measurement order rotated per pass (no DeepGEMM: its JIT does not fit the budget left), to see whether gemmgen's
# pass-to-pass spread (call 4: masked 1 x 1024 4096x7168 46.0 / 56.0 / 55.5 us) follows the order.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 250 > "$OUT/clocks.csv" 2>&1 &
LOGGER=$!
timeout 150 python3 bench/bench_gemm.py --passes 3 --sections 1 3 --out "$OUT/bench.json" 2>&1 \
  | grep -v -i warn | grep -E "^(section|[0-9]+ rows|Geometric|gemmgen at)" | cut -c1-250
kill $LOGGER
