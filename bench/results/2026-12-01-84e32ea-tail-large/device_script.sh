#!/usr/bin/env bash
# session 2026-12-01 e, call 3: the shifted-tail GPU test; the large-M tails again (9 rounds) against .devrun/m4
# (fd73438); does a 256-row tile over one partial M block (M = 136 of 256, no shift: M < block_m) pay too?
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
(python3 -c "from gemmgen.cli import main; main()" build --shape 136x32768x512 --config block_m=256 --config block_n=128 --config stages=3 --config raster_group=16 --config cluster=1 > /dev/null 2>&1) &
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_gemm.py -m gpu -k "shifted or rows_past" -rfEs > "$OUT/gpu_tail_tests.txt" 2>&1
tail -1 "$OUT/gpu_tail_tests.txt"; grep -E "^FAILED|Error" "$OUT/gpu_tail_tests.txt" | head -8
wait
timeout 60 python3 bench/m_tail_probe.py --rounds 7 --config block_m=256,block_n=128,stages=3,raster_group=16,cluster=1 \
  --out "$OUT/tail_256.json" 136x32768x512 200x32768x512 256x32768x512 2>&1 | grep -v -i warn
timeout 300 python3 bench/ab_versions.py --rounds 9 --before .devrun/m4 --out "$OUT/ab_tail_large.json" \
  2056x7168x2048 4104x7168x2048 4000x7168x16384 1032x4096x7168 8200x8192x8192 4100x2112x7168 \
  264x7168x16384 200x2112x7168 4096x7168x2048 2048x7168x2048 \
  2>&1 | grep -v -i warn | tail -12 | cut -c1-150
