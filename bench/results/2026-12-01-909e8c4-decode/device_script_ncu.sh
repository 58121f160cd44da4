#!/usr/bin/env bash
# call 4 (2026-12-01 b): ncu (--set full, one call each, clocks left alone) of the misses against the same-run best:
# decode 32x4096x7168 and 1x24576x1536 (gemmgen against cuBLASLt per-tensor), prefill 128x4096x7168 (gemmgen
# against DeepGEMM).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
export DG_JIT_CACHE_DIR=/tmp/dgcache
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
for job in 32x4096x7168:gemmgen 32x4096x7168:tensorwise 1x24576x1536:gemmgen 1x24576x1536:tensorwise \
           128x4096x7168:gemmgen 128x4096x7168:deepgemm; do
  S=${job%%:*}; impl=${job##*:}; tag=${S}_$impl
  timeout 150 ncu --clock-control none --profile-from-start off --set full --import-source no -o /tmp/ncu_$tag \
    python3 bench/ncu_peers.py $S $impl --deepgemm .devrun/dg > /tmp/ncu_${tag}_log.txt 2>&1
  tail -1 /tmp/ncu_${tag}_log.txt
  ncu -i /tmp/ncu_$tag.ncu-rep --page details --print-details all > "$OUT/ncu_${tag}.txt" 2>&1
  echo "== $tag"; grep -E "^  [a-z_0-9]+|Duration|SM Frequency|DRAM Throughput|Memory Throughput|Grid Size|Block Size|Cluster Size|Registers Per|Achieved Occupancy|Elapsed Cycles" "$OUT/ncu_${tag}.txt" | head -14
done
