#!/usr/bin/env bash
# session o, call 5: the GPU suite on the final tree (evict_first at 129..512 rows on >= 96-wide tiles).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 330 python3 -m pytest -q -p no:cacheprovider -m gpu tests --ignore=tests/test_gpu_grouped.py -rs > "$OUT/gpu_suite.txt" 2>&1; echo "gpu suite rc $?"; tail -4 "$OUT/gpu_suite.txt"
timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_grouped.py -rs > "$OUT/gpu_grouped.txt" 2>&1; echo "grouped rc $?"; tail -2 "$OUT/gpu_grouped.txt"
