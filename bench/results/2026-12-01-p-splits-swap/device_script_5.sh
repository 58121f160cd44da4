#!/usr/bin/env bash
# session p, call 5: swapped with K splits in the workspace at 17..32 rows over few weight tiles (2112 / 1536 / 576 /
# 4096 x 7168; the M <= 16 forms: _few_tile_splits, _swap_splits) against the default, 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/gemmgen-cache && tar -xJf .devrun/pack/cache5.tar.xz -C /tmp/gemmgen-cache
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
ab() { local out=$1; shift; timeout 60 python3 bench/ab_configs.py --rounds 7 --out "$OUT/ab_$out.json" "$@" 2>&1 | grep -v -i warn | grep -E " x|Error" | tail -4; }
ab s2112 --shape 17x2112x7168 --shape 24x2112x7168 --shape 32x2112x7168 --config swap_ab=1,k_splits=4,split_global=1
ab s576 --shape 17x576x7168 --shape 24x576x7168 --shape 32x576x7168 --config swap_ab=1,k_splits=8,split_global=1
ab s4096 --shape 17x4096x7168 --shape 24x4096x7168 --shape 32x4096x7168 --config swap_ab=1,k_splits=2,split_global=1
ab s1536 --shape 17x1536x7168 --shape 24x1536x7168 --shape 32x1536x7168 --config swap_ab=1,k_splits=4,split_global=1
ls $OUT
