#!/usr/bin/env bash
# session m, call 8: the host path on this session's host: host_overhead's pieces (15 interleaved rounds) at the
# bench's host shape and a swapped decode shape; bench section 4 in 3 passes (gemmgen and cuBLASLt block).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 90 python3 bench/host_overhead.py 64x7168x2048 --json "$OUT/host_overhead.json" 2>&1 | grep -v -i warn | tail -20
timeout 60 python3 bench/host_overhead.py 1x7168x16384 --json "$OUT/host_overhead.json" 2>&1 | grep -v -i warn | tail -20
timeout 150 python3 bench/bench_gemm.py --passes 3 --sections 4 --out "$OUT/bench_host.json" 2>&1 \
  | grep -a -v -i warn | grep -a -E "^(section|[0-9]+ rows|Traceback|[A-Za-z]*Error)" | cut -c1-300
ls $OUT
