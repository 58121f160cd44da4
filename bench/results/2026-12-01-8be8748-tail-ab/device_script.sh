#!/usr/bin/env bash
# session 2026-12-01 e, call 2: the shifted last M block (plan_kernel.a_tail_shift): the GPU suite, then this tree
# against the commit before it (.devrun/m4 = fd73438's gemmgen) over tail M values and full-M controls, 5 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 300 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs > "$OUT/gpu_tests.txt" 2>&1
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAILED|Error" "$OUT/gpu_tests.txt" | head -8
timeout 280 python3 bench/ab_versions.py --rounds 5 --before .devrun/m4 --out "$OUT/ab_tail.json" \
  136x7168x2048 200x7168x2048 200x2112x7168 264x4096x7168 300x4096x7168 520x7168x2048 776x7168x2048 \
  1000x2112x7168 2056x7168x2048 4000x7168x16384 264x7168x16384 136x24576x1536 \
  b:200x2112x7168 b:264x4096x7168 t:136x7168x2048 \
  256x7168x2048 320x4096x7168 4096x7168x2048 128x2112x7168 1x2112x7168 \
  2>&1 | grep -v -i warn | tail -22 | cut -c1-150
