# Round 39: the round-robin store footprint in the wgmma kernel, timing only (B's answers are
# wrong: round k's stores go to segment k * groups + group, as if the CTAs took segments
# round-robin; where that index is past the last segment, the stores are skipped, b32 28^2
# only). A = HEAD, B = -DTZ_RR_PROBE, C = the patched tree without the flag. Carry
# .devbuild/plans-h200.txt. ~60 s of wall time.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
rm -rf /tmp/head && mkdir /tmp/head && cp -r cuda tests benchmarks /tmp/head/ && (cd /tmp/head && git apply -R $OLDPWD/benchmarks/notes/sc-wgmma-rr-probe.patch)
(cd /tmp/head && bash benchmarks/notes/build_driver.sh /tmp/drvA > $OUT/bA.log 2>&1) &
bash benchmarks/notes/build_driver.sh /tmp/drvB -DTZ_RR_PROBE ${FLAGS_B} > $OUT/bB.log 2>&1 &
bash benchmarks/notes/build_driver.sh /tmp/drvC ${FLAGS_C} > $OUT/bC.log 2>&1 &
wait
CASES=${CASES:-NCHW_N1_512_M32_K5,NHWC_N1_512_M32_K5,NCHW_N1_1024_M32_K5,NHWC_N1_1024_M32_K5,NCHW_N32_28_M512_K5,NHWC_N32_28_M512_K5,NCHW_N32_56_M256_K5,NCHW_N32_112_M128_K5}
for pass in 1 2; do
  for v in A B C; do
    echo "== pass $pass build $v"
    SC_TZ=2 SC_CASES=$CASES /tmp/drv$v --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
  done
done > $OUT/ab.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/ab.log
python3 benchmarks/notes/best_by_build.py $OUT/ab.log --per-launch > $OUT/ab-per-launch.txt
