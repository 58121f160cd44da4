#!/usr/bin/env bash
# session q, call 5: does the bench's clock logger (nvidia-smi -lms 250, run beside bench_gemm.py) slow the host
# path? host_overhead.py at 64x7168x2048 without, with, and again without the logger; then bench section 4 alone
# without it.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
run() { timeout 100 python3 bench/host_overhead.py 64x7168x2048 --json "$OUT/host_$1.json" 2>&1 | grep -v -i warn \
  | grep -E "^(same|new|row)|fast_dense|slots|add_"; }
echo "== without logger"; run off1
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 250 > "$OUT/clocks.csv" 2>&1 &
LOGGER=$!
echo "== with logger"; run on
kill $LOGGER
echo "== without logger"; run off2
echo "== bench section 4, no logger"
timeout 120 python3 bench/bench_gemm.py --passes 3 --sections 4 --out "$OUT/bench_host.json" 2>&1 | grep -a -v -i warn | tail -3
grep -A8 "| impl |" "$OUT/bench.md"
