# Round 39 (measured, not taken): round-robin chunks in the wgmma kernel (plan[6] >> 2 = c, CH =
# 2 << c; sc-wgmma-rr.patch: kernel + driver, sc-wgmma-rr-planner.patch: planner + CPU tests,
# both against 1cd8172). Run from the tree with sc-wgmma-rr.patch applied: A = 1cd8172 (the patch
# reversed), B = the patched tree (its SC_TZ launch list adds the chunked launches), C = the same
# (control); --check on B; --small under memcheck and racecheck. Carry .devbuild/plans-h200.txt.
export CASES=NHWC_N32_224_M64_K5,NCHW_N32_224_M64_K5,NHWC_N32_112_M128_K5,NCHW_N32_112_M128_K5,NHWC_N32_56_M256_K5,NCHW_N32_56_M256_K5,NHWC_N1_1024_M32_K5,NCHW_N1_1024_M32_K5,NHWC_N1_512_M32_K5,NCHW_N1_512_M32_K5,NHWC_N32_28_M512_K5,NCHW_N32_28_M512_K5
bash benchmarks/notes/ab_run.sh benchmarks/notes/sc-wgmma-rr.patch "" ""
for tool in memcheck racecheck; do
  echo "== $tool"; compute-sanitizer --tool $tool /tmp/drvB --small 2>&1 | tail -4
done > $OUT/sanitizers.log 2>&1
cat $OUT/sanitizers.log
