# Round 36: the wgmma kernel with filter blocks fastest in its grid (committed path): the driver's
# --small under memcheck / racecheck, --check, then graph timing of its launches over a sweep of
# segments per CTA (SC_TZ_SPT) on the b32 K5 layers and the planned grids on the b1 ones, two
# passes. Carry .devbuild/plans-h200.txt.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drv > $OUT/drv_build.log 2>&1; tail -n 3 $OUT/drv_build.log
PLANS=.devbuild/plans-h200.txt
B32=NCHW_N32_56_M256_K5,NCHW_N32_28_M512_K5,NCHW_N32_112_M128_K5,NHWC_N32_56_M256_K5,NHWC_N32_28_M512_K5,NHWC_N32_112_M128_K5,NCHW_N32_56_M256_K3,NHWC_N32_56_M256_K3
B1=NCHW_N1_512_M32_K5,NHWC_N1_512_M32_K5,NCHW_N1_1024_M32_K5,NHWC_N1_1024_M32_K5,NCHW_N1_224_M64_K5,NHWC_N1_224_M64_K5,NHWC_N1_112_M128_K5,NHWC_N1_56_M256_K5,NCHW_N1_112_M128_K5
for pass in 1 2; do
  SC_TZ=2 SC_TZ_SPT=2,3,4,6,8,12,16,24,32 SC_CASES=$B32 /tmp/drv --time --plans $PLANS 2>&1 | grep "variant \[6"
  SC_TZ=2 SC_CASES=$B1 /tmp/drv --time --plans $PLANS 2>&1 | grep "variant \[6"
  SC_CASES=$B32,$B1 /tmp/drv --time --plans $PLANS 2>&1 | grep -E "plan |variant"
done > $OUT/order.log 2>&1
(compute-sanitizer --tool memcheck /tmp/drv --small; compute-sanitizer --tool racecheck /tmp/drv --small) > $OUT/san.log 2>&1
grep -E "SUMMARY|small:|FAIL" $OUT/san.log
timeout 300 /tmp/drv --check > $OUT/check.log 2>&1; echo rc=$?; grep -v "^ok" $OUT/check.log | tail -n 5
