# flags_run.sh [FLAGS_B [FLAGS_C ...]]: driver builds of the tree as it is, A without extra nvcc
# flags (BASE_PATCH=P: A from a copy of the tree with the patch P, a diff of cuda/, reversed)
# and B, C, ... with each argument's; best launch per layer over two alternating passes of the
# wgmma kernel's launches (CASES= to choose the layers), then --check on the builds named in
# CHECK (e.g. CHECK="B D"). REV_PATCHES="P1 P2": more builds after the flag ones, each from a
# copy of the tree with that patch reversed. SAME_TOO=1: the timing again with SC_SAME=1 (into
# ab-same.log). Carry .devbuild/plans-h200.txt.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
letter() { printf "\\x$(printf %x $((65 + $1)))"; }  # build k's name: A, B, ...
build_reversed() {  # build_reversed NAME PATCH: the driver of the tree with PATCH reversed
  local d=/tmp/rev$1 p
  p=$(realpath "$2") || return 1  # relative to the repository or absolute
  rm -rf $d && mkdir $d && cp -r cuda tests benchmarks $d/ &&
    (cd $d && git apply -R "$p" && bash benchmarks/notes/build_driver.sh /tmp/drv$1 > $OUT/b$1.log 2>&1)
}
builds=(A) && flags=("")
for f in "$@"; do builds+=($(letter ${#builds[@]})); flags+=("$f"); done
for k in "${!builds[@]}"; do
  if [ $k = 0 ] && [ -n "${BASE_PATCH:-}" ]; then
    build_reversed A "$BASE_PATCH" &
  else
    bash benchmarks/notes/build_driver.sh /tmp/drv${builds[$k]} ${flags[$k]} > $OUT/b${builds[$k]}.log 2>&1 &
  fi
done
for p in ${REV_PATCHES:-}; do
  b=$(letter ${#builds[@]})
  builds+=($b)
  build_reversed $b "$p" &
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
