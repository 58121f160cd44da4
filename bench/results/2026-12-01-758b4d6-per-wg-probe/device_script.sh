#!/usr/bin/env bash
# session 2026-12-01 g, call 1: per-warpgroup epilogue probe (bench/probes/per_wg_epilogue.patch applied on 758b4d6):
# the GPU suite with it, then A/B against 758b4d6 (.devrun/m8) on 2-warpgroup kernels and controls.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)+per_wg
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 250 > "$OUT/clocks.csv" 2>&1 &
LOGGER=$!
timeout 290 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs > "$OUT/gpu_tests.txt" 2>&1
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAILED|Error" "$OUT/gpu_tests.txt" | head -8
timeout 170 python3 bench/ab_versions.py --rounds 7 --before .devrun/m8 --out "$OUT/ab_versions.json" \
  4096x32768x512 2048x32768x512 4096x24576x1536 4096x7168x2048 4096x7168x16384 8192x8192x8192 \
  128x7168x2048 1024x7168x2048 t:4096x7168x2048 b:4096x7168x2048 w:4096x7168x4096 g8:4096x4096x7168 2>&1 \
  | grep -v -i warn | tail -12 | cut -c1-150
kill $LOGGER
