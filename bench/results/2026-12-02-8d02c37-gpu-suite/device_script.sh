#!/usr/bin/env bash
# session q, call 2: the whole GPU suite on the submitted tree; DeepGEMM's JIT warmed meanwhile (background, into
# generated/dgcache for call 3's bench).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
export DG_JIT_CACHE_DIR=$PWD/generated/dgcache
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/gemmgen-cache generated/dgcache && tar -xJf .devrun/pack/cache3.tar.xz -C /tmp/gemmgen-cache
rm -rf .devrun/dg && tar -xJf .devrun/pack/dg.tar.xz -C .devrun
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
(timeout 300 python3 bench/deepgemm_peer.py .devrun/dg --jobs 6 > "$OUT/dg_warm.txt" 2>&1; echo "dg warm rc $?" >> "$OUT/dg_warm.txt") &
DG=$!
timeout 480 python3 -m pytest -q -p no:cacheprovider -m gpu tests -rs > "$OUT/gpu_suite.txt" 2>&1; echo "gpu suite rc $?"
tail -4 "$OUT/gpu_suite.txt"
wait $DG; tail -2 "$OUT/dg_warm.txt"; du -sh generated/dgcache
