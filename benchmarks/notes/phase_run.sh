# Prepared in round 36 for the next session (not run): where the wgmma kernel's time goes on the
# layers that miss (b32 28^2 K5, b1 512^2 K5) beside two that pass. Apply
# notes/sc-wgmma-phase.patch (git apply) in the device's copy. Builds: HEAD (0), -DTZ_PHASE=1
# (the MMAs, no stores), 2 (the stores of made-up accumulators, no MMAs), 3 (neither: launch,
# band and filter staging). Timing only for 1-3 (wrong values): compare launch by launch, e.g.
# whether 0 ~ max(1, 2) (overlapped) or ~ 1 + 2 - 3 (serial). Carry .devbuild/plans-h200.txt.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
(bash benchmarks/notes/build_driver.sh /tmp/drv0 > $OUT/b0.log 2>&1 &
 bash benchmarks/notes/build_driver.sh /tmp/drv1 -DTZ_PHASE=1 > $OUT/b1.log 2>&1 &
 bash benchmarks/notes/build_driver.sh /tmp/drv2 -DTZ_PHASE=2 > $OUT/b2.log 2>&1 &
 bash benchmarks/notes/build_driver.sh /tmp/drv3 -DTZ_PHASE=3 > $OUT/b3.log 2>&1 & wait)
CASES=NHWC_N32_28_M512_K5,NCHW_N32_28_M512_K5,NHWC_N1_512_M32_K5,NCHW_N1_512_M32_K5,NHWC_N32_56_M256_K5,NHWC_N1_1024_M32_K5
for pass in 1 2; do
  for v in 0 1 2 3; do
    echo "== pass $pass build $v"
    SC_TZ=2 SC_CASES=$CASES /tmp/drv$v --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
  done
done > $OUT/phase.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/phase.log --per-launch
