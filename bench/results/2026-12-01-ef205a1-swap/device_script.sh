#!/usr/bin/env bash
# session l, call 4: the final tree (A and B swapped unasked at M <= 16 over >= 64 weight tiles, the ring from the
# stream budget). The whole GPU suite while DeepGEMM's JIT builds (CPU); the picks against swap_ab=0 and the stage
# counts next to the model's; bench section 2 (decode) with every peer, 3 rotated passes.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
export DG_JIT_CACHE_DIR=/tmp/dgcache
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
(timeout 260 python3 bench/deepgemm_peer.py .devrun/dg --jobs 6 > /tmp/dg_warm.txt 2>&1; echo "dg warm rc $?" > /tmp/dg_rc.txt) &
DG=$!
start=$(date +%s)
timeout 300 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $? in $(( $(date +%s) - start )) s"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -8
wait $DG; cat /tmp/dg_rc.txt; tail -2 /tmp/dg_warm.txt
timeout 100 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_final.json" \
  --shape 8x7168x16384 --shape 16x7168x16384 --shape 16x24576x1536 --shape 16x4096x7168 --shape 16x7168x2048 \
  --shape 16x32768x512 --shape 1x7168x2048 \
  --config swap_ab=0 --config swap_ab=1,stages=12 --config swap_ab=1,stages=16 2>&1 | grep -v -i warn | tail -8
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 250 > "$OUT/clocks.csv" 2>&1 &
LOGGER=$!
timeout 200 python3 bench/bench_gemm.py --passes 3 --sections 2 --deepgemm .devrun/dg --out "$OUT/bench.json" 2>&1 \
  | grep -a -v -i warn | grep -a -E "^(section|[0-9]+ rows|Geometric|gemmgen at|Traceback|[A-Za-z]*Error)" | cut -c1-700
kill $LOGGER
ls $OUT
