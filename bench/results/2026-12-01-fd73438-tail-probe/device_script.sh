#!/usr/bin/env bash
# session 2026-12-01 e, call 1: do prefill tiles whose last M block is partly past M pay for it? One pinned kernel
# per (N, K) over a partial M and the full multiple of block_m (same tiles), interleaved, 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
cat > /tmp/probes.txt <<'P'
a block_m=128,block_n=128,stages=5 136x7168x2048 200x7168x2048 256x7168x2048
b block_m=64,block_n=64,stages=8 200x2112x7168 224x2112x7168 256x2112x7168
c block_m=64,block_n=160,stages=7 264x4096x7168 300x4096x7168 320x4096x7168
d block_m=128,block_n=160,stages=5 520x7168x2048 600x7168x2048 640x7168x2048
e block_m=256,block_n=128,stages=3,raster_group=16,cluster=1 776x7168x2048 1000x7168x2048 1024x7168x2048
f block_m=256,block_n=128,stages=3,cluster=2 3848x7168x2048 3968x7168x2048 4096x7168x2048
g block_m=128,block_n=32,k_splits=2,a_rows=128,stages=9 65x2112x7168 128x2112x7168
P
# compile the kernels in parallel first (the cache is shared), then time one probe at a time
while read -r tag cfg shape rest; do
  echo "python3 -c \"from gemmgen.cli import main; main()\" build --shape $shape $(echo "--config $cfg" | sed 's/,/ --config /g') > /dev/null 2>&1"
done < /tmp/probes.txt | xargs -d '\n' -P 7 -I{} bash -c {}
while read -r tag cfg shapes; do
  echo "== $tag $cfg"
  timeout 120 python3 bench/m_tail_probe.py --rounds 7 --config "$cfg" --out "$OUT/tail_$tag.json" $shapes 2>&1 | grep -v -i warn
done < /tmp/probes.txt
