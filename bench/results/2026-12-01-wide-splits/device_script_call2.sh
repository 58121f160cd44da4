#!/usr/bin/env bash
# session o, call 2: the GPU suite on the _wide_splits tree, and the rule's other unmeasured picks against the tree
# before it (K = 7168 at N = 3072 / 2560 / 1024, K = 16384, 512 x 4096).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 330 python3 -m pytest -q -p no:cacheprovider -m gpu tests --ignore=tests/test_gpu_grouped.py -rs > "$OUT/gpu_suite.txt" 2>&1; echo "gpu suite rc $?"; tail -4 "$OUT/gpu_suite.txt"
timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_grouped.py -rs > "$OUT/gpu_grouped.txt" 2>&1; echo "grouped rc $?"; tail -2 "$OUT/gpu_grouped.txt"
timeout 140 python3 bench/ab_versions.py --before .devrun/before --out "$OUT/ab_versions_2.json" --rounds 7 \
  128x3072x7168 128x2560x7168 96x1024x7168 128x1024x7168 96x2048x16384 128x4096x16384 65x512x4096 96x2112x7168 \
  2>&1 | grep -v -i warn | tail -10
