# round 35 probe call: the wgmma kernel's two-accumulator launches (plan[6] & 4) in the driver:
# --small (and its sanitizers), graph timing of every wgmma launch of the NHWC K3 / K5 layers
# with and without the pipe, two passes, then --check. DRV: a driver built by build_driver.sh
# (here, built first), PLANS: plan_single_channel --export for the device. First, in the
# checkout the device copies: git apply benchmarks/notes/sc-wgmma-pipe.patch (applies to 9ba9feb).
set -x
bash benchmarks/notes/build_driver.sh /tmp/drv > $OUT/drv_build.log 2>&1; tail -n 3 $OUT/drv_build.log
DRV=${DRV:-/tmp/drv}; PLANS=${PLANS:-.devbuild/plans-h200.txt}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
$DRV --small 2>&1 | tail -n 3
CASES=${CASES:-NHWC_N1_512_M32_K5,NHWC_N1_512_M32_K3,NHWC_N32_56_M256_K5,NHWC_N32_28_M512_K5,NHWC_N1_1024_M32_K5,NHWC_N32_112_M128_K5}
for pass in 1 2; do
  SC_TZ=2 SC_TZ_PIPE=1 SC_CASES=$CASES $DRV --time --plans $PLANS 2>&1 | tee $OUT/time$pass.log | grep -v "^ok" | tail -n 80
done
(compute-sanitizer --tool memcheck $DRV --small; compute-sanitizer --tool racecheck $DRV --small) > $OUT/san.log 2>&1
grep -E "SUMMARY|small:|FAIL" $OUT/san.log
timeout 300 $DRV --check > $OUT/check.log 2>&1; echo rc=$?; grep -v "^ok" $OUT/check.log | tail -n 5; grep -c "pipe" $OUT/check.log
