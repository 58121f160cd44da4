#!/usr/bin/env bash
# session o, call 6: _wide_splits' ring sized for the workspace (1-2 stages deeper) against the depth calls 1-5 ran
# (pinned), 7 rounds; then the GPU suite but the grouped file (grouped kernels unchanged).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
ab() { local out=$1; shift; timeout 40 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_depth_$out.json" "$@" 2>&1 | grep -v -i warn | grep " x" | tail -2; }
ab a --shape 128x2112x7168 --config stages=7
ab b --shape 112x1536x7168 --config stages=7
ab c --shape 96x1024x4096 --config stages=12
ab d --shape 128x4096x7168 --config stages=7
ab e --shape 65x2112x7168 --config stages=10
ab f --shape 128x576x7168 --config stages=9
timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests --ignore=tests/test_gpu_grouped.py -rs > "$OUT/gpu_suite.txt" 2>&1; echo "gpu suite rc $?"; tail -3 "$OUT/gpu_suite.txt"
