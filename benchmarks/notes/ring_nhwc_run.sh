# Round 38, run (section B of results/sweeps/sc-session51-20261127.txt): A = 610fc64, B = the
# ring for NHWC only (committed as 1ccdfb1), C = B with plain write-back output stores
# (-DTZ_STORE_PLAIN, a knob of this patch only). The patch applies to 610fc64, not to HEAD.
export CASES=NHWC_N32_28_M512_K5,NCHW_N32_28_M512_K5,NHWC_N1_512_M32_K5,NCHW_N1_512_M32_K5,NHWC_N32_56_M256_K5,NCHW_N32_56_M256_K5,NHWC_N1_1024_M32_K5,NHWC_N32_112_M128_K5,NHWC_N1_224_M64_K5,NCHW_N1_224_M64_K5,NHWC_N32_28_M512_K3,NHWC_N32_56_M256_K3,NCHW_N32_112_M128_K5
bash benchmarks/notes/ab_run.sh benchmarks/notes/sc-wgmma-ring-nhwc.patch "" -DTZ_STORE_PLAIN
