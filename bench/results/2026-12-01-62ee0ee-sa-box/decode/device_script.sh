#!/usr/bin/env bash
# call 9 (2026-12-01 b): the decode section (bench section 2, every peer but DeepGEMM) at the SA-box commit.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 150 python3 bench/bench_gemm.py --sections 2 --out "$OUT/bench.json" 2>&1 | grep -v -i warn \
  | grep -E "^(section|[0-9]+ rows|gemmgen at)" | cut -c1-200
