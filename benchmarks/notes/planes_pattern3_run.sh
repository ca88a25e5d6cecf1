# Round 36: what the NCHW wgmma stores pay for, second probe. Apply notes/sc-wgmma-planes-pattern3.patch
# (it holds round 35's patterns 1 and 2 too) in the device's copy (git apply). Builds: committed
# path (0), TZ_PLANES_PATTERN=2 (512-byte runs), =3 (1 KB runs: a warp per filter), TZ_GRID_SWAP
# (filter blocks fastest in the grid) on the committed path (S) and with pattern 3 (S3). Timing
# only for 2 / 3 / S3: wrong values. Carry .devbuild/plans-h200.txt.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
(bash benchmarks/notes/build_driver.sh /tmp/drv0 > $OUT/b0.log 2>&1 &
 bash benchmarks/notes/build_driver.sh /tmp/drv2 -DTZ_PLANES_PATTERN=2 > $OUT/b2.log 2>&1 &
 bash benchmarks/notes/build_driver.sh /tmp/drv3 -DTZ_PLANES_PATTERN=3 > $OUT/b3.log 2>&1 &
 bash benchmarks/notes/build_driver.sh /tmp/drvS -DTZ_GRID_SWAP > $OUT/bS.log 2>&1 &
 bash benchmarks/notes/build_driver.sh /tmp/drvS3 -DTZ_GRID_SWAP -DTZ_PLANES_PATTERN=3 > $OUT/bS3.log 2>&1 & wait)
CASES=NCHW_N1_512_M32_K5,NCHW_N32_56_M256_K5,NCHW_N32_28_M512_K5,NCHW_N32_112_M128_K5,NHWC_N1_512_M32_K5,NHWC_N32_56_M256_K5,NHWC_N32_28_M512_K5
for pass in 1 2; do
  for v in 0 2 3 S S3; do
    echo "== pass $pass build $v"
    SC_TZ=2 SC_VARIANTS=0 SC_CASES=$CASES /tmp/drv$v --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
  done
done > $OUT/pattern3.log 2>&1
