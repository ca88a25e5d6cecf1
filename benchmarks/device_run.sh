#!/usr/bin/env bash
# One device call does a whole step: build, info, GPU tests, calibrate, benchmark.
# Usage (on the GPU machine, from the repo root): bash benchmarks/device_run.sh [STEPS...]
#   steps: build info test calibrate bench  (default: all). Logs and JSON go to $OUT.
#   Pass JAX_FASTCONV_GIT_COMMIT=<sha> (from your checkout): the device tool's copy of the
#   repository keeps the session's first HEAD, so the bench would label runs with that.
#   TEST_ARGS is split at spaces; a -k expression with spaces goes in TEST_K instead, e.g.
#   TEST_K="gemm_autotune or patchify" bash benchmarks/device_run.sh build test
#   TEST_JOBS=N runs the selection in N pytest processes at once (round-robin over its node ids,
#   GPU memory allocated on demand). Three at once passed 1620 GPU tests in 480 s on an H100,
#   where one process takes ~550 s for the 850 (H200; notes/single_channel.md, rounds 50-51).
#   Logs: gpu-tests-J.log per process, their last lines in gpu-tests.log.
set -uo pipefail
OUT="${OUT:-/tmp/fastconv-out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
steps=("$@"); [ ${#steps[@]} -gt 0 ] || steps=(build info test calibrate bench)
BENCH_ARGS="${BENCH_ARGS:---set paper-single paper-multi}"
TEST_ARGS="${TEST_ARGS:-tests -m gpu}"
K_ARGS=(); [ -z "${TEST_K:-}" ] || K_ARGS=(-k "$TEST_K")
PYTEST=(python3 -P -m pytest -q -p no:cacheprovider)  # one -q: collect-only lists node ids
status=0
# TEST_JOBS pytest processes over the selection's node ids; returns nonzero if any fails.
parallel_tests() {
  local ids="$OUT/test-ids.txt" j rc=0 pids=() part
  "${PYTEST[@]}" --collect-only $TEST_ARGS "${K_ARGS[@]}" 2>/dev/null \
    | grep "::" > "$ids"
  [ -s "$ids" ] || { echo "no tests collected for: $TEST_ARGS"; return 1; }
  echo "$(wc -l < "$ids") tests in $TEST_JOBS processes"
  for ((j = 0; j < TEST_JOBS; j++)); do
    awk -v j="$j" -v n="$TEST_JOBS" '(NR - 1) % n == j' "$ids" > "$OUT/test-ids-$j.txt"
    [ -s "$OUT/test-ids-$j.txt" ] || continue
    mapfile -t part < "$OUT/test-ids-$j.txt"  # whole lines: parameter ids may hold spaces
    XLA_PYTHON_CLIENT_PREALLOCATE=false "${PYTEST[@]}" "${part[@]}" > "$OUT/gpu-tests-$j.log" 2>&1 &
    pids+=($!)
  done
  for j in "${pids[@]}"; do wait "$j" || rc=1; done
  for ((j = 0; j < TEST_JOBS; j++)); do
    [ -f "$OUT/gpu-tests-$j.log" ] && echo "process $j: $(tail -n 1 "$OUT/gpu-tests-$j.log")"
  done | tee "$OUT/gpu-tests.log"
  return $rc
}
for step in "${steps[@]}"; do
  echo "=== $step ==="
  case "$step" in
    build) CMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}" FASTCONV_CUDA=ON \
             python3 -m pip install --no-build-isolation --no-deps -v . > "$OUT/build.log" 2>&1 \
             || { tail -n 60 "$OUT/build.log"; exit 1; }
           grep -E "ptxas|registers|spill" "$OUT/build.log" | tail -n 20 ;;
    info) python3 -P -m jax_fastconv info 2>&1 | tee "$OUT/info.log"; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv ;;
    test) if [ "${TEST_JOBS:-1}" -gt 1 ]; then parallel_tests || status=1
          else "${PYTEST[@]}" $TEST_ARGS "${K_ARGS[@]}" 2>&1 \
                 | tee "$OUT/gpu-tests.log" | tail -n 25 || status=1
          fi ;;
    calibrate) python3 -P -m jax_fastconv calibrate 2>&1 | tee "$OUT/calibrate.log" ;;
    bench) python3 -P -m jax_fastconv bench $BENCH_ARGS --out "$OUT" 2>&1 | tee "$OUT/bench.log" | tail -n 80 || status=1 ;;
    *) echo "unknown step $step"; status=1 ;;
  esac
done
exit $status
