#!/usr/bin/env bash
# session 2026-12-01 h, call 1: the owed full bench at fc63b52 (kernels as 6535d78): sections 5 and 6 in 2 rotated
# passes while DeepGEMM compiles, then sections 1-4 with DeepGEMM in 3 rotated passes (each row the median pass).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
export DG_JIT_CACHE_DIR=/tmp/dgcache
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 250 > "$OUT/clocks.csv" 2>&1 &
LOGGER=$!
(timeout 240 python3 bench/deepgemm_peer.py .devrun/dg --jobs 4 > /tmp/dg_warm.txt 2>&1; echo "rc $?" >> /tmp/dg_warm.txt) &
DGPID=$!
mkdir -p "$OUT/s56"
timeout 220 python3 bench/bench_gemm.py --passes 2 --sections 5 6 --out "$OUT/s56/bench.json" 2>&1 \
  | grep -v -i warn | grep -E "^(section|[0-9]+ rows|Geometric|gemmgen at|Traceback|[A-Za-z]*Error)" | cut -c1-250
wait $DGPID
grep -v -i warn /tmp/dg_warm.txt | tail -1
timeout 330 python3 bench/bench_gemm.py --passes 3 --sections 1 2 3 4 --deepgemm .devrun/dg --out "$OUT/bench.json" 2>&1 \
  | grep -v -i warn | grep -E "^(section|[0-9]+ rows|Geometric|gemmgen at|Traceback|[A-Za-z]*Error)" | cut -c1-250
kill $LOGGER
