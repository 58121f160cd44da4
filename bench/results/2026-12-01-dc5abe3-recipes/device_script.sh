#!/usr/bin/env bash
# session 2026-12-01 i, call 9: the ring trim extended to the tensor, channel and bf16 recipes (working tree on
# dc5abe3) against dc5abe3's kernels, then the whole GPU suite on the extended tree.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)-dirty
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 110 python3 bench/ab_versions.py --before .devrun/before --out "$OUT/ab_recipes.json" --rounds 7 \
  t:1x7168x16384 t:32x7168x16384 t:8x7168x2048 t:1x4096x7168 c:32x7168x16384 c:8x7168x2048 \
  b:1x2112x7168 b:32x7168x16384 b:1x7168x2048 b:32x4096x7168 b:64x7168x2048 b:8x7168x16384 2>&1 | grep -a -v -i warn
timeout 250 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $?"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -8
