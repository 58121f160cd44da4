#!/usr/bin/env bash
# session 2026-12-01 e, call 4: a_tail_shift on 64- and 128-row tiles only: the GPU suite (DeepGEMM compiles in the
# background), this tree against fd73438 (.devrun/m4) on tails and controls (5 rounds), the full bench 1-4 with
# DeepGEMM, a clock log.
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
timeout 290 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs > "$OUT/gpu_tests.txt" 2>&1
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAILED|Error" "$OUT/gpu_tests.txt" | head -5
timeout 150 python3 bench/ab_versions.py --rounds 5 --before .devrun/m4 --out "$OUT/ab_versions.json" \
  136x7168x2048 200x2112x7168 264x4096x7168 264x7168x16384 520x7168x2048 1032x4096x7168 b:200x2112x7168 \
  t:136x7168x2048 c:264x4096x7168 2056x7168x2048 128x2112x7168 64x2112x7168 256x7168x2048 1x2112x7168 \
  2>&1 | grep -v -i warn | tail -14 | cut -c1-120
wait $DGPID
grep -v -i warn /tmp/dg_warm.txt | tail -1
timeout 200 python3 bench/bench_gemm.py --sections 1 2 3 4 --deepgemm .devrun/dg --out "$OUT/bench.json" 2>&1 \
  | grep -v -i warn | grep -E "^(section|[0-9]+ rows|Geometric|gemmgen at)" | cut -c1-200
kill $LOGGER
