#!/usr/bin/env bash
# One device call: environment facts, the GPU test suite, sanitizer on small shapes, the benchmark.
# Usage (on the H200, from the repo root): bash bench/device_run.sh [smoke|full|bench] ; logs under $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache
mode=${1:-full}
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  python3 -c "import torch, cuda.bindings; from cuda.bindings import nvrtc; print('torch', torch.__version__, 'cuda.bindings', cuda.bindings.__version__, 'nvrtc', nvrtc.nvrtcVersion()[1:])"
} 2>&1 | tee "$OUT/env.txt"
if [ "$mode" = smoke ] || [ "$mode" = full ]; then
  timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_gemm.py -k "7x24x16 or 129x136x1280" 2>&1 | tail -30
  timeout 240 compute-sanitizer --tool memcheck python3 -m pytest -q -p no:cacheprovider tests/test_gpu_gemm.py -k "129x136x1280" 2>&1 | tail -15 > "$OUT/sanitizer.txt"
  tail -5 "$OUT/sanitizer.txt"
fi
if [ "$mode" = full ]; then
  set -o pipefail
  timeout 400 python3 -m pytest -v -p no:cacheprovider tests/test_gpu_gemm.py -rA 2>&1 | tee "$OUT/gpu_tests.log" | grep -E "PASS|FAIL|ERROR|passed|failed" | tail -45
fi
if [ "$mode" = bench ] || [ "$mode" = full ]; then
  timeout 300 python3 bench/bench_gemm.py --out "$OUT/bench.json" 2>&1 | tail -30
fi
if [ "$mode" = sweep ] || [ "$mode" = full ]; then
  shift || true
  (cd bench && PYTHONPATH=.. timeout 300 python3 sweep.py --out "$OUT/sweep.json" --shapes ${SWEEP_SHAPES:-4096x2112x7168 4096x7168x16384 128x2112x7168 64x2112x7168 128x7168x2048}) 2>&1 | tail -45
fi
