#!/usr/bin/env bash
# session k, call 4: where the contiguous 4096x7168 rows lose to their bars. (1) the shipped 128x256 paired against
# unpaired, settled, 9 rounds; (2) ncu of the grouped kernel against the dense kernel of the same config on the same
# rows, and the dense default (256x128) on those rows.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 110 python3 bench/ab_grouped_configs.py --rounds 9 --settle-s 1 --out "$OUT/ab_contig_cluster.json" \
  --case contiguous:4x8192x4096x7168 --case contiguous:8x4096x4096x7168 \
  --case contiguous:4x8192x4096x7168@8192 --case contiguous:8x4096x4096x7168@4096 \
  --config cluster=1 2>&1 | grep -v -i warn | tail -8
S="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis"
timeout 120 ncu --clock-control none -k regex:sm90_ -s 4 -c 2 $S --import-source no -o /tmp/ncu_g \
  python3 bench/ncu_grouped.py contiguous:4:8192:4096:7168:128:256:2 > /tmp/ncu_g.log 2>&1 || tail -3 /tmp/ncu_g.log
ncu -i /tmp/ncu_g.ncu-rep --page details --print-details all > "$OUT/ncu_grouped_vs_dense.txt" 2>&1
grep -a -E "^  sm90|    Duration|SM Frequency|DRAM Frequency|Pipe Tensor|Issue Slots Busy|Compute \(SM\) Throughput|Grid Size" "$OUT/ncu_grouped_vs_dense.txt" | head -24
timeout 90 ncu --clock-control none -k regex:sm90_ -s 2 -c 1 $S --import-source no -o /tmp/ncu_d \
  python3 bench/ncu_one.py 34304x4096x7168 > /tmp/ncu_d.log 2>&1 || tail -3 /tmp/ncu_d.log
ncu -i /tmp/ncu_d.ncu-rep --page details --print-details all > "$OUT/ncu_dense_default.txt" 2>&1
grep -a -E "^  sm90|    Duration|SM Frequency|Pipe Tensor|Issue Slots Busy|Compute \(SM\) Throughput|Grid Size" "$OUT/ncu_dense_default.txt" | head -10
