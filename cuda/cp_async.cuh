// Asynchronous global -> shared copies (cp.async, sm_80+), shared by the convolution kernels.
// A copy with valid == false reads nothing and zero-fills its destination (padding, tails).
#pragma once

namespace fastconv {

__device__ __forceinline__ void cp_async4(float* smem_ptr, const float* gptr, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem_ptr));
  const int sz = valid ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gptr), "r"(sz)
               : "memory");
}
// One 16-byte copy to shared address s of which the first `bytes` (0..16) are read and the rest
// zero-filled; both addresses 16-byte aligned. L1 = false: cached in L2 only (.cg), for data a
// block reads once. L1 = true (.ca): also cached in L1, for small data that every block reads,
// in pieces scattered over its lines (the single-channel kernel's HWIO filters: with .cg each
// 16-byte piece of every block was its own L2 request to the same few hot lines; .ca let the
// SM's L1 merge them: 0.94-0.96x the time of b1 NHWC 5x5 layers, single_channel.md round 19).
template <bool L1>
__device__ __forceinline__ void cp_async16_to(unsigned s, const float* gptr, int bytes) {
  if constexpr (L1)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gptr), "r"(bytes)
                 : "memory");
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gptr), "r"(bytes)
                 : "memory");
}
// 16 bytes, all read (valid) or all zero-filled (see cp_async16_to)
template <bool L1 = false>
__device__ __forceinline__ void cp_async16(float* smem_ptr, const float* gptr, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem_ptr));
  cp_async16_to<L1>(s, gptr, valid ? 16 : 0);
}
// 16 bytes of which the first `bytes` (0..16) are read and the rest zero-filled (gptr readable
// for `bytes`), through L2 only
__device__ __forceinline__ void cp_async16_n(float* smem_ptr, const float* gptr, int bytes) {
  cp_async16_to<false>(static_cast<unsigned>(__cvta_generic_to_shared(smem_ptr)), gptr, bytes);
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// wait until at most N committed groups are still in flight
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace fastconv
