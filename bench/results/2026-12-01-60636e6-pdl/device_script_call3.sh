#!/usr/bin/env bash
# session 2026-12-01 h, call 3: where the PDL kernel lets the next kernel launch. f7bab16 triggers right after its
# wait (v1); v0: no trigger (the next kernel launches at this one's exit); v2: the producer's TMA thread after its
# last load; v3: the math threads after their last tile. pdl_chain on six shapes, each variant its own process.
set -u
export PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
PYTHONPATH=. bash bench/device_run.sh env > /dev/null
S="--shape 1x7168x16384 --shape 1x7168x2048 --shape 1x2112x7168 --shape 1x24576x1536 --shape 32x4096x7168 --shape 64x7168x2048"
for v in v1 v0 v2 v3 v1; do
  if [ $v = v1 ]; then P=.; else P=.devrun/p$v:.; fi
  echo "== $v"
  PYTHONPATH=$P timeout 100 python3 bench/pdl_chain.py $S --rounds 7 --out "$OUT/chain_$v.json" 2>&1 | grep -v -i warn | cut -c1-200
done
