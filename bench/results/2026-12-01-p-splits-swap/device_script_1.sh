#!/usr/bin/env bash
# session p, call 1: (a) M = 65..128 over few weight tiles: 128x32 tiles in 8 workspace K splits (and 64-row tiles in
# 8) against the default (4 splits); (b) the swapped decode kernel's split picks with a deeper ring; (c) swap_ab at
# 24..32 rows x 18432..36864 x 1536 again (evict_first and the workspace landed since v0.24 section 5). 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/gemmgen-cache && tar -xJf .devrun/cache1.tar.xz -C /tmp/gemmgen-cache
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
A="block_m=128,block_n=32,k_splits=8,split_global=1"
A2="block_m=64,block_n=32,k_splits=8,split_global=1"
sw() { echo "swap_ab=1,k_splits=$1,split_global=1,stages=$2"; }
ab() { local out=$1; shift; timeout 120 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_$out.json" "$@" 2>&1 | grep -v -i warn | grep -E " x|Error" | tail -12; }
ab few_a --shape 65x256x7168 --shape 96x256x7168 --shape 128x256x7168 --config $A --config $A2
ab few_b --shape 96x384x7168 --shape 128x384x7168 --shape 80x512x7168 --shape 128x512x7168 --shape 128x256x4096 --shape 128x256x16384 --config $A
ab ring_2112 --shape 1x2112x7168 --shape 8x2112x7168 --config $(sw 4 8) --config $(sw 4 10) --config $(sw 4 12)
ab ring_576 --shape 1x576x7168 --config $(sw 8 14) --config $(sw 8 16)
ab ring_4096 --shape 1x4096x7168 --config $(sw 2 12) --config $(sw 2 14)
ab swap32 --shape 32x24576x1536 --shape 24x24576x1536 --shape 32x36864x1536 --shape 32x18432x1536 --config swap_ab=1
# (d) why evict_first lost on 64-wide tiles at N = 2112 (256 rows) and won at 4096: DRAM bytes and L2 hit rate with
# L2 full of the flush's dirty lines (application replay: each pass after its own flush)
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
for s in "256x2112x7168 evict_first=0" "256x2112x7168 evict_first=1" "256x4096x7168 evict_first=0" "256x4096x7168 evict_first=1"; do
  set -- $s
  timeout 60 ncu --clock-control none --cache-control none --replay-mode application -k regex:sm90_ -s 2 -c 1 --metrics $M \
    python3 bench/ncu_one.py $1 flush $2 > "$OUT/ncu_${1}_$2.txt" 2>&1
  echo "$s"; grep -E "gpu__time|dram__bytes|hit_rate" "$OUT/ncu_${1}_$2.txt"
done
ls $OUT
