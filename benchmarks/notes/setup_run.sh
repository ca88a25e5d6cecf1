# Round 37: where the wgmma kernel's setup goes (timing only; wrong values). Apply (to f7d379b)
# notes/sc-wgmma-setup.patch (round 36's phase probe plus TZ_PHASE bits 4: filters from
# constants, 8: band from constants, 16: return after the setup's barrier, 32: return at entry).
# Builds: 0 (HEAD), 3 (no MMAs, no stores), 19 (setup only), 23 (setup, no filter loads),
# 27 (setup, no band loads), 31 (setup, no global loads), 32 (the launch alone). Carry
# .devbuild/plans-h200.txt. Pass 3 repeats 0 and 19 with SC_HOT_W=1 (one filter buffer).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
B="0 3 19 23 27 31 32"
for v in $B; do
  if [ $v = 0 ]; then bash benchmarks/notes/build_driver.sh /tmp/drv$v > $OUT/b$v.log 2>&1 &
  else bash benchmarks/notes/build_driver.sh /tmp/drv$v -DTZ_PHASE=$v > $OUT/b$v.log 2>&1 & fi
done
wait
CASES=NHWC_N32_28_M512_K5,NHWC_N1_512_M32_K5,NCHW_N1_512_M32_K5,NHWC_N32_56_M256_K5
for pass in 1 2; do
  for v in $B; do
    echo "== pass $pass build $v"
    SC_TZ=2 SC_CASES=$CASES /tmp/drv$v --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
  done
done > $OUT/setup.log 2>&1
for v in 0 19; do
  echo "== pass 3 build hot$v"
  SC_HOT_W=1 SC_TZ=2 SC_CASES=$CASES /tmp/drv$v --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
done >> $OUT/setup.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/setup.log --per-launch
