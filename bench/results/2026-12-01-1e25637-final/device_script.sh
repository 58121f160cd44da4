#!/usr/bin/env bash
# session l, call 5: the SASS-pass GPU test with 1x7168x16384 pinned unswapped; the swapped decode kernels' GPU
# cases once more; bench section 4 (host path) on the final tree, 2 passes.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_sass_passes.py tests/test_gpu_gemm.py -m gpu -rfEs -k "sass or swap or 7168x16384 or 24576" > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $?"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -8
timeout 150 python3 bench/bench_gemm.py --passes 2 --sections 4 --out "$OUT/bench_host.json" 2>&1 | grep -a -v -i warn | tail -12
