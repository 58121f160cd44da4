#!/usr/bin/env bash
# session call 4: interleaved config A/B (bench/ab_configs.py, 7 rounds) of A slots of M's rows on the wide-N decode
# shapes the stream rule leaves to the prefill rule (call 3's single-shot sweep: within its noise), and M = 1 at
# 2112x7168 with wider A slots (M = 1 runs ~0.9 us slower than M = 8 on the same kernel: call 2).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 300 python3 bench/ab_configs.py --out "$OUT/ab_cfg_wide.json" --rounds 7 \
  --shape 1x24576x1536 --shape 8x24576x1536 --shape 32x24576x1536 --shape 1x32768x512 --shape 8x32768x512 \
  --shape 32x32768x512 --config a_rows=m,block_n=192 --config a_rows=m,block_n=128 \
  --config a_rows=m,block_n=128,stages=12 --config a_rows=m,block_n=96 2>&1 | grep -v -i warn
timeout 100 python3 bench/ab_configs.py --out "$OUT/ab_cfg_m1.json" --rounds 7 --shape 1x2112x7168 --shape 8x2112x7168 \
  --config a_rows=16 --config a_rows=32 --config a_rows=16,stages=16 2>&1 | grep -v -i warn
