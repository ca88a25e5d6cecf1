// 3xTF32: float32 products on the TF32 tensor cores (mma.sync, sm_80+) at float32 accuracy.
//
// Each operand is split x = hi + lo, hi = tf32(x) and lo = tf32(x - hi), rounded to nearest
// (split_tf32) or truncated (split_tf32_trunc, below), and a b ~= a_lo b_hi + a_hi b_lo +
// a_hi b_hi: the dropped a_lo b_lo and the rounding of lo are ~2^-22 relative (2^-20 truncated).
// The tensor core's float32 accumulation truncates, and the error grows with the number of MMAs
// summed into one fragment (accumulating a whole 1600-deep reduction in place measured 1.1e-5
// relative L2 error, H200); the multi-channel kernel therefore sums only one stage's products in
// a fresh fragment and adds it to its float32 accumulators with FADD (round to nearest): 2.2e-7
// worst on the paper-multi set with the rounded split (errors with the truncated one: below).
//
// Non-finite inputs: a_hi b_lo is NaN for an infinite a and an exact b (inf x 0), where float32
// FMAs give inf; the kernel detects any non-finite accumulator and recomputes that tile with
// FFMAs (multi_channel.cu, mc_kernel), so the answer keeps float32 semantics.
#pragma once

#include <cstdint>

namespace fastconv {

// hi = x rounded to TF32 to nearest (ties away from zero, as cvt.rna): half a TF32 ulp added to
// the magnitude's bits, the 13 low bits dropped; lo = x - hi (exact) with the same half ulp
// added and its low bits left for the tensor core, which reads only a TF32 operand's upper 19
// bits. Same values as two cvt.rna.tf32.f32 for finite x, in 4 instructions instead of ~7
// (cvt.rna is emulated on sm_90: add, |x| < inf test, select, mask; 44% of the tensor-core
// instance's instructions were these splits, ncu, b32 28x28x256 K3 NHWC, H200). Non-finite x,
// and |x| within half a TF32 ulp of FLT_MAX, give a non-finite hi or lo, hence a non-finite
// accumulator, which the kernel's FFMA fallback recomputes.
__device__ __forceinline__ void split_tf32(float x, uint32_t& hi, uint32_t& lo) {
  const uint32_t h = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
  hi = h;
  lo = __float_as_uint(x - __uint_as_float(h)) + 0x1000u;
}
// The same split by truncation, in 2 instructions (AND, FADD): hi = x with its 13 low bits
// cleared, lo = x - hi (exact, same sign as x, |lo| < 2^-10 |x|) left whole for the tensor core,
// which truncates it to TF32: a_hi b_hi + a_hi b_lo + a_lo b_hi then misses at most ~2^-20 |a b|
// (a_lo b_lo and the truncated low bits of lo), and the truncation's bias points the same way as
// the product, so over a long sum it scales the result by ~(1 - 2^-21) rather than adding up
// against it. The multi-channel kernel splits its A fragments (and the B fragments of its 32-
// and 64-pixel tiles) this way; the 128x64 tile's B fragments keep the rounded split, with which
// it does not spill. Measured so (H200): 4.3e-7 worst relative L2 error on the paper-multi set
// (2.9e-7 all rounded), 8.5e-7 over 300 random layers, 0.939x the time over its 99 tensor-core
// paper layers (benchmarks/notes/multi_channel.md, round 21).
__device__ __forceinline__ void split_tf32_trunc(float x, uint32_t& hi, uint32_t& lo) {
  const uint32_t h = __float_as_uint(x) & 0xffffe000u;
  hi = h;
  lo = __float_as_uint(x - __uint_as_float(h));
}

// D = A B + D for one m16n8k8 TF32 tile (PTX ISA, mma.m16n8k8 .tf32), g = lane / 4, t = lane % 4:
// A (16 x 8, row) a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4);
// B (8 x 8, col) b0 (k t, n g), b1 (k t+4, n g);
// D d0 (g, 2t), d1 (g, 2t+1), d2 (g+8, 2t), d3 (g+8, 2t+1).
__device__ __forceinline__ void mma_tf32(float* d, const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace fastconv
