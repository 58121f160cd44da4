#!/usr/bin/env bash
# session 2026-12-01 f, call 5: cluster=1 against the default A-multicast pair (mc2a) on 256x128 prefill tiles, by K
# (call 4: x1.021 at K = 512, x1.011 at 2048, x1.000 at 1536), 9 interleaved rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 400 python3 bench/ab_configs.py --rounds 9 --out "$OUT/ab_cluster.json" \
  --shape 4096x32768x512 --shape 2048x32768x512 --shape 8192x32768x512 --shape 4096x7168x2048 --shape 4096x7168x1024 \
  --shape 4096x24576x1536 --shape 4096x4096x7168 --shape 4096x7168x16384 --shape 8192x8192x8192 \
  --config cluster=1 2>&1 | grep -v -i warn | cut -c1-300
