# Round 40: the taken NCHW store (one filter plane per instruction) against the tree before it
# (sc-wgmma-plane-stores.patch reversed), --check on it, and compute-sanitizer memcheck /
# racecheck on --small. Carry .devbuild/plans-h200.txt.
CASES=${CASES:-NCHW_N1_512_M32_K5,NCHW_N32_28_M512_K5,NCHW_N32_56_M256_K5,NCHW_N1_1024_M32_K5,NCHW_N32_112_M128_K5,NCHW_N1_224_M64_K5,NCHW_N32_224_M64_K5,NHWC_N1_512_M32_K5,NHWC_N32_28_M512_K5} \
  bash benchmarks/notes/ab_run.sh benchmarks/notes/sc-wgmma-plane-stores.patch
for tool in memcheck racecheck; do
  compute-sanitizer --tool $tool /tmp/drvB --small > $OUT/sanitizer-$tool.log 2>&1; tail -2 $OUT/sanitizer-$tool.log
done
