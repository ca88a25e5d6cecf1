# Prepared in round 35 for the next session (not run): what the NCHW wgmma stores
# (tz_store_planes, 2 filters x 256 bytes a store, ~1.15x the NHWC kernel's time) pay for.
# Three drivers from HEAD with notes/sc-wgmma-planes-pattern.patch applied in the device's copy
# (git apply): the committed path, TZ_PLANES_PATTERN=1 (the same stores, no shuffles or selects)
# and =2 (512-byte runs: warp pairs each write 16 filters x 32 consecutive float4s). Timing
# only: the pattern builds write wrong values (never --check them). PLANS: carry
# .devbuild/plans-h200.txt (python -m jax_fastconv.plan_single_channel --export F --hardware h200).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
(bash benchmarks/notes/build_driver.sh /tmp/drv0 > $OUT/b0.log 2>&1 &
 bash benchmarks/notes/build_driver.sh /tmp/drv1 -DTZ_PLANES_PATTERN=1 > $OUT/b1.log 2>&1 &
 bash benchmarks/notes/build_driver.sh /tmp/drv2 -DTZ_PLANES_PATTERN=2 > $OUT/b2.log 2>&1 & wait)
CASES=NCHW_N1_512_M32_K5,NCHW_N32_56_M256_K5,NCHW_N1_1024_M32_K5,NCHW_N32_112_M128_K5,NHWC_N1_512_M32_K5,NHWC_N32_56_M256_K5
for pass in 1 2; do
  for v in 0 1 2; do
    echo "== pass $pass build $v"
    SC_TZ=2 SC_VARIANTS=0 SC_CASES=$CASES /tmp/drv$v --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
  done
done | tee $OUT/pattern.log
