#!/usr/bin/env bash
# call 2b: the gemmgen and cuBLASLt per-tensor ncu reports of call 2 again (call 2's came back over the file count)
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
S=4096x7168x16384
for impl in gemmgen tensorwise; do
  timeout 100 ncu --clock-control none --profile-from-start off --set full --import-source no -o "/tmp/ncu_$impl" \
    python3 bench/ncu_peers.py $S $impl > /dev/null 2>&1
  ncu -i "/tmp/ncu_$impl.ncu-rep" --page details --print-details all > "$OUT/ncu_${impl}_details.txt" 2>&1
  ncu -i "/tmp/ncu_$impl.ncu-rep" --page raw --csv > "$OUT/ncu_${impl}_raw.csv" 2>&1
done
ncu -i "/tmp/ncu_gemmgen.ncu-rep" --page source --csv --print-source sass 2>/dev/null | gzip > "$OUT/ncu_gemmgen_sass.csv.gz"
grep -E "Duration|SM Frequency" "$OUT"/ncu_*_details.txt
