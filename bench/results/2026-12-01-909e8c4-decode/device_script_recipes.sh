#!/usr/bin/env bash
# call 5 (2026-12-01 b): is the decode kernel's time the promotion chain or the memory pipeline? The recipes section
# (gemmgen block / tensor / channel beside cuBLASLt tensorwise / rowwise, same quantised inputs) on three decode
# shapes, and deeper rings forced at 32x4096x7168 (interleaved, 7 rounds).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 150 python3 bench/bench_gemm.py --sections recipes --shape 32x4096x7168 --shape 1x24576x1536 \
  --shape 8x7168x16384 --shape 32x2112x7168 --out "$OUT/recipes.json" 2>&1 | grep -v -i warn | tail -3
python3 - "$OUT/recipes.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    if r.get("kernel_us"):
        print(f"{r['m']}x{r['n']}x{r['k']} {r['impl']:20s} {r.get('recipe',''):14s} {r.get('dtype',''):5s} {r['kernel_us']:7.2f} us  {r['config'][:70]}")
PY
timeout 100 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_decode.json" --shape 32x4096x7168 \
  --config a_rows=32,block_n=32,stages=24 --config a_rows=32,block_n=32,stages=32 --config a_rows=32,block_n=32,acc_sets=1 \
  --config a_rows=32,block_n=16 2>&1 | grep -v -i warn | tail -3
