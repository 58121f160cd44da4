#!/usr/bin/env bash
# GPU suite in N parallel shards (node ids round-robin), one cache each; logs to $OUT/suite_all.txt
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1
N=${SHARDS:-7}; BUDGET=${BUDGET:-150}
{ nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
  python3 -c "import torch, cuda.bindings; from cuda.bindings import nvrtc; print('torch', torch.__version__, 'cuda.bindings', cuda.bindings.__version__, 'nvrtc', nvrtc.nvrtcVersion()[1:])"
  echo "commit $(cat .devrun/commit)"; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
python3 -m pytest -m gpu --collect-only -q -p no:cacheprovider tests/ 2>/dev/null | grep '::' > /tmp/ids.txt
echo "collected $(wc -l < /tmp/ids.txt) gpu tests"
for i in $(seq 0 $((N-1))); do awk -v n=$N -v i=$i 'NR%n==i' /tmp/ids.txt > /tmp/ids_$i.txt; done
t0=$(date +%s)
for i in $(seq 0 $((N-1))); do
  GEMMGEN_CACHE_DIR=/tmp/gc_$i timeout $BUDGET python3 -m pytest -q -p no:cacheprovider -rfEs $(cat /tmp/ids_$i.txt) > /tmp/shard_$i.txt 2>&1 &
done
wait
for i in $(seq 0 $((N-1))); do echo "== shard $i"; cat /tmp/shard_$i.txt; done > "$OUT/suite_all.txt"
echo "suite wall $(( $(date +%s) - t0 )) s" | tee -a "$OUT/suite_all.txt"
grep -hE "passed|failed|error" /tmp/shard_*.txt | grep -E "^[0-9=]|in [0-9.]+s" 
grep -hE "^(FAILED|ERROR)" /tmp/shard_*.txt | head -30
