#!/usr/bin/env bash
# session 2026-12-01 h, call 8: the PDL GPU tests with a primary kernel that triggers at once and writes out 200 us
# later; the negative control (the GEMM rendered without its wait) must be overwritten.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 100 python3 -m pytest -v -p no:cacheprovider tests/test_gpu_pdl.py tests/test_gpu_gemm.py -k pdl -rfEs > "$OUT/gpu_tests_pdl.txt" 2>&1
echo "tests rc $?"; grep -a -E "PASSED|FAILED|ERROR" "$OUT/gpu_tests_pdl.txt" | cut -c1-150; tail -1 "$OUT/gpu_tests_pdl.txt"
GEMMGEN_CACHE_DIR=/tmp/gemmgen-negative timeout 60 python3 .devrun/pdl_negative2.py 2>&1 | grep -a -v -i warn | tail -3 | tee "$OUT/negative.txt"
