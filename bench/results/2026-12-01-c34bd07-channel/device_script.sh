#!/usr/bin/env bash
# call 8 (2026-12-01 d): branch probe/a-rows-channel: per-channel A/B against e179e4b first (7 rounds), then the GPU
# suite of the branch.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 100 python3 bench/ab_versions.py --rounds 7 --before .devrun/m3 --out "$OUT/ab_channel.json" \
  c:65x2112x7168 c:80x4096x7168 c:100x7168x16384 c:65x7168x2048 c:40x7168x2048 c:120x2112x7168 \
  2>&1 | grep -v -i warn | tail -6 | cut -c1-120
timeout 300 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs > "$OUT/gpu_tests.txt" 2>&1
tail -1 "$OUT/gpu_tests.txt"; grep -E "^FAILED|Error" "$OUT/gpu_tests.txt" | head -5
