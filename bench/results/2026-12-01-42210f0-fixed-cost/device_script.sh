#!/usr/bin/env bash
# session m, call 3: where a decode kernel's time goes: kernel us against K at N = 7168 and 4096 (swapped default,
# unswapped, cuBLASLt per-tensor): intercept and streaming rate; ncu of 8x7168x16384 (swapped) memory sections.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 200 python3 bench/probe_fixed_cost.py --out "$OUT/fixed_cost_7168.json" --n 7168 --rounds 3 \
  --k 256 1024 2048 4096 8192 16384 32768 65536 2>&1 | grep -v -i warn
timeout 120 python3 bench/probe_fixed_cost.py --out "$OUT/fixed_cost_4096.json" --n 4096 --rounds 3 \
  --k 1024 4096 7168 16384 32768 2>&1 | grep -v -i warn
timeout 120 ncu --clock-control none -k regex:sm90_ -s 2 -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section LaunchStats --section WarpStateStats python3 bench/ncu_one.py 8x7168x16384 > "$OUT/ncu_8x7168x16384.txt" 2>&1
grep -a -E "Duration|DRAM Throughput|Memory Throughput|Elapsed Cycles|SM Frequency|DRAM Frequency|Stall|L2 Hit" "$OUT/ncu_8x7168x16384.txt" | head -20
