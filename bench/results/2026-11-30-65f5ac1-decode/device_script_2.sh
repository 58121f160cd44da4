#!/usr/bin/env bash
# session call 3: the wide-N decode shapes (N = 24576 / 32768, which the stream rule leaves to the prefill rule) and
# 64x24576x1536 (0.96 of its bar, never swept): every block_n 96-192 x split, with A slots of M's rows and deeper rings.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 280 python3 bench/sweep_decode.py --out "$OUT/sweep_wide_arows.json" --m 1 8 32 --nk 24576x1536 32768x512 \
  --a-rows --stages 8 16 --bn 96 128 160 192 2>&1 | grep -v -i warn
timeout 150 python3 bench/sweep_decode.py --out "$OUT/sweep_wide_m64.json" --m 64 --nk 24576x1536 32768x512 \
  --stages 6 8 16 --bn 96 128 160 192 2>&1 | grep -v -i warn
