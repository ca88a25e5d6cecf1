# phase_run.sh (round 44; round 36's, against HEAD's kernel): where the wgmma kernel's time goes
# on the layers that miss and their NHWC twins. Builds: 0 as it is, TZ_PHASE=1 (MMAs, no
# stores), 2 (stores of made-up accumulators, no MMAs), 3 (neither), 4 (launch and setup only,
# returning after the setup's barrier); timing only for 1-4 (wrong values); with the probe macros
# of notes/sc-wgmma-probes44.patch applied. N: build 0 with notes/sc-wgmma-nodead.patch as well.
# Compare launch by launch. Carry .devbuild/plans-h200.txt.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
rm -rf /tmp/nd && mkdir /tmp/nd && cp -r cuda tests benchmarks /tmp/nd/ &&
  (cd /tmp/nd && patch -p1 < benchmarks/notes/sc-wgmma-nodead.patch)
(cd /tmp/nd && bash benchmarks/notes/build_driver.sh /tmp/drvN > $OUT/bN.log 2>&1) &
for v in 0 1 2 3 4; do
  bash benchmarks/notes/build_driver.sh /tmp/drv$v $([ $v = 0 ] || echo -DTZ_PHASE=$v) > $OUT/b$v.log 2>&1 &
done
wait
CASES=${CASES:-NHWC_N32_28_M512_K5,NCHW_N32_28_M512_K5,NHWC_N1_512_M32_K5,NCHW_N1_512_M32_K5}
for pass in 1 2; do
  for v in 0 N 1 2 3 4; do
    echo "== pass $pass build $v"
    SC_TZ=2 SC_CASES=$CASES /tmp/drv$v --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
  done
done > $OUT/phase.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/phase.log
python3 benchmarks/notes/best_by_build.py $OUT/phase.log --per-launch > $OUT/phase-per-launch.txt
/tmp/drvN --check --plans .devbuild/plans-h200.txt > $OUT/checkN.log 2>&1; tail -2 $OUT/checkN.log
