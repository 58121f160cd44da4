#!/usr/bin/env bash
# session p, call 6: the host path (unchanged) on a fresh machine: host_overhead.py, 15 interleaved rounds per case.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
for s in 64x7168x2048 4096x7168x2048; do
  timeout 150 python3 bench/host_overhead.py $s --json "$OUT/host_$s.json" 2>&1 | grep -v -i warn | tail -14
done
