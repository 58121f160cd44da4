#!/usr/bin/env bash
# session 2026-12-01 i, call 2: where the block recipe's streaming kernel loses to the same structure without block
# scales (3-5% at K = 16384, call 1): ncu --set full with per-instruction stall samples, block and tensor recipe.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
for S in 32x7168x16384 32x24576x1536; do
for impl in gemmgen gemmgen_tensor; do
  tag=${S}_$impl
  timeout 150 ncu --clock-control none --profile-from-start off --set full --import-source no -o /tmp/ncu_$tag \
    python3 bench/ncu_peers.py $S $impl > /tmp/ncu_${tag}_log.txt 2>&1
  tail -1 /tmp/ncu_${tag}_log.txt
  ncu -i /tmp/ncu_$tag.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > "$OUT/ncu_${tag}_sass.csv.gz"
  ncu -i /tmp/ncu_$tag.ncu-rep --page details --print-details all > "$OUT/ncu_${tag}.txt" 2>&1
  grep -a -E "^\s+Duration|DRAM Throughput  |SM Frequency" "$OUT/ncu_${tag}.txt" | head -4
done
done
