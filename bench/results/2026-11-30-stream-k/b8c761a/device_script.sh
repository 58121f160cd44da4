#!/usr/bin/env bash
# session call 8 (next/stream-k): why stream-K loses. 2304x7168x4096 (x0.91 twice): default (stream-K) against
# stream_k=0, and at num_sms=126 (252 units on 63 clusters: stream-K inactive at run time) the code's cost alone;
# 9 rounds, kernel names seen per call; then ncu of both default kernels.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 150 python3 bench/ab_configs.py --out "$OUT/ab_sk_2304.json" --rounds 9 --shape 2304x7168x4096 \
  --config stream_k=0 --config num_sms=126,stream_k=1 --config num_sms=126,stream_k=0 2>&1 | grep -v -i warn
python3 -c "
import json; d=json.load(open('$OUT/ab_sk_2304.json'))
for r in d['results']:
    for t in r['names']: print(t, r['kernels_seen'][t], [round(x,1) for x in r['all_us'][t]])"
for cfg in "" "stream_k=0"; do
  timeout 90 ncu --clock-control none -k regex:sm90_ -s 2 -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats python3 bench/ncu_one.py 2304x7168x4096 $cfg > "$OUT/ncu_2304_${cfg:-sk}.txt" 2>&1
  echo "== ${cfg:-sk}"; grep -E "Duration|DRAM Throughput|L2 Hit|Stall|Issued Warp|Eligible|No Eligible|One or More|Warp Cycles Per Issued" "$OUT/ncu_2304_${cfg:-sk}.txt" | head -24
done
