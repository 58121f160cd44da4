#!/usr/bin/env bash
# session 2026-12-01 i, call 6: the stream ring trimmed to ~9 MiB of B in flight (select_config._stream_depth),
# this tree against f041a76's on the 11 bench shapes whose kernel changes; and the depth around the trim's pick at
# K = 2048, 4096x7168 and 128x4096x7168 (same tile, stages pinned).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)-dirty
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 250 python3 bench/ab_versions.py --before .devrun/before --out "$OUT/ab_versions.json" --rounds 7 \
  1x7168x16384 8x7168x16384 32x7168x16384 64x7168x16384 1x4096x7168 8x4096x7168 128x4096x7168 \
  1x7168x2048 8x7168x2048 32x7168x2048 64x7168x2048 2>&1 | grep -a -v -i warn
mkdir -p /tmp/abc
ab() { s=$1; shift; args=(); for c in "$@"; do args+=(--config "$c"); done
  timeout 120 python3 bench/ab_configs.py --out "/tmp/abc/ab_$s.json" --rounds 5 --shape $s "${args[@]}" 2>&1 | grep -a -v -i warn; }
P="block_m=64,block_n=64,k_splits=1"
ab 32x7168x16384 $P,stages=9 $P,stages=11 $P,stages=12
ab 32x7168x2048 $P,stages=8 $P,stages=9 $P,stages=12
ab 1x4096x7168 block_m=64,block_n=64,k_splits=2,stages=8 block_m=64,block_n=64,k_splits=2,stages=10 block_m=64,block_n=64,k_splits=2,stages=16
ab 128x4096x7168 $P,stages=8 $P,stages=10 $P,stages=11 $P,stages=13
python3 - <<'PY'
import json, glob, os
out = {os.path.basename(p): json.load(open(p)) for p in sorted(glob.glob("/tmp/abc/*.json"))}
json.dump(out, open(os.environ.get("OUT", "/tmp/out") + "/ab_configs_depth.json", "w"), indent=1)
PY
