#!/usr/bin/env bash
# call 3: A/B of the kernels against 1631227 (alone on the GPU); then the racecheck pass/fail step and the GPU suite
# in 4 shards, side by side
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}; L=/tmp/logs; mkdir -p $L
bash bench/device_run.sh env > $L/env.txt 2>&1; head -3 $L/env.txt
timeout 240 python3 bench/ab_versions.py --before .devrun/before --out $L/ab_versions.json --rounds 7 \
  8x2112x7168 64x2112x7168 128x2112x7168 64x7168x2048 128x7168x16384 4096x7168x16384 4096x2112x7168 \
  w:7168x2112x4096 g4:2048x4096x7168 m4:256x7168x2048@200 m1:1024x4096x7168 b:4096x7168x2048 2>&1 \
  | grep -v -i warn | tail -16
(OUT=$L bash bench/device_run.sh racecheck > $L/racecheck_step.txt 2>&1; echo "rc $?" >> $L/racecheck_step.txt) &
S="timeout 480 python3 -m pytest -q -p no:cacheprovider -m gpu -rs"
($S tests/test_gpu_gemm.py > $L/suite_a.txt 2>&1; echo "rc $?" >> $L/suite_a.txt) &
($S tests/test_gpu_wgrad.py tests/test_gpu_pdl.py > $L/suite_b.txt 2>&1; echo "rc $?" >> $L/suite_b.txt) &
($S tests/test_gpu_grouped.py tests/test_gpu_torch.py tests/test_gpu_sass_passes.py > $L/suite_c.txt 2>&1; echo "rc $?" >> $L/suite_c.txt) &
($S tests/test_gpu_split_global.py tests/test_gpu_strides.py > $L/suite_d.txt 2>&1; echo "rc $?" >> $L/suite_d.txt) &
wait
for f in $L/suite_*.txt; do echo "$f: $(grep -E 'passed|failed' $f | tail -1) $(tail -1 $f)"; done
grep -hE "^(FAILED|ERROR)" $L/suite_*.txt | head -20
cat $L/racecheck_step.txt | tail -8
cut -c1-60,150-230 $L/racecheck.txt
tar czf $OUT/call3.tgz -C /tmp logs
# ---- call 4 ----
#!/usr/bin/env bash
# call 4: bench sections 1-4 (one pass, torch's cuBLAS/cuBLASLt peers in the same run) and the host path's pieces
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache GEMMGEN_COMMIT=$(cat .devrun/commit)
OUT=${OUT:-/tmp/out}
bash bench/device_run.sh env > "$OUT/env.txt" 2>&1; head -3 $OUT/env.txt
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 250 > "$OUT/clocks.csv" 2>&1 &
LOGGER=$!
timeout 420 python3 bench/bench_gemm.py --passes 1 --sections 1 2 3 4 --out "$OUT/bench.json" 2>&1 \
  | grep -a -v -i warn | grep -a -E "^(section|[0-9]+ rows|Geometric|gemmgen at|gemmgen against|Traceback|[A-Za-z]*Error)" | cut -c1-400
kill $LOGGER
timeout 90 python3 bench/host_overhead.py 64x7168x2048 > "$OUT/host_overhead.txt" 2>&1; tail -25 "$OUT/host_overhead.txt"
#!/usr/bin/env bash
# call 6: the GPU suite in 5 shards side by side on the final tree
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache
OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $(cat .devrun/commit)"
S="timeout 230 python3 -m pytest -q -p no:cacheprovider -m gpu -rs"
($S tests/test_gpu_gemm.py > $OUT/suite_a.txt 2>&1; echo "rc $?" >> $OUT/suite_a.txt) &
($S tests/test_gpu_wgrad.py tests/test_gpu_pdl.py > $OUT/suite_b.txt 2>&1; echo "rc $?" >> $OUT/suite_b.txt) &
($S tests/test_gpu_grouped.py tests/test_gpu_sass_passes.py > $OUT/suite_c.txt 2>&1; echo "rc $?" >> $OUT/suite_c.txt) &
($S tests/test_gpu_split_global.py tests/test_gpu_strides.py > $OUT/suite_d.txt 2>&1; echo "rc $?" >> $OUT/suite_d.txt) &
($S tests/test_gpu_torch.py tests/test_gpu_tune.py > $OUT/suite_e.txt 2>&1; echo "rc $?" >> $OUT/suite_e.txt) &
wait
for f in $OUT/suite_*.txt; do echo "$(basename $f): $(grep -E 'passed|failed' $f | tail -1) $(tail -1 $f)"; done
grep -hE "^(FAILED|ERROR)" $OUT/suite_*.txt | head -20
