#!/usr/bin/env bash
# call 3: which k-block's A scale is wrong in the differing SA-gathered runs, and what it held.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 200 python3 bench/stress_wgrad.py 100x2048x4096 --rounds 20 --repeats 10 --explain \
  --out "$OUT/stress_explain.json" 2>&1 | tail -3
python3 - "$OUT/stress_explain.json" <<'PY'
import json, sys, collections
r = json.load(open(sys.argv[1]))
c = collections.Counter()
for d in r["differing"]:
    for e in d.get("explain", []):
        c[(e["match"], round(e["resid"], 3) < 0.01)] += 1
        print(d["pairing"], d["repeat"], e)
print(c)
PY
