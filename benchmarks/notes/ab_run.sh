# ab_run.sh PATCH [FLAGS_B [FLAGS_C]]: HEAD (the tree with PATCH, a diff of cuda/, reversed)
# against the tree as it is: driver builds /tmp/drvA (HEAD), /tmp/drvB (the tree + FLAGS_B) and
# /tmp/drvC (the tree + FLAGS_C), best launch per layer over two alternating passes (CASES= to
# choose the layers); drvB also --check (not with NO_CHECK=1: timing-only builds). Carry
# .devbuild/plans-h200.txt. (flags_run.sh with BASE_PATCH.)
export CASES=${CASES:-NHWC_N32_28_M512_K5,NCHW_N32_28_M512_K5,NHWC_N1_512_M32_K5,NCHW_N1_512_M32_K5,NHWC_N32_56_M256_K5,NCHW_N32_56_M256_K5,NHWC_N1_1024_M32_K5,NHWC_N32_112_M128_K5,NHWC_N1_224_M64_K5,NCHW_N1_224_M64_K5}
BASE_PATCH=$1 CHECK=$([ -n "${NO_CHECK:-}" ] || echo B) bash benchmarks/notes/flags_run.sh "${2:-}" "${3:-}"
