#!/usr/bin/env bash
# session n, call 2: K splits meeting in a global workspace (split_global): GPU cases, then timed against the
# cluster hand-over and the picks at the few-tile decode shapes.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_split_global.py tests/test_gpu_gemm.py -m gpu -rfEs \
  -k "split or k_splits" > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $?"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -12
ab() { local out=$1; shift; timeout 100 python3 bench/ab_configs.py --rounds 7 --out "$OUT/$out.json" "$@" 2>&1 | grep -v -i warn | tail -6; }
ab ab_2112 --shape 1x2112x7168 --shape 8x2112x7168 --shape 32x2112x7168 \
  --config split_global=1 --config swap_ab=1,k_splits=4,split_global=1 --config swap_ab=1,k_splits=2,split_global=1 \
  --config swap_ab=1,k_splits=4 --config block_n=32,k_splits=4,split_global=1
ab ab_4096 --shape 1x4096x7168 --shape 8x4096x7168 \
  --config split_global=1 --config swap_ab=1,block_m=128,k_splits=4,split_global=1 \
  --config swap_ab=1,block_m=128,k_splits=2,split_global=1 --config swap_ab=1,k_splits=1
ab ab_4096_32 --shape 32x4096x7168 \
  --config swap_ab=1,k_splits=2,split_global=1 --config swap_ab=1,block_m=128,k_splits=4,split_global=1
ab ab_576 --shape 1x576x7168 --shape 8x576x7168 --shape 32x576x7168 \
  --config split_global=1 --config k_splits=7,split_global=1 --config k_splits=8,split_global=1 \
  --config swap_ab=1,k_splits=8,split_global=1
