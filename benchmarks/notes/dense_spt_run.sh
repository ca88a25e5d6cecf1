# dense_spt_run.sh (round 42): the wgmma kernel's launches over segments per CTA (SC_TZ_SPT,
# default 6-12), flat and dense (SC_TZ_DENSE), with 2 and 3 warpgroups (SC_TZ_RS3) on the
# layers near the 70% mark; best per layer and launch over two passes. Carry
# .devbuild/plans-h200.txt.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drv > $OUT/bdrv.log 2>&1
C=${CASES:-NCHW_N32_28_M512_K5,NHWC_N32_28_M512_K5,NHWC_N32_28_M512_K3,NCHW_N1_512_M32_K5}
for pass in 1 2; do
  echo "== pass $pass build A"
  SC_TZ=2 SC_TZ_SPT=${SPTS:-6,7,8,9,10,11,12} SC_TZ_DENSE=1 SC_TZ_RS3=1 SC_CASES=$C \
    /tmp/drv --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
done > $OUT/ab.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/ab.log --per-launch > $OUT/ab-per-launch.txt
sort -k1,1 -k3,3n $OUT/ab-per-launch.txt | awk '{if ($1 != last) {n = 0; last = $1} if (n++ < 6) print}'
