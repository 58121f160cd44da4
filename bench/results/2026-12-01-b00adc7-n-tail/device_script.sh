#!/usr/bin/env bash
# session 2026-12-01 e, call 5: do tiles pay for a last N block mostly past N (B's box zero-filled)? One pinned
# config per probe over N values of the same tile count (one kernel per N), interleaved, 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
cat > /tmp/probes.txt <<'P'
n1 block_m=64,block_n=160,stages=7 320x4008x7168 320x4096x7168 320x4160x7168
n2 block_m=128,block_n=192,stages=4 256x7112x2048 256x7168x2048 256x7296x2048
n3 block_m=64,block_n=32,a_rows=32,k_splits=4 32x2120x7168 32x2128x7168 32x2144x7168
n4 block_m=64,block_n=192,stages=7,a_rows=8 1x24392x1536 1x24456x1536 1x24576x1536
P
while read -r tag cfg shapes; do
  for s in $shapes; do
    echo "python3 -c \"from gemmgen.cli import main; main()\" build --shape $s $(echo "--config $cfg" | sed 's/,/ --config /g') > /dev/null 2>&1"
  done
done < /tmp/probes.txt | xargs -d '\n' -P 12 -I{} bash -c {}
while read -r tag cfg shapes; do
  echo "== $tag $cfg"
  timeout 120 python3 bench/m_tail_probe.py --per-n --rounds 7 --config "$cfg" --out "$OUT/ntail_$tag.json" $shapes 2>&1 | grep -v -i warn | cut -c1-150
done < /tmp/probes.txt
