# compact_run.sh (a40b0ed with notes/sc-wgmma-align.patch applied): the NCHW layers with the
# band's line = OW (-DTZ_COMPACT, B; timing only: the
# last KW - 1 columns of every row are then wrong) against the tree as it is (A), and the 5x1
# layers of notes/plans-k51-h200.txt (whose line is OW anyway), two alternating passes.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drvA > $OUT/bA.log 2>&1 &
bash benchmarks/notes/build_driver.sh /tmp/drvB -DTZ_COMPACT > $OUT/bB.log 2>&1 &
wait
C=${CASES:-NCHW_N1_512_M32_K5,NCHW_N1_508,NCHW_N32_28_M512_K5,NCHW_N32_56_M256_K5,NHWC_N1_512_M32_K5,NHWC_N1_508}
for pass in 1 2; do
  for v in A B; do
    echo "== pass $pass build $v"
    SC_TZ=2 SC_CASES=$C /tmp/drv$v --time --plans benchmarks/notes/plans-k51-h200.txt 2>&1 | grep -E "variant \[6"
  done
done > $OUT/ab.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/ab.log
python3 benchmarks/notes/best_by_build.py $OUT/ab.log --per-launch > $OUT/ab-per-launch.txt
