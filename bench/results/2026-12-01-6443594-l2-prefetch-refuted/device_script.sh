#!/usr/bin/env bash
# session 2026-12-01 h, call 6: the L2 prefetch of B before the PDL wait (dense). The PDL GPU tests and forced PDL
# cases on this tree; pdl_chain on the 13 shapes with this tree and with 60636e6's (no prefetch), interleaved by
# process (before, after, before, after); pdl=1 isolated against the default on two shapes.
set -u
export PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
PYTHONPATH=. bash bench/device_run.sh env > /dev/null
PYTHONPATH=. timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_pdl.py tests/test_gpu_gemm.py -k pdl -rfEs > "$OUT/gpu_tests_pdl.txt" 2>&1
echo "tests rc $?"; tail -1 "$OUT/gpu_tests_pdl.txt"; grep -E "^FAILED|^ERROR" "$OUT/gpu_tests_pdl.txt" | head -5
for run in before after before2 after2; do
  case $run in before*) P=.devrun/pbefore:. ;; *) P=. ;; esac
  echo "== $run"
  PYTHONPATH=$P timeout 70 python3 bench/pdl_chain.py --rounds 5 --out "$OUT/chain_$run.json" 2>&1 | grep -v -i warn \
    | sed -E 's/, cublaslt_tensorwise [0-9.]+//; s/ us\/layer; isolated gemmgen [0-9.]+; pdl bitwise/ bitwise/' | cut -c1-120
done
PYTHONPATH=. timeout 40 python3 bench/ab_configs.py --out "$OUT/ab_pdl_isolated.json" --rounds 5 --shape 1x7168x2048 \
  --shape 1x4096x7168 --config pdl=1 2>&1 | grep -v -i warn | tail -3 | cut -c1-200
