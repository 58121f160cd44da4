#!/usr/bin/env bash
# session call 2 (main 717cde7): masked tile choice with 256-row tiles (legal, never swept: the wave rule over the
# expected rows would pick 256x128 for 1 x 1024 x 4096 x 7168: one wave of 128 tiles), and the contiguous 32 x 256
# cases (0.94 / 0.97 of their bars) over the built-in config list.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
CFGS=""
for c in 128,128 128,160 128,192 256,128 256,112 256,96 256,64 64,128 64,192; do
  CFGS="$CFGS --config block_m=${c%,*},block_n=${c#*,}"
done
timeout 300 python3 bench/sweep_grouped.py --out "$OUT/sweep_masked.json" $CFGS masked:1:1024:4096:7168 \
  masked:1:1024:7168:2048 masked:2:512:4096:7168 masked:2:512:7168:2048 masked:4:256:4096:7168 \
  masked:4:256:7168:2048 2>&1 | grep -v -i warn
timeout 200 python3 bench/sweep_grouped.py --out "$OUT/sweep_contig32.json" contiguous:32:256:4096:7168 \
  contiguous:32:256:7168:2048 2>&1 | grep -v -i warn
