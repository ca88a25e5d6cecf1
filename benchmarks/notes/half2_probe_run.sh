# Its flags live in sc-wgmma-store-probes.patch: run it on a checkout of 0952445 with that patch applied.
# Round 40: one filter plane per store instruction, two ways (timing; correct kernels). A = the
# tree as committed, B = -DTZ_PL_HALF (after the lane exchange, 16 lanes x 16 bytes of one
# filter per instruction), C = -DTZ_PL_NOX=3 (no exchange: the 8 lanes g of one t, 128 bytes of
# one filter per instruction, rows g then g + 8); --check on C. Carry .devbuild/plans-h200.txt.
CASES=${CASES:-NCHW_N1_512_M32_K5,NCHW_N32_28_M512_K5,NCHW_N32_56_M256_K5,NCHW_N1_1024_M32_K5,NCHW_N32_112_M128_K5,NCHW_N1_224_M64_K5,NCHW_N32_224_M64_K5,NCHW_N32_512_M32_K5} \
  CHECK=C bash benchmarks/notes/flags_run.sh -DTZ_PL_HALF -DTZ_PL_NOX=3
