#!/usr/bin/env bash
# session 2026-12-01 call 2: forced tiles against the default (DeepGEMM's picks: 64x56 at N = 7168, 64-row tiles
# at M = 128), then ncu of gemmgen, DeepGEMM and cuBLASLt per-tensor on 4096x7168x16384 side by side.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
export DG_JIT_CACHE_DIR=/tmp/dgcache
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 150 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_n7168.json" --shape 64x7168x2048 \
  --shape 64x7168x16384 --shape 32x7168x16384 --shape 1x7168x16384 --shape 32x7168x2048 \
  --config block_n=56 --config block_n=48 --config block_n=112 2>&1 | grep -v -i warn | tail -25
timeout 100 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_m128.json" --shape 128x4096x7168 \
  --shape 128x2112x7168 --config block_m=64,block_n=64,k_splits=1 --config block_m=64,block_n=32,k_splits=1 \
  --config block_m=64,block_n=48,k_splits=1 --config block_m=64,block_n=56,k_splits=1 2>&1 | grep -v -i warn | tail -14
S=4096x7168x16384
for impl in gemmgen deepgemm tensorwise; do
  timeout 100 ncu --clock-control none --profile-from-start off --set full --import-source no -o "$OUT/ncu_$impl" \
    python3 bench/ncu_peers.py $S $impl --deepgemm .devrun/dg > "$OUT/ncu_${impl}_log.txt" 2>&1
  tail -2 "$OUT/ncu_${impl}_log.txt"
  ncu -i "$OUT/ncu_$impl.ncu-rep" --page details --print-details all > "$OUT/ncu_${impl}_details.txt" 2>&1
  ncu -i "$OUT/ncu_$impl.ncu-rep" --page raw --csv > "$OUT/ncu_${impl}_raw.csv" 2>&1
  ncu -i "$OUT/ncu_$impl.ncu-rep" --page source --csv --print-source sass 2>/dev/null | gzip > "$OUT/ncu_${impl}_sass.csv.gz"
  grep -E "^  [A-Za-z]|Duration|SM Frequency|Throughput|Issue Slots|Executed Ipc" "$OUT/ncu_${impl}_details.txt" | head -12
done
ls -la "$OUT"
