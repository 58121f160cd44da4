#!/usr/bin/env bash
# session l, call 8: the swap rule with the round-fill condition: swapped GPU cases; its picks against swap_ab=0 and
# swap_ab=1 at filled and unevenly filled rounds, 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 100 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs -k "swap or 24576" > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $?"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -8
timeout 120 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_fill.json" \
  --shape 8x10240x7168 --shape 8x18432x7168 --shape 8x36864x1536 --shape 8x24576x1536 \
  --config swap_ab=0 --config swap_ab=1 2>&1 | grep -v -i warn | tail -8
