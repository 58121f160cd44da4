#!/usr/bin/env bash
# One device call, sections chosen by name: env (always), smoke, sanitizer, racecheck, tests, bench, abv, sweep, ab,
# ncu, host.
#   bash bench/device_run.sh tests bench abv     (on the H200, from the repo root; logs under $OUT)
# abv needs the earlier tree in .devrun/before (carry it): git archive <commit> gemmgen | tar -x -C .devrun/before
# && mv .devrun/before/gemmgen .devrun/before/gemmgen_before
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1 GEMMGEN_CACHE_DIR=/tmp/gemmgen-cache
has() { [[ "$SECTIONS" == *" all "* ]] || [[ " $SECTIONS " == *" $1 "* ]]; }
SECTIONS=" $* "
FAILED=""  # the pass/fail steps that failed (racecheck); the script exits 1 if any did
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  python3 -c "import torch, cuda.bindings; from cuda.bindings import nvrtc; print('torch', torch.__version__, 'cuda.bindings', cuda.bindings.__version__, 'nvrtc', nvrtc.nvrtcVersion()[1:])"
  echo "commit ${GEMMGEN_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)} (GEMMGEN_COMMIT: the tree under test)"
} 2>&1 | tee "$OUT/env.txt"
if has smoke; then
  timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_gemm.py -k "7x24x16 or 129x136x1280" 2>&1 | tail -5
fi
if has tests; then
  timeout 400 python3 -m pytest -v -p no:cacheprovider tests/ -rA 2>&1 | tee "$OUT/gpu_tests.log" \
    | grep -E "FAIL|ERROR|passed|failed" | tail -20
fi
if has sanitizer; then
  # memcheck over dense partial tiles and the grouped contract tests (padding, bad indices, clamped masked_m)
  timeout 300 compute-sanitizer --tool memcheck python3 -m pytest -q -p no:cacheprovider tests/test_gpu_gemm.py \
    tests/test_gpu_grouped.py -k "129x136x1280 or 4097x4104x7296 or bad_indices or out_of_range or g3-m200 or \
    g3-mmax256" 2>&1 | tail -15 > "$OUT/sanitizer.txt"
  tail -3 "$OUT/sanitizer.txt"
fi
if has racecheck; then
  # Pass/fail: compute-sanitizer racecheck (shared-memory hazards) and synccheck over one kernel of every kind x scale
  # load path x split flavour (bench/racecheck_kernels.py, each output checked against float64), then the gathered-SA
  # split-K kernels repeated 3000 times under random memory noise, bitwise against their first run.
  timeout 420 compute-sanitizer --tool racecheck --print-limit 1000000 python3 bench/racecheck_kernels.py \
    --out "$OUT/racecheck_ran.json" > "$OUT/racecheck.log" 2>&1
  python3 bench/racecheck_kernels.py --summarize "$OUT/racecheck.log" --ran "$OUT/racecheck_ran.json" \
    --out "$OUT/racecheck.json" > "$OUT/racecheck.txt" 2>&1 || FAILED="$FAILED racecheck"
  tail -1 "$OUT/racecheck.txt"
  timeout 420 compute-sanitizer --tool synccheck --error-exitcode 1 python3 bench/racecheck_kernels.py \
    > "$OUT/synccheck.log" 2>&1 || FAILED="$FAILED synccheck"
  tail -1 "$OUT/synccheck.log"
  timeout 300 python3 bench/stress_split_k.py --runs 3000 --out "$OUT/stress_split_k.json" \
    > "$OUT/stress_split_k.txt" 2>&1 || FAILED="$FAILED stress"
  tail -4 "$OUT/stress_split_k.txt"
fi
if has bench; then
  timeout 420 python3 bench/bench_gemm.py --out "$OUT/bench.json" ${BENCH_ARGS:-} 2>&1 | grep -v Warn | tail -45
fi
if has abv; then
  timeout 240 python3 bench/ab_versions.py --before .devrun/before --out "$OUT/ab_versions.json" \
    ${AB_SHAPES:-64x2112x7168 128x7168x2048 4096x7168x16384 4096x4096x7168} 2>&1 | grep -v Warn | tail -8
fi
if has sweep; then
  (cd bench && PYTHONPATH=.. timeout 300 python3 sweep.py --out "$OUT/sweep.json" --shapes \
    ${SWEEP_SHAPES:-4096x2112x7168 4096x7168x16384 128x2112x7168 64x2112x7168 128x7168x2048}) 2>&1 | tail -45
fi
if has ncu; then
  # Warp stall reasons of the default large-M kernel (one launch, clocks left alone).
  timeout 200 ncu --clock-control none -k regex:sm90_ -s 2 -c 1 --section WarpStateStats --section SchedulerStats \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis python3 bench/ncu_one.py ${NCU_SHAPE:-4096x7168x16384} \
    > "$OUT/ncu.txt" 2>&1
  grep -E "Stall|Warp Cycles|Issued|Eligible|Throughput|Busy|Active" "$OUT/ncu.txt" | head -40
fi
if has host; then
  for shape in 64x2112x7168 4096x7168x16384; do
    echo "host overhead, $shape:"; timeout 60 python3 bench/host_overhead.py $shape 2>&1 | tail -9
  done | tee "$OUT/host_overhead.txt"
fi
if has ncusrc; then
  # Source-level stall sampling of the default large-M kernel (compiled with -lineinfo).
  timeout 240 ncu --clock-control none -k regex:sm90_ -s 2 -c 1 --section WarpStateStats --section SourceCounters \
    --import-source yes -o "$OUT/kernel" python3 bench/ncu_one.py ${NCU_SHAPE:-4096x7168x16384} > "$OUT/ncusrc.txt" 2>&1
  tail -3 "$OUT/ncusrc.txt"
  ncu -i "$OUT/kernel.ncu-rep" --page source --csv --print-source sass 2>/dev/null > "$OUT/sass_stalls.csv"
  ls -la "$OUT"
fi
if has ab; then
  # bench/ab_specs.txt: lines of "SHAPE CFG1 CFG2 ...", CFG = k=v,k=v and '' = the default config
  i=0
  while read -r spec; do
    [ -z "$spec" ] && continue
    i=$((i+1))
    eval "set -- $spec"
    (cd bench && PYTHONPATH=.. timeout 120 python3 sweep.py --out "$OUT/ab$i.json" --ab "$@") 2>&1 \
      | grep -v -i warn | tail -8
  done < "${AB_SPECS:-bench/ab_specs.txt}"
fi
if [ -n "$FAILED" ]; then
  echo "FAILED:$FAILED"
  exit 1
fi
