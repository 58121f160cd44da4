#!/usr/bin/env bash
# session 2026-12-01 h, call 4: the final tree (60636e6: PDL triggered by the TMA thread after its last load): the
# whole GPU suite, pdl_chain on all 13 shapes with DeepGEMM (7 rotated rounds), and the isolated kernel time of
# pdl=1 against the default (ab_configs, 7 rounds) on four shapes.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
export DG_JIT_CACHE_DIR=/tmp/dgcache
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 290 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs > "$OUT/gpu_tests.txt" 2>&1
echo "suite rc $?"; tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAILED|^ERROR|SKIPPED" "$OUT/gpu_tests.txt" | cut -c1-200 | head -8
timeout 150 python3 bench/pdl_chain.py --deepgemm .devrun/dg --out "$OUT/pdl_chain.json" 2>&1 | grep -v -i warn | cut -c1-300
timeout 100 python3 bench/ab_configs.py --out "$OUT/ab_pdl_isolated.json" --rounds 7 --shape 1x7168x2048 \
  --shape 1x7168x16384 --shape 32x4096x7168 --shape 4096x7168x2048 --config pdl=1 2>&1 | grep -v -i warn | tail -12 | cut -c1-250
