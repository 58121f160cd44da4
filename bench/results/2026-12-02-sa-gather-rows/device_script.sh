#!/usr/bin/env bash
# session q, call 8: the SA gather's rows per producer thread (4 / 8 / 16) against SA by TMA, SA row-major, 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)+wip
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/gemmgen-cache && tar -xJf .devrun/pack/cache_q.tar.xz -C /tmp/gemmgen-cache
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 400 python3 bench/sa_gather_rows_probe.py --rows 4 8 16 --rounds 7 --shape 4096x7168x2048 --shape 4096x2112x7168 \
  --shape 128x7168x2048 --shape 4096x7168x16384 --json "$OUT/sa_gather_rows.json" 2>&1 | grep -v -i warn
