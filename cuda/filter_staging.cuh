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
// The planner decides (plan[7], jax_fastconv/planner.py _mc_filter_staging); the launcher
// checks the layout and the workspace size again and reads the filters in place when either
// fails, so the flag can never make a result wrong.  (Staging an NCHW input as NHWC the same
// way was measured too and did not pay once the NCHW output path was fixed: notes.)
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "conv_params.h"

namespace fastconv {

// plan[7] bit of a multi-channel plan.
constexpr int64_t kStageFiltersHWIO = 2;  // dense OIHW filters -> HWIO copy

inline int64_t round_up4(int64_t n) { return (n + 3) & ~int64_t(3); }

inline bool dense_oihw_filters(const ConvParams& p) {
  return p.w_sw == 1 && p.w_sh == p.KW && p.w_si == p.KH * p.KW &&
         p.w_so == p.C * p.KH * p.KW && p.M % 4 == 0;
}

// Workspace elements the staged HWIO copy needs (it starts at the workspace's base), 0 when
// the filters are read in place.  The same size as planner.workspace_elems.
inline int64_t staged_filter_elems(const ConvParams& p) {
  return (p.plan[7] & kStageFiltersHWIO) && dense_oihw_filters(p)
             ? round_up4(p.M * p.C * p.KH * p.KW) : 0;
}

namespace staging {

// in: [batch][rows][cols] dense.  Element (b, i, j) goes to
//   out[b * out_bs + (j % A) * sA + (j / A) * sB + i]
// OIHW -> HWIO: batch = 1, rows = M, cols = C*KH*KW, A = KH*KW, sA = C*M, sB = M.
// 32x32 tiles through shared memory: reads coalesced along j, writes along i.
static __global__ void __launch_bounds__(256) transpose_remap(const float* __restrict__ in,
                                                              float* __restrict__ out,
                                                              int batch, int rows, int cols,
                                                              int A, long long sA, long long sB,
                                                              long long out_bs) {
  __shared__ float t[32][33];
  const int j0 = blockIdx.x * 32, i0 = blockIdx.y * 32;
  const int tx = threadIdx.x, ty = threadIdx.y;  // 32 x 8
  for (int b = blockIdx.z; b < batch; b += gridDim.z) {
    const float* src = in + (long long)b * rows * cols;
#pragma unroll
    for (int r = 0; r < 32; r += 8) {
      const int i = i0 + ty + r, j = j0 + tx;
      if (i < rows && j < cols) t[ty + r][tx] = src[(long long)i * cols + j];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 32; r += 8) {
      const int j = j0 + ty + r, i = i0 + tx;
      if (i < rows && j < cols)
        out[b * out_bs + (long long)(j % A) * sA + (long long)(j / A) * sB + i] = t[tx][ty + r];
    }
    __syncthreads();
  }
}

inline cudaError_t launch_transpose_remap(const float* in, float* out, long long batch,
                                          long long rows, long long cols, long long A,
                                          long long sA, long long sB, long long out_bs,
                                          cudaStream_t stream) {
  if (batch <= 0 || rows <= 0 || cols <= 0) return cudaSuccess;
  const long long gx = (cols + 31) / 32, gy = (rows + 31) / 32;
  if (gy > 65535 || gx > 0x7fffffffLL || rows > 0x7fffffffLL || cols > 0x7fffffffLL ||
      batch > 0x7fffffffLL)
    return cudaErrorInvalidValue;
  const dim3 grid((unsigned)gx, (unsigned)gy, (unsigned)(batch < 65535 ? batch : 65535));
  transpose_remap<<<grid, dim3(32, 8), 0, stream>>>(in, out, (int)batch, (int)rows, (int)cols,
                                                     (int)A, sA, sB, out_bs);
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
  cudaError_t err = staging::launch_transpose_remap(*w, ws, 1, q->M, q->C * KK, KK, q->C * q->M,
                                                    q->M, 0, stream);
  if (err != cudaSuccess) return err;
  set_hwio_filter_strides(q);
  *w = ws;
  return cudaSuccess;
}

}  // namespace fastconv
