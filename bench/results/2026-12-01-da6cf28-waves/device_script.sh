#!/usr/bin/env bash
# call 1 (2026-12-01 b): column waves (next/n-waves). GPU suite; contiguous A/B against main 454b7b8 (interleaved,
# 7 rounds); dense 128x256 (column waves) forced against the default; masked and the bench's contiguous draws with
# 128x256 forced (single shot, two passes).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 330 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs 2>&1 | tail -25 > "$OUT/gpu_tests.txt"
tail -4 "$OUT/gpu_tests.txt"
timeout 150 python3 bench/ab_versions.py --rounds 7 --before .devrun/pre3 --out "$OUT/ab_contig.json" \
  g4:8192x4096x7168 g4:8192x7168x2048 g8:4096x4096x7168 g8:4096x7168x2048 g32:256x4096x7168 g32:256x7168x2048 \
  2>&1 | tail -8
timeout 120 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_dense256.json" --config block_m=128,block_n=256 \
  --shape 4096x7168x16384 --shape 8192x8192x8192 --shape 4096x4096x7168 --shape 4096x7168x2048 \
  --shape 4096x24576x1536 2>&1 | tail -6
for pass in 1 2; do
timeout 120 python3 bench/sweep_grouped.py --out "$OUT/sweep_grouped_$pass.json" --config block_m=128,block_n=256 \
  --config block_m=128,block_n=192 \
  contiguous:4:8192:4096:7168 contiguous:4:8192:7168:2048 contiguous:32:256:4096:7168 contiguous:32:256:7168:2048 \
  masked:1:1024:4096:7168 masked:2:512:4096:7168 masked:4:256:7168:2048 masked:2:512:7168:2048 2>&1 | grep -v "^ *$" | tail -40
done
