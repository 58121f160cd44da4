#!/usr/bin/env bash
# session 2026-12-01 e, call 8: select_config._short_k (a ring of one tile's k-blocks on the fewest CTAs that keep
# the rounds, at M <= 32 with K <= 512): the GPU suite, then this tree against b00adc7 (.devrun/m5), 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 290 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs > "$OUT/gpu_tests.txt" 2>&1
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAILED|Error" "$OUT/gpu_tests.txt" | head -5
timeout 120 python3 bench/ab_versions.py --rounds 7 --before .devrun/m5 --out "$OUT/ab_short_k.json" \
  1x32768x512 8x32768x512 16x32768x512 32x32768x512 64x32768x512 1x24576x1536 \
  2>&1 | grep -v -i warn | tail -6 | cut -c1-120
