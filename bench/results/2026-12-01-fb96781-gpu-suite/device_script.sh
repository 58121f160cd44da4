#!/usr/bin/env bash
# session 2026-12-01 k, call 1: the owed GPU suite on HEAD (99854fd + bench script), then contiguous tiles on the
# bench's own draws (ab_grouped_configs).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
start=$(date +%s)
timeout 330 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $? in $(( $(date +%s) - start )) s"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -8
timeout 200 python3 bench/ab_grouped_configs.py --rounds 5 --out "$OUT/ab_contig.json" \
  --case contiguous:4x8192x4096x7168 --case contiguous:8x4096x4096x7168 \
  --config block_n=256,wave_n=128 --config block_n=256,wave_n=128,cluster=1 --config block_n=192,cluster=1 \
  --config block_n=128 2>&1 | tail -20
