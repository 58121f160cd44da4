#!/usr/bin/env bash
# session q, call 1: where the driver's part of a call goes (bench/launch_probe.py), and host_overhead.py beside it.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 200 python3 bench/launch_probe.py 64x7168x2048 --json "$OUT/launch_probe.json" 2>&1 | grep -v -i warn | tail -30
timeout 150 python3 bench/host_overhead.py 64x7168x2048 --json "$OUT/host_64x7168x2048.json" 2>&1 | grep -v -i warn | tail -16
