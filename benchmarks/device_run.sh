#!/usr/bin/env bash
# One device call does a whole step: build, info, GPU tests, calibrate, benchmark.
# Usage (on the GPU machine, from the repo root): bash benchmarks/device_run.sh [STEPS...]
#   steps: build info test calibrate bench  (default: all). Logs and JSON go to $OUT.
#   Pass JAX_FASTCONV_GIT_COMMIT=<sha> (from your checkout): the device tool's copy of the
#   repository keeps the session's first HEAD, so the bench would label runs with that.
#   TEST_ARGS is split at spaces; a -k expression with spaces goes in TEST_K instead, e.g.
#   TEST_K="gemm_autotune or patchify" bash benchmarks/device_run.sh build test
set -uo pipefail
OUT="${OUT:-/tmp/fastconv-out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
steps=("$@"); [ ${#steps[@]} -gt 0 ] || steps=(build info test calibrate bench)
BENCH_ARGS="${BENCH_ARGS:---set paper-single paper-multi}"
TEST_ARGS="${TEST_ARGS:-tests -m gpu}"
K_ARGS=(); [ -z "${TEST_K:-}" ] || K_ARGS=(-k "$TEST_K")
status=0
for step in "${steps[@]}"; do
  echo "=== $step ==="
  case "$step" in
    build) CMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}" FASTCONV_CUDA=ON \
             python3 -m pip install --no-build-isolation --no-deps -v . > "$OUT/build.log" 2>&1 \
             || { tail -n 60 "$OUT/build.log"; exit 1; }
           grep -E "ptxas|registers|spill" "$OUT/build.log" | tail -n 20 ;;
    info) python3 -P -m jax_fastconv info 2>&1 | tee "$OUT/info.log"; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv ;;
    test) python3 -P -m pytest -q -p no:cacheprovider $TEST_ARGS "${K_ARGS[@]}" 2>&1 | tee "$OUT/gpu-tests.log" | tail -n 25 || status=1 ;;
    calibrate) python3 -P -m jax_fastconv calibrate 2>&1 | tee "$OUT/calibrate.log" ;;
    bench) python3 -P -m jax_fastconv bench $BENCH_ARGS --out "$OUT" 2>&1 | tee "$OUT/bench.log" | tail -n 80 || status=1 ;;
    *) echo "unknown step $step"; status=1 ;;
  esac
done
exit $status
