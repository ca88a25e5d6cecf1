// Winograd's minimal filtering F(4, 5) along a row (Lavin & Gray 2016; Toom-Cook points 0, +-1,
// +-2, +-1/2 and infinity): 4 outputs of a 5-tap row filter from 8 inputs with 8 products,
//   o = A^T [(G w) . (B^T v)],
// instead of 20. The single-channel kernel (single_channel.cu, plan[6] & 2) transforms each
// 8-input chunk of its staged rows once (B^T v, shared by every filter of the tile) and each
// filter row once (G w), sums the products of the KH filter rows in the transformed domain and
// transforms back once per output chunk (A^T). Row 0 of G and B^T is negated from the textbook
// form (the products are unchanged). float32 relative error of the whole 5x5 layer ~4e-7
// (Frobenius, random normal inputs), against ~1e-7 for direct sums.
#pragma once

#include <cuda_runtime.h>

namespace fastconv {

// d = B^T v: the 8 transformed inputs of the chunk v[0..7].
__device__ __forceinline__ void f45_input(const float (&v)[8], float (&d)[8]) {
  d[0] = (v[0] - v[6]) + 5.25f * (v[4] - v[2]);
  float s = v[2] + v[6] - 4.25f * v[4], t = v[1] + v[5] - 4.25f * v[3];
  d[1] = s + t; d[2] = s - t;
  s = 0.25f * v[2] - 1.25f * v[4] + v[6]; t = 0.5f * v[1] - 2.5f * v[3] + 2.f * v[5];
  d[3] = s + t; d[4] = s - t;
  s = 4.f * v[2] - 5.f * v[4] + v[6]; t = 2.f * v[1] - 2.5f * v[3] + 0.5f * v[5];
  d[5] = s + t; d[6] = s - t;
  d[7] = (v[7] - v[1]) + 5.25f * (v[3] - v[5]);
}

// g = G w: the 8 transformed taps of the filter row w[0..4].
__device__ __forceinline__ void f45_filter(const float (&w)[5], float (&g)[8]) {
  g[0] = w[0];
  float s = w[0] + w[2] + w[4], t = w[1] + w[3];
  g[1] = (-2.f / 9.f) * (s + t); g[2] = (-2.f / 9.f) * (s - t);
  s = w[0] + 4.f * w[2] + 16.f * w[4]; t = 2.f * w[1] + 8.f * w[3];
  g[3] = (s + t) * (1.f / 90.f); g[4] = (s - t) * (1.f / 90.f);
  s = 16.f * w[0] + 4.f * w[2] + w[4]; t = 8.f * w[1] + 2.f * w[3];
  g[5] = (s + t) * (2.f / 45.f); g[6] = (s - t) * (2.f / 45.f);
  g[7] = w[4];
}

// o = A^T a: the 4 outputs from the 8 summed products a[0..7].
__device__ __forceinline__ void f45_output(const float (&a)[8], float (&o)[4]) {
  const float s1 = a[1] + a[2], d1 = a[1] - a[2];
  const float s2 = a[3] + a[4], d2 = a[3] - a[4];
  const float s3 = a[5] + a[6], d3 = a[5] - a[6];
  o[0] = a[0] + s1 + s2 + s3;
  o[1] = d1 + 2.f * d2 + 0.5f * d3;
  o[2] = s1 + 4.f * s2 + 0.25f * s3;
  o[3] = d1 + 8.f * d2 + 0.125f * d3 + a[7];
}

}  // namespace fastconv
