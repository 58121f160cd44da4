#!/usr/bin/env bash
# session 2026-12-01 g, call 3: at 46e9ab7+ (3c7be0e's kernels; fp32-out test bounds at 2^-10): the wgrad and fp32-out
# GPU tests three times (fresh seeds), A/B against 758b4d6 (.devrun/m8) on ragged grouped shapes (the bench's valid
# rows), the pair against unpaired and 128x256 on the per-warpgroup short-K tiles, then bench sections 1 and 3 again.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
export DG_JIT_CACHE_DIR=/tmp/dgcache
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 250 > "$OUT/clocks.csv" 2>&1 &
LOGGER=$!
(timeout 240 python3 bench/deepgemm_peer.py .devrun/dg --jobs 4 > /tmp/dg_warm.txt 2>&1; echo "rc $?" >> /tmp/dg_warm.txt) &
DGPID=$!
for i in 1 2 3; do
  timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_wgrad.py "tests/test_gpu_gemm.py::test_fp32_out_and_accumulate_match_float64" -m gpu -rfEs >> "$OUT/gpu_tests_fp32.txt" 2>&1
  tail -1 "$OUT/gpu_tests_fp32.txt"
done
grep -E "^FAILED|Error" "$OUT/gpu_tests_fp32.txt" | head -5
timeout 150 python3 bench/ab_versions.py --rounds 7 --before .devrun/m8 --out "$OUT/ab_versions_ragged.json" \
  m1:1024x4096x7168@775 m1:1024x7168x2048@907 m2:512x4096x7168@500 m2:512x7168x2048@465 m4:256x7168x2048@250 \
  g4:8576x4096x7168@8496 g4:8960x7168x2048@8894 g8:4096x7168x2048@3982 g32:256x7168x2048@250 g32:256x4096x7168@250 \
  2>&1 | grep -v -i warn | tail -10 | cut -c1-150
timeout 100 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_configs.json" --shape 4096x32768x512 \
  --shape 2048x32768x512 --shape 4096x7168x2048 --config cluster=2 --config block_m=128,block_n=256 2>&1 \
  | grep -v -i warn | tail -8 | cut -c1-160
wait $DGPID
timeout 100 python3 bench/bench_gemm.py --sections 1 3 --deepgemm .devrun/dg --out "$OUT/bench.json" 2>&1 \
  | grep -v -i warn | grep -E "^(section|[0-9]+ rows|Geometric|gemmgen at)" | cut -c1-250
kill $LOGGER
