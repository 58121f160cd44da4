#!/usr/bin/env bash
# session m, call 2: the 128-row swap rule's picks at untimed widths and K; the masked layout at decode sizes
# (a few tokens per expert) against its bytes and a dense swapped kernel over the same weights.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 100 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs -k "swap or 11000" > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $?"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -8
timeout 150 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_swap128_rule.json" \
  --shape 8x8704x2048 --shape 1x14336x7168 --shape 8x11264x512 --shape 16x13312x1536 --shape 8x9216x7168 \
  --config swap_ab=0 --config swap_ab=1,block_m=64 2>&1 | grep -v -i warn | tail -8
timeout 220 python3 bench/masked_decode_probe.py --rounds 5 --out "$OUT/masked_decode.json" \
  --case 8x8x7168x2048 --case 32x8x7168x2048 --case 32x8x4096x7168 --case 8x16x4096x7168 --case 32x32x4096x7168 \
  --config block_n=64,stages=12 --config block_n=256 --config block_n=128,stages=6 2>&1 | grep -v -i warn | tail -8
