#!/usr/bin/env bash
# session 2026-12-01 e, call 7: ncu (call 6) had DeepGEMM's 1x32768x512 (the same 64x128 tile, 4 stages, 128 CTAs,
# 116 KB of shared memory) with its SMs active 80% of the elapsed cycles against gemmgen's 67% (8 stages, 132 CTAs,
# 159 KB). Forced: 4 stages, 128 CTAs, both, against the default (7 interleaved rounds, outputs compared bitwise).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 200 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_n32768.json" --shape 1x32768x512 --shape 8x32768x512 \
  --shape 32x32768x512 --config a_rows=m,stages=4 --config a_rows=m,num_sms=128 --config a_rows=m,stages=4,num_sms=128 \
  2>&1 | grep -v -i warn | tail -14 | cut -c1-160
timeout 150 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_stages.json" --shape 1x7168x2048 --shape 1x24576x1536 \
  --config a_rows=m,stages=4 --config a_rows=m,stages=8 2>&1 | grep -v -i warn | tail -8 | cut -c1-160
