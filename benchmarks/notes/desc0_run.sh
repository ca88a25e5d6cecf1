# Round 39: descriptors from per-CTA bases (-DTZ_DESC0: A's row kh = base + (ao + kh Ws) / 4, B's =
# base + 256 kh) instead of desc() per segment: fewer instructions between the ring's barrier and
# the first wgmma (SS K5: 75 -> 65). A = HEAD, B = -DTZ_DESC0, C = the patched tree without it.
# Carry .devbuild/plans-h200.txt. Apply sc-wgmma-desc0.patch to the tree first (git apply).
export CASES=NHWC_N32_28_M512_K5,NCHW_N32_28_M512_K5,NHWC_N1_512_M32_K5,NCHW_N1_512_M32_K5,NHWC_N32_56_M256_K5,NCHW_N32_56_M256_K5,NHWC_N32_112_M128_K5,NHWC_N1_1024_M32_K5,NHWC_N1_224_M64_K5,NCHW_N1_224_M64_K5
bash benchmarks/notes/ab_run.sh benchmarks/notes/sc-wgmma-desc0.patch -DTZ_DESC0 ""
