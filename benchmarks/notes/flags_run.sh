# flags_run.sh [FLAGS_B [FLAGS_C ...]]: driver builds of the tree as it is, A without extra nvcc
# flags (BASE_PATCH=P: A from a copy of the tree with the patch P, a diff of cuda/, reversed)
# and B, C, ... with each argument's; best launch per layer over two alternating passes of the
# wgmma kernel's launches (CASES= to choose the layers), then --check on the builds named in
# CHECK (e.g. CHECK="B D"). REV_PATCHES="P1 P2": more builds after the flag ones, each from a
# copy of the tree with that patch reversed. SAME_TOO=1: the timing again with SC_SAME=1 (into
# ab-same.log). Carry .devbuild/plans-h200.txt.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
builds=(A) && flags=("")
for f in "$@"; do builds+=($(printf "\\x$(printf %x $((65 + ${#builds[@]})))")); flags+=("$f"); done
if [ -n "${BASE_PATCH:-}" ]; then
  bp=$(realpath "$BASE_PATCH")  # relative to the repository or absolute
  rm -rf /tmp/head && mkdir /tmp/head && cp -r cuda tests benchmarks /tmp/head/ &&
    (cd /tmp/head && git apply -R "$bp")
  (cd /tmp/head && bash benchmarks/notes/build_driver.sh /tmp/drvA > $OUT/bA.log 2>&1) &
fi
for p in ${REV_PATCHES:-}; do
  b=$(printf "\\x$(printf %x $((65 + ${#builds[@]})))") && builds+=($b) && flags+=("")
  d=/tmp/rev$b && pp=$(realpath "$p") && rm -rf $d && mkdir $d && cp -r cuda tests benchmarks $d/ &&
    (cd $d && git apply -R "$pp" && bash benchmarks/notes/build_driver.sh /tmp/drv$b > $OUT/b$b.log 2>&1) &
  revs+=($b)
done
for k in "${!builds[@]}"; do
  [[ " ${revs[*]:-} " == *" ${builds[$k]} "* ]] && continue
  [ $k = 0 ] && [ -n "${BASE_PATCH:-}" ] && continue
  bash benchmarks/notes/build_driver.sh /tmp/drv${builds[$k]} ${flags[$k]} > $OUT/b${builds[$k]}.log 2>&1 &
done
wait
CASES=${CASES:-NCHW_N1_512_M32_K5,NCHW_N32_28_M512_K5,NCHW_N32_56_M256_K5,NCHW_N1_1024_M32_K5,NCHW_N32_112_M128_K5,NCHW_N1_224_M64_K5,NHWC_N1_512_M32_K5,NHWC_N32_28_M512_K5,NHWC_N32_56_M256_K5,NHWC_N32_112_M128_K5,NHWC_N1_1024_M32_K5,NHWC_N1_512_M32_K3}
for log in ab ${SAME_TOO:+ab-same}; do
  for pass in 1 2; do
    for v in "${builds[@]}"; do
      echo "== pass $pass build $v"
      ([ $log = ab-same ] && export SC_SAME=1
       SC_TZ=2 SC_CASES=$CASES /tmp/drv$v --time --plans .devbuild/plans-h200.txt 2>&1) | grep -E "variant \[6"
    done
  done > $OUT/$log.log 2>&1
  echo "== $log" && python3 benchmarks/notes/best_by_build.py $OUT/$log.log
  python3 benchmarks/notes/best_by_build.py $OUT/$log.log --per-launch > $OUT/$log-per-launch.txt
done
for v in ${CHECK:-}; do /tmp/drv$v --check --plans .devbuild/plans-h200.txt > $OUT/check$v.log 2>&1; tail -3 $OUT/check$v.log; done
