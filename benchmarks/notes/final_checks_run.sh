# Round 40: checks at the round's final kernel: the driver's --check, compute-sanitizer memcheck /
# racecheck on --small, then the package built and the wgmma GPU module run. Carry
# .devbuild/plans-h200.txt.
set -x
bash benchmarks/notes/build_driver.sh /tmp/drv > $OUT/bdrv.log 2>&1
/tmp/drv --check --plans .devbuild/plans-h200.txt > $OUT/check.log 2>&1; tail -1 $OUT/check.log
for tool in memcheck racecheck; do
  compute-sanitizer --tool $tool /tmp/drv --small > $OUT/sanitizer-$tool.log 2>&1; tail -2 $OUT/sanitizer-$tool.log
done
CMAKE_CUDA_ARCHITECTURES=90a bash benchmarks/device_run.sh build > $OUT/build-step.log 2>&1
TEST_ARGS="tests/test_gpu_single_channel_wgmma.py -m gpu" bash benchmarks/device_run.sh test 2>&1 | tail -3
