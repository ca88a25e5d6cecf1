# Round 39: the round-robin store footprint in the wgmma kernel, timing only (B's and C's answers
# are wrong: round k's stores go to the segments of chunk (the CTA's k-th chunk) x groups + group,
# chunks of TZ_RR_CHUNK segments, as if the CTAs took chunks round-robin; where that index is
# past the last segment, the stores are skipped, so launches whose SPT is below the chunk are not
# valid). A = HEAD, B = -DTZ_RR_PROBE $FLAGS_B, C = $FLAGS_C (the control when empty; call 4 used
# FLAGS_B="-DTZ_RR_CHUNK=8" FLAGS_C="-DTZ_RR_PROBE -DTZ_RR_CHUNK=4"). Carry
# .devbuild/plans-h200.txt. ~60 s of wall time. Apply the patch to the tree first (git apply).
export CASES=${CASES:-NCHW_N1_512_M32_K5,NHWC_N1_512_M32_K5,NCHW_N1_1024_M32_K5,NHWC_N1_1024_M32_K5,NCHW_N32_28_M512_K5,NHWC_N32_28_M512_K5,NCHW_N32_56_M256_K5,NCHW_N32_112_M128_K5}
NO_CHECK=1 bash benchmarks/notes/ab_run.sh benchmarks/notes/sc-wgmma-rr-probe.patch "-DTZ_RR_PROBE ${FLAGS_B:-}" "${FLAGS_C:-}"
