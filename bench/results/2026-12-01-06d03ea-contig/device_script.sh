#!/usr/bin/env bash
# session k, call 2: dense GPU tests with live-row promotion; live rows against HEAD (ab_versions); contiguous
# 128x256 column-wave tiles against the default on the bench's draws and on full experts, settled 1 s per timing.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
start=$(date +%s)
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_gemm.py -m gpu -rfEs > "$OUT/gpu_tests_dense.txt" 2>&1
echo "dense gpu tests rc $? in $(( $(date +%s) - start )) s"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests_dense.txt" | tail -5
timeout 150 python3 bench/ab_versions.py --before .devrun/before --rounds 7 --out "$OUT/ab_live_rows.json" \
  1x24576x1536 8x24576x1536 32x24576x1536 1x7168x16384 8x4096x7168 32x7168x2048 1x2112x7168 8x576x7168 \
  64x24576x1536 64x7168x2048 2>&1 | grep -v Warn | tail -14
timeout 330 python3 bench/ab_grouped_configs.py --rounds 7 --settle-s 1 --out "$OUT/ab_contig.json" \
  --case contiguous:4x8192x4096x7168 --case contiguous:8x4096x4096x7168 \
  --case contiguous:4x8192x4096x7168@8192 --case contiguous:8x4096x4096x7168@4096 \
  --case contiguous:4x8192x7168x2048 --case contiguous:8x4096x7168x2048 \
  --config block_n=256,wave_n=128 --config block_n=256,wave_n=128,cluster=1 2>&1 | grep -v -i warn | tail -20
