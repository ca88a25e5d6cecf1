# ab_run.sh PATCH [FLAGS_B [FLAGS_C]]: HEAD (the tree with PATCH, a diff of cuda/, reversed)
# against the tree as it is: driver builds /tmp/drvA (HEAD), /tmp/drvB (the tree + FLAGS_B) and
# /tmp/drvC (the tree + FLAGS_C), best launch per layer over two alternating passes (CASES= to
# choose the layers); drvB also --check (not with NO_CHECK=1: timing-only builds). Carry
# .devbuild/plans-h200.txt.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
rm -rf /tmp/head && mkdir /tmp/head && cp -r cuda tests benchmarks /tmp/head/ && (cd /tmp/head && git apply -R $OLDPWD/$1)
(cd /tmp/head && bash benchmarks/notes/build_driver.sh /tmp/drvA > $OUT/bA.log 2>&1) &
bash benchmarks/notes/build_driver.sh /tmp/drvB $2 > $OUT/bB.log 2>&1 &
bash benchmarks/notes/build_driver.sh /tmp/drvC $3 > $OUT/bC.log 2>&1 &
wait
CASES=${CASES:-NHWC_N32_28_M512_K5,NCHW_N32_28_M512_K5,NHWC_N1_512_M32_K5,NCHW_N1_512_M32_K5,NHWC_N32_56_M256_K5,NCHW_N32_56_M256_K5,NHWC_N1_1024_M32_K5,NHWC_N32_112_M128_K5,NHWC_N1_224_M64_K5,NCHW_N1_224_M64_K5}
for pass in 1 2; do
  for v in A B C; do
    echo "== pass $pass build $v"
    SC_TZ=2 SC_CASES=$CASES /tmp/drv$v --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
  done
done > $OUT/ab.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/ab.log
python3 benchmarks/notes/best_by_build.py $OUT/ab.log --per-launch > $OUT/ab-per-launch.txt
[ -n "${NO_CHECK:-}" ] || { /tmp/drvB --check --plans .devbuild/plans-h200.txt > $OUT/check.log 2>&1; tail -3 $OUT/check.log; }
