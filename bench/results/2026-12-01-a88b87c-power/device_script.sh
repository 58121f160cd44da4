#!/usr/bin/env bash
# call 3 (2026-12-01 b): energy per FLOP under a steady load at the two largest prefill shapes (gemmgen block and
# tensor recipe, cuBLASLt tensorwise and blockwise, DeepGEMM; 2 s each, 2 rounds in opposite orders, 2 s idle
# before each); then the masked bench cases over 8 draws with 128x256 (column waves) beside the default and
# 128x128/160/192.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
export DG_JIT_CACHE_DIR=/tmp/dgcache
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 300 python3 bench/power_per_flop.py --deepgemm .devrun/dg --out "$OUT/power.json" --seconds 2 \
  4096x7168x16384 8192x8192x8192 2>&1 | grep -v -i warn | grep -E "TFLOPS|Error|error" | head -30
timeout 200 python3 bench/sweep_masked_draws.py --draws 8 --tiles 128x128 128x160 128x192 128x256 \
  --out "$OUT/masked_draws.json" 1:1024:4096:7168 1:1024:7168:2048 2:512:4096:7168 2:512:7168:2048 \
  4:256:4096:7168 4:256:7168:2048 2>&1 | grep -v -i warn | tail -3
python3 - "$OUT/masked_draws.json" <<'PY'
import json, sys, collections
rows = json.load(open(sys.argv[1]))["rows"]
tot = collections.defaultdict(float)
for r in rows:
    tot[(r["case"], str(r["config"]))] += r["us"]
for case in dict.fromkeys(r["case"] for r in rows):
    items = {c: v for (k, c), v in tot.items() if k == case}
    best = min(items.values())
    print(case, " ".join(f"{c}:{v / best:.3f}" for c, v in items.items()))
PY
