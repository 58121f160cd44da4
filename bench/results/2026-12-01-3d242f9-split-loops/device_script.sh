#!/usr/bin/env bash
# session 2026-12-01 j, call 2: (1) GPU correctness of the new config cases (two sets with one main loop; column
# halves); (2) split_loops: two-set kernels that had one main loop per B-scale split place (every wgmma serialized)
# against 3d242f9; (3) column halves (64x192 / 128x192 tiles, wave_n 96, two sets) against the default one-set tile.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)-dirty
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_gemm.py -m gpu -k "acc_sets2" -rfEs > "$OUT/gpu_new_cases.txt" 2>&1
echo "gpu new cases rc $?"; tail -3 "$OUT/gpu_new_cases.txt"
timeout 150 python3 bench/ab_versions.py --before .devrun/before --out "$OUT/ab_split_loops.json" --rounds 7 \
  384x2112x7168 192x4096x7168 64x4608x7168 m4:128x7168x16384 m4:128x7168x2048 2>&1 | grep -a -v -i warn
H1=block_m=64,block_n=192,wave_n=96,acc_sets=2
timeout 200 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_halves.json" \
  --shape 1x24576x1536 --shape 8x24576x1536 --shape 32x24576x1536 --shape 64x24576x1536 \
  --config $H1 --config $H1,a_rows=m 2>&1 | grep -a -v -i warn | tail -20
H2=block_m=128,block_n=192,wave_n=96,acc_sets=2
timeout 120 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_halves_128.json" \
  --shape 128x24576x1536 --shape 256x24576x1536 --shape 4096x2112x7168 --config $H2 2>&1 | grep -a -v -i warn | tail -12
