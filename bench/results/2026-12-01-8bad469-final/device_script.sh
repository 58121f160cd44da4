#!/usr/bin/env bash
# session n, call 6: the final tree: GPU suite (all but the grouped file: grouped kernels unchanged but for the
# config comment), then bench sections 1-2 (3 rotated passes; no DeepGEMM: its JIT build costs ~4 min of the budget).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 250 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs --ignore=tests/test_gpu_grouped.py \
  > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $?"; grep -a -E "^FAILED|^ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -8
timeout 280 python3 bench/bench_gemm.py --passes 3 --sections 1 2 --out "$OUT/bench.json" 2>&1 | grep -v -i warn | tail -4
ls "$OUT"
