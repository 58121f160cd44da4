#!/usr/bin/env bash
# session 2026-12-01 h, call 2: programmatic dependent launch at f7bab16: the PDL GPU tests and the forced-config
# cases with pdl, then bench/pdl_chain.py (decode layers replayed from a CUDA graph; gemmgen without and with PDL,
# cuBLASLt per-tensor, DeepGEMM), 7 rotated rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
export DG_JIT_CACHE_DIR=/tmp/dgcache
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
ls /tmp/dgcache 2>/dev/null | wc -l
timeout 200 python3 -m pytest -v -p no:cacheprovider tests/test_gpu_pdl.py tests/test_gpu_gemm.py -k "pdl" -rfEs > "$OUT/gpu_tests_pdl.txt" 2>&1
echo "tests rc $?"; grep -E "PASSED|FAILED|ERROR|SKIPPED" "$OUT/gpu_tests_pdl.txt" | cut -c1-200 | head -20; tail -1 "$OUT/gpu_tests_pdl.txt"
timeout 330 python3 bench/pdl_chain.py --deepgemm .devrun/dg --out "$OUT/pdl_chain.json" 2>&1 | grep -v -i warn | cut -c1-300
