#!/usr/bin/env bash
# call 7: probe branch: 256x128 with 4 stages and D stored from registers, against main (3 stages, staged D).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
GEMMGEN_PROBE_D_DIRECT=1 timeout 300 python3 bench/ab_versions.py --before .devrun/before_main --out "$OUT/ab_d_direct.json" \
  4096x7168x16384 4096x4096x7168 4096x7168x2048 8192x8192x8192 4097x4104x7296 2>&1 | grep -v -i warn | tail -8
