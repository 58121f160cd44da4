#!/usr/bin/env bash
# session l, call 1: the whole GPU suite on HEAD (swap_ab's GPU tests run for the first time); swap_ab against the
# default at wide-N decode shapes (>= 112 weight tiles) and two narrow ones, settled rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
start=$(date +%s)
timeout 330 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $? in $(( $(date +%s) - start )) s"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -12
timeout 200 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_swap.json" \
  --shape 1x24576x1536 --shape 8x24576x1536 --shape 32x24576x1536 --shape 8x32768x512 --shape 8x7168x16384 \
  --shape 32x7168x16384 --shape 8x4096x7168 --shape 8x2112x7168 \
  --config swap_ab=1 --config swap_ab=1,stages=8 --config swap_ab=1,stages=12 2>&1 | grep -v -i warn | tail -12
