#!/usr/bin/env bash
# session p, call 3: DeepGEMM's JIT warmed (background, into generated/dgcache for call 4's bench); the two new rules'
# picks off the shapes measured (K extrapolations of the 17..32-row swap, few-tile splits at K = 4096 / 16384 and
# N = 128) against the tree before (ab_versions, 7 rounds); then the whole GPU suite.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
export DG_JIT_CACHE_DIR=$PWD/generated/dgcache
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/gemmgen-cache generated/dgcache && tar -xJf .devrun/pack/cache3.tar.xz -C /tmp/gemmgen-cache
rm -rf .devrun/dg && tar -xJf .devrun/pack/dg.tar.xz -C .devrun
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1
(timeout 280 python3 bench/deepgemm_peer.py .devrun/dg --jobs 6 > "$OUT/dg_warm.txt" 2>&1; echo "dg warm rc $?" >> "$OUT/dg_warm.txt") &
DG=$!
timeout 120 python3 bench/ab_versions.py --before .devrun/pack/before --rounds 7 --out "$OUT/abv_extrapolated.json" \
  32x32768x2048 32x36864x7168 17x16384x1536 24x24576x16384 32x32768x7168 96x512x4096 65x128x7168 65x384x16384 \
  128x128x4096 2>&1 | grep -v -i warn | tail -10
timeout 420 python3 -m pytest -q -p no:cacheprovider -m gpu tests -rs > "$OUT/gpu_suite.txt" 2>&1; echo "gpu suite rc $?"
tail -4 "$OUT/gpu_suite.txt"
wait $DG; tail -2 "$OUT/dg_warm.txt"; du -sh generated/dgcache
