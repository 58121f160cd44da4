#!/usr/bin/env bash
# session m, call 6: the final tree (evict_first at decode, its producer loop not unrolled; 128-row swapped tiles).
# While DeepGEMM's JIT builds (CPU): the GPU suite but the grouped file (grouped kernels render as in call 5, where
# the whole suite passed), and evict_first against the default policy on the final kernels; then bench sections 1
# and 2 with every peer, 3 rotated passes.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
export DG_JIT_CACHE_DIR=/tmp/dgcache
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
(timeout 255 python3 bench/deepgemm_peer.py .devrun/dg --jobs 6 > /tmp/dg_warm.txt 2>&1; echo "dg warm rc $?" > /tmp/dg_rc.txt) &
DG=$!
start=$(date +%s)
timeout 190 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs --ignore=tests/test_gpu_grouped.py > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $? in $(( $(date +%s) - start )) s"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -8
left=$(( 250 - ($(date +%s) - start) ))
if [ $left -gt 20 ]; then
timeout $left python3 bench/ab_configs.py --rounds 5 --out "$OUT/ab_evict_first_final.json" \
  --shape 8x7168x16384 --shape 8x24576x1536 --shape 8x4096x7168 --shape 64x7168x2048 --shape 40x7168x2048 \
  --shape 128x7168x2048 --config evict_first=0 2>&1 | grep -v -i warn | tail -6
fi
wait $DG; cat /tmp/dg_rc.txt; tail -2 /tmp/dg_warm.txt
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 250 > "$OUT/clocks.csv" 2>&1 &
LOGGER=$!
timeout 305 python3 bench/bench_gemm.py --passes 3 --sections 1 2 --deepgemm .devrun/dg --out "$OUT/bench.json" 2>&1 \
  | grep -a -v -i warn | grep -a -E "^(section|[0-9]+ rows|Geometric|gemmgen at|Traceback|[A-Za-z]*Error)" | cut -c1-700
kill $LOGGER
ls $OUT
