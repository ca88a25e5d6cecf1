# Round 36: the wgmma grid's wave quantization. Apply notes/sc-wgmma-fit.patch (git apply) in
# the device's copy. Builds: HEAD (0), -DTZ_BALANCED (B: the segments split evenly over the
# grid's groups), -DTZ_BALANCED -DTZ_FIT (F: where the grid overflows one wave of CTAs by at most
# a quarter, floor(slots / (M / 32)) larger groups instead). F: --small under memcheck, --check.
# Then graph timing of the wgmma launches, two passes. Carry .devbuild/plans-h200.txt.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
(bash benchmarks/notes/build_driver.sh /tmp/drv0 > $OUT/b0.log 2>&1 &
 bash benchmarks/notes/build_driver.sh /tmp/drvB -DTZ_BALANCED > $OUT/bB.log 2>&1 &
 bash benchmarks/notes/build_driver.sh /tmp/drvF -DTZ_BALANCED -DTZ_FIT > $OUT/bF.log 2>&1 & wait)
PLANS=.devbuild/plans-h200.txt
compute-sanitizer --tool memcheck /tmp/drvF --small > $OUT/san.log 2>&1; grep -E "SUMMARY|small:" $OUT/san.log
timeout 300 /tmp/drvF --check > $OUT/check.log 2>&1; echo rc=$?; grep -v "^ok" $OUT/check.log | tail -n 2
CASES=NCHW_N32_28_M512_K5,NHWC_N32_28_M512_K5,NCHW_N32_56_M256_K5,NHWC_N32_56_M256_K5,NCHW_N32_112_M128_K5,NHWC_N32_112_M128_K5,NHWC_N32_28_M512_K3,NHWC_N32_56_M256_K3,NHWC_N32_224_M64_K5,NHWC_N1_512_M32_K5,NHWC_N1_1024_M32_K5
for pass in 1 2; do
  for v in 0 B F; do
    echo "== pass $pass build $v"
    SC_TZ=2 SC_CASES=$CASES /tmp/drv$v --time --plans $PLANS 2>&1 | grep -E "variant \[6"
  done
done > $OUT/fit.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/fit.log
