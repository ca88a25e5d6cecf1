# Its flags live in sc-wgmma-store-probes.patch: run it on a checkout of 0952445 with that patch applied.
# Round 40: four warpgroups per CTA with the token ring (round 28 measured them before the ring
# existed). One build with -DTZ_NWG4; the SPT sweep (SC_TZ_SPT) times (SPT, 1, 256), (SPT, 3,
# 256), (SPT, 1, 384) and, with SC_TZ_NWG4, (SPT, 1, 512) of each layer, two passes; --check on
# the build (its launches are the default ones). Carry .devbuild/plans-h200.txt.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drv4 -DTZ_NWG4 > $OUT/b4.log 2>&1
CASES=${CASES:-NHWC_N32_28_M512_K5,NCHW_N32_28_M512_K5,NHWC_N1_512_M32_K5,NCHW_N1_512_M32_K5,NHWC_N32_56_M256_K5,NHWC_N32_112_M128_K5,NHWC_N1_512_M32_K3}
for pass in 1 2; do
  echo "== pass $pass build N"
  SC_TZ=2 SC_TZ_NWG4=1 SC_TZ_SPT=${SPTS:-6,8,12,24,48} SC_CASES=$CASES /tmp/drv4 --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
done > $OUT/ab.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/ab.log --per-launch | tee $OUT/ab-per-launch.txt
