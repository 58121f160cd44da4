#!/usr/bin/env bash
# session call 2: decode 1x2112x7168 runs 1.2-2 us slower than 8x2112x7168 on the same kernel in every bench: order
# or kernel? Interleaved timing of the decode shapes; ncu of M = 1 and 8 at 2112x7168 and of 1x24576x1536 (SOL, memory).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 150 python3 .devrun/probe_m1.py "$OUT/probe_m1.json" 2>&1 | grep -v -i warn
for s in 1x2112x7168 8x2112x7168 1x24576x1536 1x32768x512; do
  timeout 60 ncu --clock-control none -k regex:sm90_ -s 2 -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section LaunchStats --section Occupancy --section WarpStateStats python3 bench/ncu_one.py $s > "$OUT/ncu_$s.txt" 2>&1
  echo "== $s"; grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Hit|Stall Long|Stall Barrier|Stall Wait|Warp Cycles Per Issued|SM Frequency" "$OUT/ncu_$s.txt" | head -12
done
