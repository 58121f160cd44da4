#!/usr/bin/env bash
# session m, call 5: the whole GPU suite on the tree with evict_first on by default for decode; how much of its gain
# depends on the L2 state (zeroed flush / read flush / a chain of layers); evict_first pinned on the masked layout.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
start=$(date +%s)
timeout 320 python3 -m pytest -q -p no:cacheprovider tests -m gpu -rfEs > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc $? in $(( $(date +%s) - start )) s"; grep -a -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.txt" | tail -8
timeout 120 python3 bench/l2_state_probe.py --rounds 5 --out "$OUT/l2_state.json" \
  --shape 8x7168x16384 --shape 8x24576x1536 --shape 8x4096x7168 --shape 64x7168x2048 \
  --config evict_first=0 2>&1 | grep -v -i warn | tail -12
timeout 100 python3 bench/masked_decode_probe.py --rounds 5 --out "$OUT/masked_evict_first.json" \
  --case 8x8x7168x2048 --case 32x8x4096x7168 --case 8x16x4096x7168 --config evict_first=1 2>&1 | grep -v -i warn | tail -4
