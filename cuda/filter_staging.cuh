// Filter staging for the multi-channel kernel: copies dense OIHW filters into HWIO in a
// workspace the FFI call carries as its second result, so the kernel reads them with its
// 16-byte filter loader.  Why: per stage the kernel needs S channels of M' filters at ONE tap;
// in OIHW those are KH*KW floats apart, so the loader gathers 4-byte words, each from its own
// 32-byte sector, and every pixel tile of the grid repeats the gather.  Where the filters are
// large and many tiles (or taps) re-read them that costs more than the copy (H200, batch 1,
// NCHW, kernel us native / staged: 28x28x128 K5 53.6 / 34.9, 14x14x256 K5 51.8 / 38.8,
// 28x28x256 K3 58.5 / 48.8; small filters or a single pixel tile lose the copy's ~2.5 us).
// K = 1 too, on enough pixel tiles: the rows are contiguous there but the loads 4-byte and
// the B tile then takes 128 registers (4 blocks per SM; batch 32 NCHW 224x224x64 457 / 413).
// The 3xTF32 tensor-core path reads HWIO filters only, so the planner also stages wherever that
// lets it run (plan[7], jax_fastconv/planner.py _mc_filter_staging and MC_STAGE_FILTERS); the launcher
// checks the layout and the workspace size again and reads the filters in place when either
// fails, so the flag can never make a result wrong.  (Staging an NCHW input as NHWC the same
// way was measured too and did not pay once the NCHW output path was fixed: notes.)
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "conv_params.h"
#include "launch_util.h"

namespace fastconv {

// plan[7] bit of a multi-channel plan.
constexpr int64_t kStageFiltersHWIO = 2;  // dense OIHW filters -> HWIO copy

inline int64_t round_up4(int64_t n) { return (n + 3) & ~int64_t(3); }

// Dense OIHW filter strides (each filter's C*KH*KW elements contiguous, tap fastest).
inline bool dense_oihw_strides(const ConvParams& p) {
  return p.w_sw == 1 && p.w_sh == p.KW && p.w_si == p.KH * p.KW && p.w_so == p.C * p.KH * p.KW;
}
// ... that the HWIO copy can take (its 16-byte rows run along M).
inline bool dense_oihw_filters(const ConvParams& p) { return dense_oihw_strides(p) && p.M % 4 == 0; }

// Workspace elements the staged HWIO copy needs (it starts at the workspace's base), 0 when
// the filters are read in place.  The same size as planner.workspace_elems.
inline int64_t staged_filter_elems(const ConvParams& p) {
  return (p.plan[7] & kStageFiltersHWIO) && dense_oihw_filters(p)
             ? round_up4(p.M * p.C * p.KH * p.KW) : 0;
}

namespace staging {

// Element (i, j) of the dense rows x cols matrix `in` goes to
//   out[(j % A) * sA + (j / A) * sB + i]
// OIHW -> HWIO: rows = M, cols = C*KH*KW, A = KH*KW, sA = C*M, sB = M.
// 32 x 128 tiles through shared memory: reads run along j, writes along i.  VEC (rows and cols
// multiples of 4, both buffers 16-byte aligned, sA and sB multiples of 4): every global access
// is 16 bytes, 4 loads in flight per thread before the first store (the 4-byte 32 x 32 version
// moved 26 MB of filters at 1.75 TB/s on an H200: 30 us of a 165 us layer).
constexpr int kTileI = 32, kTileJ = 128, kPitch = kTileJ + 1, kThreads = 256;

template <bool VEC>
static __global__ void __launch_bounds__(kThreads) transpose_remap(const float* __restrict__ in,
                                                                   float* __restrict__ out,
                                                                   int rows, int cols, int A,
                                                                   long long sA, long long sB) {
  __shared__ float t[kTileI * kPitch];
  const int j0 = blockIdx.x * kTileJ, i0 = blockIdx.y * kTileI, tid = threadIdx.x;
  constexpr int kVecPerThread = kTileI * kTileJ / 4 / kThreads;  // 4
  if (VEC) {
    float4 v[kVecPerThread];
#pragma unroll
    for (int r = 0; r < kVecPerThread; ++r) {  // row e / 32, columns 4 (e % 32) .. + 3
      const int e = tid + r * kThreads, i = i0 + e / 32, j = j0 + (e % 32) * 4;
      v[r] = (i < rows && j < cols)
                 ? __ldg(reinterpret_cast<const float4*>(in + (long long)i * cols + j))
                 : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int r = 0; r < kVecPerThread; ++r) {
      const int e = tid + r * kThreads;
      float* d = t + (e / 32) * kPitch + (e % 32) * 4;
      d[0] = v[r].x; d[1] = v[r].y; d[2] = v[r].z; d[3] = v[r].w;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kVecPerThread; ++r) {  // column e / 8, rows 4 (e % 8) .. + 3
      const int e = tid + r * kThreads, jj = e / 8, ii = (e % 8) * 4;
      const int i = i0 + ii, j = j0 + jj;
      if (i < rows && j < cols) {
        const float* s = t + ii * kPitch + jj;  // banks 4 (e % 8) + jj: distinct in a warp
        *reinterpret_cast<float4*>(out + (long long)(j % A) * sA + (long long)(j / A) * sB + i) =
            make_float4(s[0], s[kPitch], s[2 * kPitch], s[3 * kPitch]);
      }
    }
  } else {
#pragma unroll
    for (int r = 0; r < 4 * kVecPerThread; ++r) {
      const int e = tid + r * kThreads, i = i0 + e / kTileJ, j = j0 + e % kTileJ;
      if (i < rows && j < cols) t[(e / kTileJ) * kPitch + e % kTileJ] = in[(long long)i * cols + j];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 4 * kVecPerThread; ++r) {
      const int e = tid + r * kThreads, jj = e / kTileI, ii = e % kTileI;
      const int i = i0 + ii, j = j0 + jj;
      if (i < rows && j < cols)
        out[(long long)(j % A) * sA + (long long)(j / A) * sB + i] = t[ii * kPitch + jj];
    }
  }
}

inline cudaError_t launch_transpose_remap(const float* in, float* out, long long rows,
                                          long long cols, long long A, long long sA,
                                          long long sB, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const long long gx = (cols + kTileJ - 1) / kTileJ, gy = (rows + kTileI - 1) / kTileI;
  if (gy > 65535 || gx > 0x7fffffffLL || rows > 0x7fffffffLL || cols > 0x7fffffffLL || A <= 0)
    return cudaErrorInvalidValue;
  const dim3 grid((unsigned)gx, (unsigned)gy);
  const bool vec = rows % 4 == 0 && cols % 4 == 0 && sA % 4 == 0 && sB % 4 == 0 &&
                   aligned16(in) && aligned16(out);
  if (vec)
    transpose_remap<true><<<grid, kThreads, 0, stream>>>(in, out, (int)rows, (int)cols, (int)A,
                                                         sA, sB);
  else
    transpose_remap<false><<<grid, kThreads, 0, stream>>>(in, out, (int)rows, (int)cols, (int)A,
                                                          sA, sB);
  return cudaGetLastError();
}

}  // namespace staging

// The filter strides of the staged copy: dense HWIO (filter-fast).
inline void set_hwio_filter_strides(ConvParams* q) {
  q->w_so = 1; q->w_si = q->M; q->w_sw = q->C * q->M; q->w_sh = q->KW * q->C * q->M;
}

// Copies the dense OIHW filters *w to HWIO at ws and points q's filter strides and *w there.
inline cudaError_t stage_filters(ConvParams* q, const float** w, float* ws, cudaStream_t stream) {
  const int64_t KK = q->KH * q->KW;
  cudaError_t err =
      staging::launch_transpose_remap(*w, ws, q->M, q->C * KK, KK, q->C * q->M, q->M, stream);
  if (err != cudaSuccess) return err;
  set_hwio_filter_strides(q);
  *w = ws;
  return cudaSuccess;
}

}  // namespace fastconv
