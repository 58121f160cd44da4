#!/usr/bin/env bash
# session call 3 (main 717cde7 + bench/sweep_masked_draws.py): masked tiles over 8 draws of the group sizes per bench
# case (a tile rule must be judged over draws: call 2's single draw had a different winner per case); contiguous
# cluster 1 against 2 on the big cases (call 2: cluster 1 won by 2-4% at 32 x 256).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 330 python3 bench/sweep_masked_draws.py --draws 8 --out "$OUT/masked_draws.json" 1:1024:4096:7168 \
  1:1024:7168:2048 2:512:4096:7168 2:512:7168:2048 4:256:4096:7168 4:256:7168:2048 2>&1 | grep -v -i warn
CFGS=""
for c in 128,160,1 128,160,2 128,192,1 128,192,2; do
  IFS=, read bm bn cl <<< "$c"; CFGS="$CFGS --config block_m=$bm,block_n=$bn,cluster=$cl"
done
timeout 200 python3 bench/sweep_grouped.py --out "$OUT/sweep_contig_cluster.json" $CFGS contiguous:4:8192:4096:7168 \
  contiguous:4:8192:7168:2048 contiguous:8:4096:4096:7168 contiguous:8:4096:7168:2048 2>&1 | grep -v -i warn
