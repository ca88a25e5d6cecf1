# round 33 probe call: package build, the split probe in alternating processes (env unset /
# set), the driver's --check and racecheck on --small with the env set. First, in the checkout
# the device copies: git apply benchmarks/notes/sc-first-tile-split.patch (applies to 5a2f701).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
(bash benchmarks/notes/build_driver.sh /tmp/drv_s > $OUT/drv_build.log 2>&1 &
 CMAKE_CUDA_ARCHITECTURES=90a bash benchmarks/device_run.sh build > $OUT/pkg_build.log 2>&1 & wait)
tail -n 3 $OUT/drv_build.log $OUT/pkg_build.log
cd /tmp && cp $OLDPWD/benchmarks/notes/xla_probes.py /tmp/
for i in 1 2; do
  python3 xla_probes.py split 2>&1 | grep -v Warning
  SC_SPLIT_FIRST=1 python3 xla_probes.py split 2>&1 | grep -v Warning
done | tee $OUT/split.log
cd $OLDPWD
SC_SPLIT_FIRST=1 timeout 200 /tmp/drv_s --check > $OUT/check.log 2>&1; echo rc=$?; grep -v "^ok" $OUT/check.log | tail -5
SC_SPLIT_FIRST=1 compute-sanitizer --tool racecheck /tmp/drv_s --small > $OUT/san.log 2>&1; grep -E "SUMMARY" $OUT/san.log
