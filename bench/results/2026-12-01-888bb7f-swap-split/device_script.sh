#!/usr/bin/env bash
# session m, call 10: the swapped 2-way K split picked unasked at 4096 wide: GPU cases at N = 4096 / 4224; the pick
# against one split and the unswapped kernel (7 rounds), at the measured K and an unmeasured longer one.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 100 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs -k "4096 and not grouped" > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $?"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -6
timeout 90 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_swap_split.json" \
  --shape 1x4096x7168 --shape 8x4096x7168 --shape 16x4096x7168 --shape 8x4096x16384 --shape 8x4224x7168 \
  --config swap_ab=1,k_splits=1 --config swap_ab=0 2>&1 | grep -v -i warn | tail -6
