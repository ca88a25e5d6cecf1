set -x
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drvA > $OUT/bA.log 2>&1
C=NCHW_N1_512_M32_K5,NCHW_N32_28_M512_K5,NCHW_N32_56_M256_K5,NHWC_N32_28_M512_K5,NHWC_N1_512_M32_K5
for pass in 1 2; do
  echo "== pass $pass build A"
  SC_TZ=2 SC_TZ_RS3=1 SC_TZ_SPT=6,8,9,12,24 SC_CASES=$C /tmp/drvA --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
done > $OUT/rs3.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/rs3.log --per-launch
