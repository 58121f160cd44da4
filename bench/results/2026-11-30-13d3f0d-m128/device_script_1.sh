#!/usr/bin/env bash
# call 4 (main 5289d5e): prefill sweep of the 64/128-row shapes under their bars (every block_m/block_n, default
# stages/sets), and ncu SpeedOfLight + memory sections of 4096x32768x512 (is it memory-bound, as counted?).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
timeout 330 python3 bench/sweep.py --out "$OUT/sweep_prefill_small_m.json" --shapes 64x32768x512 64x7168x2048 64x7168x16384 128x2112x7168 128x32768x512 128x4096x7168 2>&1 | grep -v -i warn | tail -45
timeout 120 ncu --clock-control none -k regex:sm90_ -s 2 -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis python3 bench/ncu_one.py 4096x32768x512 > "$OUT/ncu_4096x32768x512.txt" 2>&1
grep -E "Throughput|Duration|Busy|Bandwidth|Hit Rate|Elapsed|SM Frequency|DRAM Freq" "$OUT/ncu_4096x32768x512.txt" | head -30
