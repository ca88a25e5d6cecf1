// Register-tile helpers shared by the single-channel kernels (single_channel.cu and
// single_channel_strided.cu): a thread's filters of one tap, read from the shared weights.
#pragma once

#include <cuda_runtime.h>

namespace fastconv {

// The thread's TM filter weights of one tap (consecutive floats, 16-byte aligned): TM / 4
// float4 reads.
template <int TM>
__device__ __forceinline__ void load_weights(const float* wtap, float (&wv)[TM]) {
  static_assert(TM % 4 == 0, "TM: runs of 4 filters");
#pragma unroll
  for (int q = 0; q < TM / 4; ++q) {
    const float4 f = *reinterpret_cast<const float4*>(wtap + 4 * q);
    wv[4 * q] = f.x; wv[4 * q + 1] = f.y; wv[4 * q + 2] = f.z; wv[4 * q + 3] = f.w;
  }
}

}  // namespace fastconv
