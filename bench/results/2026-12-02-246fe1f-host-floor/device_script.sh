#!/usr/bin/env bash
# session q, call 7: bench section 4 (3 passes) with the torch_floor row beside the cases; host_overhead.py after it.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 200 python3 bench/bench_gemm.py --passes 3 --sections 4 --out "$OUT/bench.json" 2>&1 | grep -a -v -i warn | tail -2
grep -A8 "| impl |" "$OUT/bench.md"
timeout 100 python3 bench/host_overhead.py 64x7168x2048 --json "$OUT/host_64x7168x2048.json" 2>&1 | grep -v -i warn \
  | grep -E "^(same|new|row)|fast_dense|slots|add_"
