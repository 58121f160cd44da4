#!/usr/bin/env bash
# session 2026-12-01 i, call 7: the short-split budget (7 MiB: 8 stages at K = 2048) against 3a51b5e's trim; and the
# wave rule's 64x192 tiles at N = 24576 (one M block, 128 CTAs) with shallower rings.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)-dirty
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 150 python3 bench/ab_versions.py --before .devrun/before --out "$OUT/ab_versions_short.json" --rounds 7 \
  1x7168x2048 8x7168x2048 32x7168x2048 64x7168x2048 2>&1 | grep -a -v -i warn
mkdir -p /tmp/abc
ab() { s=$1; shift; args=(); for c in "$@"; do args+=(--config "$c"); done
  timeout 120 python3 bench/ab_configs.py --out "/tmp/abc/ab_$s.json" --rounds 5 --shape $s "${args[@]}" 2>&1 | grep -a -v -i warn; }
P="block_m=64,block_n=192,k_splits=1"
ab 1x24576x1536 $P,stages=4 $P,stages=5 $P,stages=6
ab 32x24576x1536 $P,stages=4 $P,stages=5
ab 64x24576x1536 $P,stages=4 $P,stages=5
python3 - <<'PY'
import json, glob, os
out = {os.path.basename(p): json.load(open(p)) for p in sorted(glob.glob("/tmp/abc/*.json"))}
json.dump(out, open(os.environ.get("OUT", "/tmp/out") + "/ab_configs_n24576.json", "w"), indent=1)
PY
