#!/usr/bin/env bash
# session l, call 2: the GPU suite's swap_ab cases (new: K split over cluster ranks); swap_ab at k_splits 1/2/4/8
# against the default at the decode shapes (M = 8 and 32, the seven N x K of the bench), 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
start=$(date +%s)
timeout 150 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs -k "swap" > "$OUT/gpu_tests_swap.txt" 2>&1
echo "gpu swap tests rc $? in $(( $(date +%s) - start )) s"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests_swap.txt" | tail -12
S=""; for m in 8 32; do for nk in 2112x7168 24576x1536 32768x512 7168x16384 4096x7168 7168x2048 576x7168; do S="$S --shape ${m}x$nk"; done; done
timeout 400 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_swap_ks.json" $S \
  --config swap_ab=1 --config swap_ab=1,k_splits=2 --config swap_ab=1,k_splits=4 --config swap_ab=1,k_splits=8 \
  2>&1 | grep -v -i warn | tail -16
