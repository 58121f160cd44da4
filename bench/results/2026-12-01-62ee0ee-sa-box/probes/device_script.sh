#!/usr/bin/env bash
# call 7 (2026-12-01 b): probes (timing only, wrong results) of what the block recipe's decode stages wait for:
# p1 no B-scale copy, p2 no SA box, p3 neither; each interleaved against main (a2a4e65's kernels), 7 rounds.
set -u
export PYTHONUNBUFFERED=1 GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
PYTHONPATH=. bash bench/device_run.sh env > /dev/null
for p in p1 p2 p3; do
  echo "== $p"
  GEMMGEN_CACHE_DIR=/tmp/cache-$p PYTHONPATH=.devrun/$p:. timeout 100 python3 bench/ab_versions.py --rounds 7 \
    --before .devrun/pre4 --out "$OUT/ab_$p.json" 32x4096x7168 1x24576x1536 8x7168x16384 64x2112x7168 128x4096x7168 \
    2>&1 | grep -v -i warn | tail -5
done
