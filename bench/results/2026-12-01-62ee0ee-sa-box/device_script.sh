#!/usr/bin/env bash
# call 8 (2026-12-01 b): the SA box of a_rows rows. GPU suite; ab_versions against a2a4e65 (main before it) on the
# decode shapes whose kernels have a_rows < 64, 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 100 python3 bench/ab_versions.py --rounds 7 --before .devrun/pre4 --out "$OUT/ab_sa_box.json" \
  32x4096x7168 1x4096x7168 1x2112x7168 8x2112x7168 32x2112x7168 1x7168x16384 8x7168x16384 32x7168x16384 \
  8x7168x2048 32x7168x2048 32x576x7168 2>&1 | grep -v -i warn | tail -12
timeout 240 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs > "$OUT/gpu_tests.txt" 2>&1
tail -3 "$OUT/gpu_tests.txt"; grep -E "^FAILED|Error" "$OUT/gpu_tests.txt" | head -5
