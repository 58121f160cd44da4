#!/usr/bin/env bash
# session 2026-12-01 j, call 6: a 64-row default tile (one math warpgroup) against the 128-row tile of half its width
# (two warpgroups, same area per CTA) where both give the same waves (5 rounds, ab_configs).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
run() { timeout 120 python3 bench/ab_configs.py --rounds 5 --out "$OUT/$1.json" $2 --config "$3" 2>&1 | grep -a -v -i warn | tail -6; }
run h96 "--shape 384x4096x7168 --shape 768x2112x7168 --shape 512x3072x1536 --shape 640x2112x7168 --shape 1024x1536x7168" block_m=128,block_n=96
run h80 "--shape 256x4608x7168 --shape 384x3072x1536 --shape 768x1536x7168 --shape 2048x576x7168" block_m=128,block_n=80
run h64 "--shape 256x4096x7168 --shape 640x1536x7168" block_m=128,block_n=64
run h48 "--shape 384x2112x7168 --shape 512x1536x7168 --shape 256x3072x1536 --shape 128x4608x7168" block_m=128,block_n=48
run h32 "--shape 128x4096x7168 --shape 256x2112x7168" block_m=128,block_n=32
python3 - "$OUT" <<'PY'
import json, sys, glob, os
out = sys.argv[1]; merged = []
for f in sorted(glob.glob(os.path.join(out, "h*.json"))):
    merged += json.load(open(f))["results"]; os.remove(f)
json.dump({"results": merged}, open(os.path.join(out, "ab_half_width.json"), "w"), indent=1)
PY
