#!/usr/bin/env bash
# session 2026-12-01 j, call 9: the whole GPU suite on the final tree (review fixes: legality, pinned fields, meta).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
start=$(date +%s)
timeout 380 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $? in $(( $(date +%s) - start )) s"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -8
