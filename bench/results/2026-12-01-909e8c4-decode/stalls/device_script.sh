#!/usr/bin/env bash
# call 6 (2026-12-01 b): where the block recipe's decode kernel stalls against the same structure without block
# scales: ncu with per-instruction stall samples (SASS page) of gemmgen block and tensor recipe at 32x4096x7168.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
S=32x4096x7168
for impl in gemmgen gemmgen_tensor; do
  tag=${S}_$impl
  timeout 150 ncu --clock-control none --profile-from-start off --set full --import-source no -o /tmp/ncu_$tag \
    python3 bench/ncu_peers.py $S $impl > /tmp/ncu_${tag}_log.txt 2>&1
  tail -1 /tmp/ncu_${tag}_log.txt
  ncu -i /tmp/ncu_$tag.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > "$OUT/ncu_${tag}_sass.csv.gz"
  ncu -i /tmp/ncu_$tag.ncu-rep --page details --print-details all > "$OUT/ncu_${tag}.txt" 2>&1
  grep -E "^\s+Duration|DRAM Throughput  " "$OUT/ncu_${tag}.txt" | head -3
done
