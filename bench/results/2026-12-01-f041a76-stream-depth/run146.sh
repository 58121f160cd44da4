#!/usr/bin/env bash
# session 2026-12-01 i, call 1: what the block recipe's scales cost a streaming kernel. This tree against variant
# trees whose producer skips the SB copies (nosb), the SA TMA box (nosa), or both (noscale), and the per-tensor
# recipe on the same shape; interleaved, 7 rounds.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$OUT/gpu.txt"
timeout 400 python3 .devrun/probe_trees.py "$OUT/probe_scales.json" nosb,nosa,noscale \
  8x7168x16384,32x7168x16384,64x7168x16384,1x24576x1536,32x24576x1536,64x24576x1536,32x7168x2048,32x4096x7168 2>&1 | grep -a -v -i warn | tee "$OUT/probe_scales.txt"
