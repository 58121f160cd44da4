#!/usr/bin/env bash
# session 2026-12-01 f, call 7: the final tree (1c8bfca; each kernel is b6df05f's or dfb7fbc's pick, whose full GPU
# suites passed in calls 3 and 6): the dense GPU tests again, as far as the device budget allows.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 150 python3 -m pytest -v -p no:cacheprovider tests/test_gpu_gemm.py -m gpu -rfEs > "$OUT/gpu_tests_dense.txt" 2>&1
echo "rc $?"; grep -c PASSED "$OUT/gpu_tests_dense.txt"; grep -E "FAILED|ERROR" "$OUT/gpu_tests_dense.txt" | head -5; tail -1 "$OUT/gpu_tests_dense.txt"
