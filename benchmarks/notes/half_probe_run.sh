# Its flags live in sc-wgmma-store-probes.patch: run it on a checkout of 0952445 with that patch applied.
# Round 40: store instructions confined to one output region (timing; correct kernels). A = the
# tree as committed, B = -DTZ_PL_HALF (NCHW: each instruction one filter's 256 bytes, 16 lanes,
# where the committed ones cover 2 filters), C = -DTZ_NHWC_HALF (NHWC: each instruction half the
# warp's rows, 4 pixels' half-lines, where the committed ones cover 8); --check on B and C.
# Carry .devbuild/plans-h200.txt.
CHECK="B C" bash benchmarks/notes/flags_run.sh -DTZ_PL_HALF -DTZ_NHWC_HALF
