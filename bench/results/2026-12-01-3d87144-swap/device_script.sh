#!/usr/bin/env bash
# session l, call 3: swapped decode picked unasked at M <= 8 over >= 64 weight tiles. GPU tests of swapped kernels
# (incl. the unpinned pdl case); the rule's pick (16 stages) against the unswapped (swap_ab=0) and 8 / 12 stages;
# M = 16 / 32 swapped at 8 / 12 / 16 stages against the unswapped default. 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
start=$(date +%s)
timeout 150 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs -k "swap or pdl or 24576 or 4096x7168" > "$OUT/gpu_tests_swap.txt" 2>&1
echo "gpu tests rc $? in $(( $(date +%s) - start )) s"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests_swap.txt" | tail -12
S=""; for m in 1 8; do for nk in 24576x1536 4096x7168 7168x16384 7168x2048 32768x512; do S="$S --shape ${m}x$nk"; done; done
timeout 200 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_rule.json" $S \
  --config swap_ab=0 --config swap_ab=1,stages=8 --config swap_ab=1,stages=12 2>&1 | grep -v -i warn | tail -12
S=""; for m in 16 32; do for nk in 24576x1536 4096x7168 7168x16384 7168x2048; do S="$S --shape ${m}x$nk"; done; done
timeout 200 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_m16_32.json" $S \
  --config swap_ab=1 --config swap_ab=1,stages=8 --config swap_ab=1,stages=12 2>&1 | grep -v -i warn | tail -12
