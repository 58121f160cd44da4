#!/usr/bin/env bash
# session call 6 (next/stream-k, fixup loads batched): stream-K GPU tests; A/B default against stream_k=0, and at
# num_sms=128 (448 units on 64 clusters: stream-K inactive at run time) the code's cost alone.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > /dev/null
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_stream_k.py tests/test_gpu_gemm.py -k "stream_k or stream" -x > "$OUT/gpu_sk_tests.txt" 2>&1
tail -1 "$OUT/gpu_sk_tests.txt"; grep -E "^FAILED|Error|assert" "$OUT/gpu_sk_tests.txt" | head -8
timeout 120 python3 bench/ab_configs.py --out "$OUT/ab_sk_codegen.json" --rounds 5 --shape 4096x7168x16384 \
  --config stream_k=0 --config num_sms=128,stream_k=1 --config num_sms=128,stream_k=0 2>&1 | grep -v -i warn
timeout 250 python3 bench/ab_configs.py --out "$OUT/ab_stream_k.json" --rounds 5 \
  --shape 8192x8192x8192 --shape 4096x4096x7168 --shape 4096x2112x7168 --shape 2304x7168x4096 \
  --config stream_k=0 2>&1 | grep -v -i warn
