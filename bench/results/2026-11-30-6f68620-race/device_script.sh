#!/usr/bin/env bash
# call 1: the wgrad race. Stress (many rounds) on the failing shape and two more, then sanitizer tools on the test.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
for shape in 100x2048x4096 256x2048x4096 100x7168x4096; do
  timeout 100 python3 bench/stress_wgrad.py $shape --rounds 30 --repeats 10 --out "$OUT/stress_$shape.json" 2>&1 | tail -6
done
for tool in racecheck synccheck memcheck; do
  timeout 150 compute-sanitizer --tool $tool python3 -m pytest -q -p no:cacheprovider tests/test_gpu_wgrad.py \
    -k "100x2048x4096" 2>&1 | tail -8 > "$OUT/$tool.txt"
  echo "== $tool"; tail -4 "$OUT/$tool.txt"
done
