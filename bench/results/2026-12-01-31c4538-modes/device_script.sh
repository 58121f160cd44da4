#!/usr/bin/env bash
# session 2026-12-01 g, call 5: per-launch kernel times (L2 flushed) of the bench cases whose gemmgen time moved
# between the 3 passes of call 4 while the peers' did not: masked 1 x 1024 x 4096 x 7168 (46.0 / 56.0 / 55.5 us),
# dense 4096x4096x7168 (167 / 194 / 183), with the masked 7168x2048 case as a control; this tree against 758b4d6.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 250 > "$OUT/clocks.csv" 2>&1 &
LOGGER=$!
timeout 150 python3 bench/masked_modes.py --before .devrun/m8 --out "$OUT/modes.json" --rounds 6 \
  --case masked,1,1024,4096,7168 --case masked,1,1024,7168,2048 --case dense,4096,4096,7168 2>&1 | grep -v -i warn | tail -8
kill $LOGGER
