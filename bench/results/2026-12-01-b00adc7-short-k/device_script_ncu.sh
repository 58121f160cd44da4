#!/usr/bin/env bash
# session 2026-12-01 e, call 6: DeepGEMM's 2-3% lead at 1 and 8 x 32768 x 512 decode: ncu (--set full, clocks left
# alone, caches flushed by ncu) of one call each of gemmgen and DeepGEMM, side by side.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
export DG_JIT_CACHE_DIR=/tmp/dgcache
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
for S in 1x32768x512 8x32768x512; do
  for impl in gemmgen deepgemm; do
    timeout 200 ncu --clock-control none --profile-from-start off --set full --import-source no -o "/tmp/ncu_${impl}_$S" \
      python3 bench/ncu_peers.py $S $impl --deepgemm .devrun/dg > "/tmp/ncu_${impl}_$S.log" 2>&1 || tail -3 "/tmp/ncu_${impl}_$S.log"
    ncu -i "/tmp/ncu_${impl}_$S.ncu-rep" --page details --print-details all > "$OUT/ncu_${impl}_$S.txt" 2>&1
    echo "== $impl $S"
    grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Grid Size|Block Size|Registers Per|Dynamic Shared|SM Frequency|Memory Throughput|L2 Hit Rate  " "$OUT/ncu_${impl}_$S.txt" | head -14
  done
done
