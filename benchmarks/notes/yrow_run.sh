# yrow_run.sh: the wgmma kernel's NCHW launches with the output's rows as they are (A) and as
# long as the band's line (B, SC_YROW=1: every store run in whole 32-byte sectors), one driver
# build, two alternating passes; then --check with SC_YROW=1. Carry .devbuild/plans-h200.txt.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drvA > $OUT/bA.log 2>&1
C=${CASES:-NCHW_N1_512_M32_K5,NCHW_N32_28_M512_K5,NCHW_N32_56_M256_K5,NCHW_N1_1024_M32_K5,NCHW_N32_112_M128_K5,NCHW_N1_224_M64_K5}
for pass in 1 2; do
  echo "== pass $pass build A"
  SC_TZ=2 SC_CASES=$C /tmp/drvA --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
  echo "== pass $pass build B"
  SC_YROW=1 SC_TZ=2 SC_CASES=$C /tmp/drvA --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
done > $OUT/ab.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/ab.log
python3 benchmarks/notes/best_by_build.py $OUT/ab.log --per-launch > $OUT/ab-per-launch.txt
SC_YROW=1 /tmp/drvA --check --plans .devbuild/plans-h200.txt > $OUT/checkB.log 2>&1; tail -2 $OUT/checkB.log
