# Round 39: the ring's critical path. B = -DTZ_HOIST (A from registers: each lane's fragment
# loads issued before the ring's wait, the wait a predicated bar.sync so that ptxas keeps the
# wgmmas asynchronous); C = B + -DTZ_ARRIVE_ISSUE (the turn passes once the products are issued,
# not done: both warpgroups' wgmmas queue together). A = HEAD. Carry .devbuild/plans-h200.txt.
# Apply sc-wgmma-hoist.patch to the tree first (git apply); ab_run.sh reverses it for A.
export CASES=NHWC_N1_512_M32_K5,NCHW_N1_512_M32_K5,NHWC_N32_28_M512_K5,NCHW_N32_28_M512_K5,NHWC_N32_56_M256_K5,NHWC_N32_112_M128_K5,NHWC_N1_1024_M32_K5,NHWC_N32_224_M64_K5,NHWC_N1_224_M64_K5,NCHW_N1_224_M64_K5
bash benchmarks/notes/ab_run.sh benchmarks/notes/sc-wgmma-hoist.patch -DTZ_HOIST "-DTZ_HOIST -DTZ_ARRIVE_ISSUE"
