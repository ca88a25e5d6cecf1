// The Toeplitz view's pieces (sm_90a), shared by the wgmma kernel (single_channel_wgmma.cu) and
// its prototype (benchmarks/notes/sc_wgmma_toeplitz.cu): B's column order, one segment's
// wgmmas, a lane's accumulators by pixel phase, and a flat pixel's place in the tall stack.
#pragma once

#include <cstdint>

#include "fast_divide.h"
#include "wgmma_tf32.cuh"

namespace fastconv {

// B row n = ph * 32 + c (c = 8 j + 2 t + e, the accumulator column of lane t's pair j) holds
// filter 16 (j / 2) + 4 t + 2 (j % 2) + e: lane t then owns filters 4t..4t+3 and 16+4t..16+4t+3.
__device__ __forceinline__ int b_filter(int c) {
  const int j = c >> 3, t = (c >> 1) & 3, e = c & 1;
  return 16 * (j >> 1) + 4 * t + 2 * (j & 1) + e;
}

// One segment's KH x 3 wgmmas into d (asynchronous: commit, then wait before reading d). KH is a
// template parameter: with a runtime trip count ptxas serializes the wgmmas (C7520).
template <int KH>
__device__ __forceinline__ void tz_mma(float (&d)[64], const float* ahi, const float* alo,
                                       const float* bhi, const float* blo, int ao, int Ws) {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
  for (int kh = 0; kh < KH; ++kh) {
    const uint64_t dah = desc(ahi + ao + kh * Ws, 16, 128), dal = desc(alo + ao + kh * Ws, 16, 128);
    const uint64_t dbh = desc(bhi + kh * 1024, 2048, 128), dbl = desc(blo + kh * 1024, 2048, 128);
    wgmma_m64n128k8(d, dal, dbh, kh);
    wgmma_m64n128k8(d, dah, dbl, 1);
    wgmma_m64n128k8(d, dah, dbh, 1);
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Lane (g, t)'s sums of row half h (row 16 w + g + 8 h) and filter half q, in b_filter's column
// order: v[ph][i] = pixel 4 r + ph, filter 16 q + 4 t + i of the block.
__device__ __forceinline__ void tz_gather(const float (&d)[64], int h, int q, float (&v)[4][4]) {
#pragma unroll
  for (int ph = 0; ph < 4; ++ph) {
    const int j0 = 4 * ph + 2 * q;
    v[ph][0] = d[4 * j0 + 2 * h];
    v[ph][1] = d[4 * j0 + 2 * h + 1];
    v[ph][2] = d[4 * (j0 + 1) + 2 * h];
    v[ph][3] = d[4 * (j0 + 1) + 2 * h + 1];
  }
}

// n / d for a divisor d given as an int or as a FastDiv (its host-made multiplier: a few
// instructions instead of a division's ~20; 0 <= n < 2^31).
__device__ __forceinline__ int tz_quot(int n, int d) { return n / d; }
__device__ __forceinline__ int tz_quot(int n, const FastDiv& d) { return int(d.div(uint32_t(n))); }

// Flat pixel P of the tall stack -> image n, output row oy, column ox; false where it is no
// output (a padding row of the stack, a column past OW, past the batch).
template <typename Params>  // any struct with Ws, Hp, N, OH, OW and divisors ws_div, hp_div
__device__ __forceinline__ bool tz_pixel(const Params& a, int P, int& n, int& oy, int& ox) {
  const int R = tz_quot(P, a.ws_div);
  ox = P - R * a.Ws;
  n = tz_quot(R, a.hp_div);
  oy = R - n * a.Hp;
  return n < a.N && oy < a.OH && ox < a.OW;
}

}  // namespace fastconv
