#!/usr/bin/env bash
# session l, call 6: swapped also at 17..32 rows where the unswapped pick is a one-set 64x160 / 64x192 tile. GPU
# tests of the swapped and affected shapes; the picks against swap_ab=0 (7 rounds); bench section 2, no DeepGEMM.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs -k "swap or 24576 or 18432 or sass or pdl" > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $?"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -8
timeout 150 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_wide_m.json" \
  --shape 17x24576x1536 --shape 32x24576x1536 --shape 24x18432x2048 --shape 32x18432x7168 --shape 32x36864x1536 \
  --shape 20x24576x7168 --shape 32x36864x512 \
  --config swap_ab=0 --config swap_ab=1,stages=16 2>&1 | grep -v -i warn | tail -8
timeout 150 python3 bench/bench_gemm.py --passes 2 --sections 2 --out "$OUT/bench.json" 2>&1 \
  | grep -a -v -i warn | grep -a -E "^(section|[0-9]+ rows|Geometric|gemmgen at|Traceback|[A-Za-z]*Error)" | cut -c1-700
