# Round 36: the wgmma kernel's staged stores (-DTZ_STAGED: 4 KB of shared memory per warp, whole
# 128-byte lines per store instruction; NCHW: a filter's 1 KB of a segment per warp) against the
# committed stores. Staged driver: --small under memcheck / racecheck, --check; then graph
# timing of both drivers' wgmma launches, two passes. Carry .devbuild/plans-h200.txt.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
(bash benchmarks/notes/build_driver.sh /tmp/drv0 > $OUT/b0.log 2>&1 &
 bash benchmarks/notes/build_driver.sh /tmp/drvT -DTZ_STAGED > $OUT/bT.log 2>&1 & wait)
PLANS=.devbuild/plans-h200.txt
(compute-sanitizer --tool memcheck /tmp/drvT --small; compute-sanitizer --tool racecheck /tmp/drvT --small) > $OUT/san.log 2>&1
grep -E "SUMMARY|small:|FAIL" $OUT/san.log
timeout 300 /tmp/drvT --check > $OUT/check.log 2>&1; echo rc=$?; grep -v "^ok" $OUT/check.log | tail -n 3
CASES=NCHW_N1_512_M32_K5,NHWC_N1_512_M32_K5,NCHW_N32_28_M512_K5,NHWC_N32_28_M512_K5,NCHW_N32_56_M256_K5,NHWC_N32_56_M256_K5,NCHW_N32_112_M128_K5,NHWC_N32_112_M128_K5,NCHW_N1_1024_M32_K5,NHWC_N1_1024_M32_K5,NCHW_N1_224_M64_K5,NHWC_N1_512_M32_K3,NHWC_N32_56_M256_K3
for pass in 1 2; do
  for v in 0 T; do
    echo "== pass $pass build $v"
    SC_TZ=2 SC_CASES=$CASES /tmp/drv$v --time --plans $PLANS 2>&1 | grep -E "variant \[6"
  done
done > $OUT/staged.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/staged.log
