#!/usr/bin/env bash
# session n, call 1: proxies for a non-serialising K split at the few-tile decode shapes: the same bytes per CTA
# with no split (wider N, shorter K) against today's picks; ncu of 8x2112x7168's default.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 200 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_proxy.json" \
  --shape 8x2112x7168 --shape 8x8448x1792 --shape 8x4096x7168 --shape 8x8192x3584 --shape 8x16384x1792 \
  --shape 1x2112x7168 --shape 1x8448x1792 \
  --config swap_ab=1,k_splits=2 --config swap_ab=1,block_m=128 --config stages=16 2>&1 | grep -v -i warn | tail -8
timeout 120 ncu --clock-control none -k regex:sm90_ -s 2 -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section LaunchStats --section WarpStateStats python3 bench/ncu_one.py 8x2112x7168 > "$OUT/ncu_2112.txt" 2>&1
grep -E "Duration|DRAM Through|Memory Through|Elapsed Cycles|SM Frequency|Stall|Registers" "$OUT/ncu_2112.txt" | head -20
timeout 120 ncu --clock-control none -k regex:sm90_ -s 2 -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
  python3 bench/ncu_one.py 8x8448x1792 > "$OUT/ncu_8448.txt" 2>&1
grep -E "Duration|DRAM Through|Memory Through|Elapsed Cycles|SM Frequency" "$OUT/ncu_8448.txt" | head -10
