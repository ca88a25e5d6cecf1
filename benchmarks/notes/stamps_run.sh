# stamps_run.sh (round 44): the wgmma kernel's per-warpgroup timeline (notes/sc-wgmma-stamps.patch
# applied; -DTZ_STAMPS, SC_STAMPS=1), medians over warpgroups of each launch's last of 3 runs,
# then the plain build's time of the same launches. STAMPS_B="-DTZ_..." (round 48): a second
# stamped build with those flags, its timeline after the first's. Carry .devbuild/plans-h200.txt.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
builds=(S)
bash benchmarks/notes/build_driver.sh /tmp/drvS -DTZ_STAMPS > $OUT/bS.log 2>&1 &
if [ -n "${STAMPS_B:-}" ]; then
  builds+=(B)
  bash benchmarks/notes/build_driver.sh /tmp/drvB -DTZ_STAMPS $STAMPS_B > $OUT/bB.log 2>&1 &
fi
bash benchmarks/notes/build_driver.sh /tmp/drv0 > $OUT/b0.log 2>&1 &
wait
CASES=${CASES:-NCHW_N32_28_M512_K5,NHWC_N32_28_M512_K5,NCHW_N1_512_M32_K5,NHWC_N1_512_M32_K5}
for v in "${builds[@]}"; do
  SC_STAMPS=1 SC_TZ=2 SC_CASES=$CASES /tmp/drv$v --time --plans .devbuild/plans-h200.txt > $OUT/stamps$v.log 2>&1
  echo "=== stamped build $v"
  # the stamps of the bench's launches (the lines before each chosen variant line)
  awk '/stamps|round/ {buf = buf $0 "\n"; next} /variant \[6,1,1,32,(9,11|8,7|8,3|8,11),256\]/ {printf "%s%s\n", buf, $0} {buf = ""}' $OUT/stamps$v.log
done
SC_TZ=2 SC_CASES=$CASES /tmp/drv0 --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6" > $OUT/plain.log
grep -E "variant \[6,1,1,32,(9,11|8,7|8,3|8,11),256\]" $OUT/plain.log
