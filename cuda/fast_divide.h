// Division by a launch-time constant without the division instruction sequence: the kernels
// decode flat work indices into (tile, row, column, filter group) once per item, and a
// runtime 32-bit division costs ~20 instructions (64-bit: ~100). The divisor's "magic"
// multiplier is computed on the host (round-up method, Granlund & Montgomery 1994):
//   shift = ceil(log2 d), mul = floor(2^32 (2^shift - d) / d) + 1,
//   n / d = (umulhi(n, mul) + n) >> shift   for 0 <= n < 2^31 (so the sum fits 32 bits).
#pragma once

#include <cstdint>

#include "conv_params.h"  // FASTCONV_HD

namespace fastconv {

struct FastDiv {
  uint32_t d = 1, mul = 1, shift = 0;

  FastDiv() = default;
  explicit FastDiv(uint32_t divisor) : d(divisor < 1 ? 1 : divisor) {
    while ((uint64_t(1) << shift) < d) ++shift;
    mul = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d)) / d + 1);
  }

#if defined(__CUDACC__)
  __device__ __forceinline__ uint32_t div(uint32_t n) const {
    return (__umulhi(n, mul) + n) >> shift;
  }
  // n / d, and n % d in *rem.
  __device__ __forceinline__ uint32_t divmod(uint32_t n, int* rem) const {
    const uint32_t q = div(n);
    *rem = int(n - q * d);
    return q;
  }
#else
  uint32_t div(uint32_t n) const {  // the same formula on the host (for checking it)
    return uint32_t(((uint64_t(n) * mul >> 32) + n) >> shift);
  }
#endif
};

}  // namespace fastconv
