# round 35 call: the wgmma kernel with NCHW outputs (tz_store_planes) in the driver: --small,
# graph timing of its launches beside the FFMA kernel's level-1 variants on the K5 layers (one
# pass with every variant, one with the wgmma launches and the planned FFMA launch), the
# sanitizers on --small, then --check. PLANS: plan_single_channel --export for the device.
set -x
bash benchmarks/notes/build_driver.sh /tmp/drv > $OUT/drv_build.log 2>&1; tail -n 3 $OUT/drv_build.log
DRV=/tmp/drv; PLANS=${PLANS:-.devbuild/plans-h200.txt}
nvidia-smi --query-gpu=name --format=csv,noheader
$DRV --small 2>&1 | grep -E "wgmma|small:"
CASES=${CASES:-NCHW_N1_512_M32_K5,NCHW_N32_56_M256_K5,NCHW_N32_28_M512_K5,NCHW_N1_1024_M32_K5,NCHW_N32_112_M128_K5,NCHW_N1_224_M64_K5,NHWC_N1_512_M32_K5,NHWC_N32_56_M256_K5}
SC_TZ=1 SC_CASES=$CASES $DRV --time --plans $PLANS > $OUT/time1.log 2>&1
SC_TZ=2 SC_VARIANTS=0 SC_CASES=$CASES $DRV --time --plans $PLANS > $OUT/time2.log 2>&1
grep -A12 "PLANNED TABLE" $OUT/time1.log; grep -E "variant \[6" $OUT/time2.log
(compute-sanitizer --tool memcheck $DRV --small; compute-sanitizer --tool racecheck $DRV --small) > $OUT/san.log 2>&1
grep -E "SUMMARY|small:|FAIL" $OUT/san.log
timeout 300 $DRV --check > $OUT/check.log 2>&1; echo rc=$?; grep -v "^ok" $OUT/check.log | tail -n 5
