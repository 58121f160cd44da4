#!/usr/bin/env bash
# call 4 (2026-12-01 c): SA by TMA against SA gathered by cp.async on the same kernels, beyond M = 32.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 200 python3 bench/sa_gather_probe.py "$OUT/sa_gather2.json" 16x4096x7168 16x2112x7168 64x4096x7168 \
  64x2112x7168 64x7168x2048 64x7168x16384 64x32768x512 64x24576x1536 128x4096x7168 128x2112x7168 128x7168x2048 \
  128x7168x16384 128x32768x512 4096x7168x2048 4096x2112x7168 2>&1 | grep -v -i warn | tail -16
