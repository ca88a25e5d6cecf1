# Its flags live in sc-wgmma-store-probes.patch: run it on a checkout of 0952445 with that patch applied.
# Round 40: NCHW stores with the warpgroup's warps in step (timing; correct kernels). A = the
# tree as committed, B = -DTZ_PL_SYNC=1 (a 128-thread barrier after every 2 store instructions),
# C = -DTZ_PL_SYNC=2 (after every 8); --check on B. Carry .devbuild/plans-h200.txt.
CASES=${CASES:-NCHW_N1_512_M32_K5,NCHW_N32_28_M512_K5,NCHW_N32_56_M256_K5,NCHW_N1_1024_M32_K5,NCHW_N32_112_M128_K5,NCHW_N1_224_M64_K5,NHWC_N1_512_M32_K5} \
  CHECK=B bash benchmarks/notes/flags_run.sh -DTZ_PL_SYNC=1 -DTZ_PL_SYNC=2
