# round 32 probe call: the driver's check and sanitizers on flat_pairs, then the package's
# single-channel GPU tests (run from the repository root on the GPU machine; logs under $OUT)
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
(bash benchmarks/notes/build_driver.sh /tmp/drv_p > $OUT/drv_build.log 2>&1 &
 CMAKE_CUDA_ARCHITECTURES=90a bash benchmarks/device_run.sh build > $OUT/pkg_build.log 2>&1 & wait)
tail -n 3 $OUT/drv_build.log $OUT/pkg_build.log
(compute-sanitizer --tool memcheck /tmp/drv_p --small; compute-sanitizer --tool racecheck /tmp/drv_p --small) > $OUT/san.log 2>&1
grep -E "SUMMARY|small:|FAIL|pairs" $OUT/san.log
timeout 240 /tmp/drv_p --check > $OUT/check.log 2>&1; echo rc=$?; grep -v "^ok" $OUT/check.log | tail -5
TEST_ARGS="tests/test_gpu.py tests/test_gpu_single_channel_winograd.py tests/test_gpu_single_channel_wgmma.py -m gpu" TEST_K="single or winograd" bash benchmarks/device_run.sh test 2>&1 | tail -5
