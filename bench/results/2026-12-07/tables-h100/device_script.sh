#!/usr/bin/env bash
# env + GPU suite on this tree, then the refreshed table rows of this GPU A/B against 908c332 (H100: the dense and
# grouped ones beside DeepGEMM too); H200: also the three rows 787f5c8 moved there, against d60cf78
set -u
OUT=${OUT:-/tmp/out}
T0=$(date +%s)
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_COMMIT=$(cat .devrun/commit)
bash .devrun/suite.sh
left() { echo $(( ${END:-585} - ($(date +%s) - T0) )); }
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100; then
  GEMMGEN_CACHE_DIR=/tmp/gc_1 timeout 110 python3 bench/ab_versions.py --before .devrun/before --out "$OUT/ab_rows.json" --rounds 9 \
    w:7168x4096x8192 2>&1 | grep -v -i warn | tee "$OUT/ab_rows.txt"
  echo "peer: $(left) s left"
  GEMMGEN_CACHE_DIR=/tmp/gc_0 DG_JIT_CACHE_DIR=/tmp/dg timeout $(left) python3 .devrun/peer_grouped.py .devrun/before .devrun/dg 9 "$OUT/peer_rows.json" 2>&1 | grep -v -i warn | tee "$OUT/peer_rows.txt"
else
  GEMMGEN_CACHE_DIR=/tmp/gc_0 timeout 100 python3 bench/ab_versions.py --before .devrun/before200 --out "$OUT/ab_h200_787f5c8.json" --rounds 9 \
    32x576x7168 32x4096x7168 m4:256x4096x7168 2>&1 | grep -v -i warn | tee "$OUT/ab_h200_787f5c8.txt"
  GEMMGEN_CACHE_DIR=/tmp/gc_1 timeout $(left) python3 bench/ab_versions.py --before .devrun/before --out "$OUT/ab_h200_rows.json" --rounds 11 \
    g4:8928x7168x2048 t:4096x2112x7168 c:4096x2112x7168 b:128x32768x512 b:4096x2112x7168 2>&1 | grep -v -i warn | tee "$OUT/ab_h200_rows.txt"
fi
echo "total $(( $(date +%s) - T0 )) s"
