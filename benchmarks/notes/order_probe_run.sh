# Round 40: the order of the wgmma kernel's output stores (timing; B, C and D are correct
# kernels). A = the tree as committed, B = -DTZ_PL_NOX=1 (NCHW: no lane exchange, each lane
# stores rows g and g + 8 of one filter in consecutive instructions: a filter's 256 bytes
# completed two instructions apart), C = -DTZ_PL_NOX=2 (the same stores, all rows g first:
# round 35's order), D = -DTZ_NHWC_PHQ (NHWC: a pixel's two 64-byte halves in consecutive
# instructions). Best launch per layer over two alternating passes, then --check on B and D.
# Carry .devbuild/plans-h200.txt. ~3 min of wall time.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drvA > $OUT/bA.log 2>&1 &
bash benchmarks/notes/build_driver.sh /tmp/drvB -DTZ_PL_NOX=1 > $OUT/bB.log 2>&1 &
bash benchmarks/notes/build_driver.sh /tmp/drvC -DTZ_PL_NOX=2 > $OUT/bC.log 2>&1 &
bash benchmarks/notes/build_driver.sh /tmp/drvD -DTZ_NHWC_PHQ > $OUT/bD.log 2>&1 &
wait
CASES=${CASES:-NCHW_N1_512_M32_K5,NCHW_N32_28_M512_K5,NCHW_N32_56_M256_K5,NCHW_N1_1024_M32_K5,NCHW_N32_112_M128_K5,NCHW_N1_224_M64_K5,NHWC_N1_512_M32_K5,NHWC_N32_28_M512_K5,NHWC_N32_56_M256_K5,NHWC_N32_112_M128_K5,NHWC_N1_1024_M32_K5,NHWC_N1_512_M32_K3}
for pass in 1 2; do
  for v in A B C D; do
    echo "== pass $pass build $v"
    SC_TZ=2 SC_CASES=$CASES /tmp/drv$v --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
  done
done > $OUT/ab.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/ab.log
python3 benchmarks/notes/best_by_build.py $OUT/ab.log --per-launch > $OUT/ab-per-launch.txt
for v in B D; do /tmp/drv$v --check --plans .devbuild/plans-h200.txt > $OUT/check$v.log 2>&1; tail -2 $OUT/check$v.log; done
