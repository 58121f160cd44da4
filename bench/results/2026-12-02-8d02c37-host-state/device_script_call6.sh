#!/usr/bin/env bash
# session q, call 6: the host loop after a 30 ms busy spin against right after a sync (.devrun/spin_probe.py), twice.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
cp .devrun/spin_probe.py "$OUT/"
for i in 1 2; do timeout 100 python3 .devrun/spin_probe.py "$OUT/spin_$i.json" 2>&1 | grep -v -i warn; done
cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor /sys/devices/system/cpu/cpu0/cpufreq/scaling_driver 2>&1 | head -2
grep -m1 "model name" /proc/cpuinfo
