#!/usr/bin/env bash
# session o, call 3: bench sections 1 and 2 with every peer (DeepGEMM built by its own JIT), 3 rotated passes, on the
# _wide_splits tree. While DeepGEMM's JIT builds (CPU): the weights loaded evict_first at 129..2048 rows, pinned
# against the default (data for v0.25 Next 2; nothing changed).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
export DG_JIT_CACHE_DIR=/tmp/dgcache
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
(timeout 255 python3 bench/deepgemm_peer.py .devrun/dg --jobs 6 > /tmp/dg_warm.txt 2>&1; echo "dg warm rc $?" > /tmp/dg_rc.txt) &
DG=$!
timeout 230 python3 bench/ab_configs.py --rounds 5 --out "$OUT/ab_evict_first_prefill.json" \
  --shape 256x2112x7168 --shape 256x7168x16384 --shape 512x4096x7168 --shape 512x7168x2048 --shape 1024x4096x7168 \
  --shape 2048x7168x2048 --config evict_first=1 2>&1 | grep -v -i warn | grep " x" | tail -8
wait $DG; cat /tmp/dg_rc.txt; tail -2 /tmp/dg_warm.txt
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 250 > "$OUT/clocks.csv" 2>&1 &
LOGGER=$!
timeout 320 python3 bench/bench_gemm.py --passes 3 --sections 1 2 --deepgemm .devrun/dg --out "$OUT/bench.json" 2>&1 \
  | grep -a -v -i warn | grep -a -E "^(section|[0-9]+ rows|Geometric|gemmgen at|Traceback|[A-Za-z]*Error)" | cut -c1-700
kill $LOGGER
ls $OUT
