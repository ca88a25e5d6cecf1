// The straightforward direct convolution: one thread per output element, any layout,
// stride and padding. Correct everywhere; the paper's kernels replace it where they apply.
#include "kernels.h"

namespace fastconv {
namespace {

__global__ void DirectConvKernel(ConvParams p, const float* __restrict__ x,
                                 const float* __restrict__ w, float* __restrict__ y) {
  const int64_t total = p.out_elems();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    // Linear index in logical (n, m, oh, ow) order; ow fastest keeps x reads coalesced for NCHW.
    int64_t r = i;
    const int64_t ow = r % p.OW; r /= p.OW;
    const int64_t oh = r % p.OH; r /= p.OH;
    const int64_t m = r % p.M;
    const int64_t n = r / p.M;
    const int64_t ih0 = oh * p.stride_h - p.pad_top, iw0 = ow * p.stride_w - p.pad_left;
    const int64_t kh0 = max(int64_t(0), -ih0), kh1 = min(p.KH, p.H - ih0);
    const int64_t kw0 = max(int64_t(0), -iw0), kw1 = min(p.KW, p.W - iw0);
    float acc = 0.f;
    for (int64_t c = 0; c < p.C; ++c) {
      const float* xc = x + n * p.x_sn + c * p.x_sc;
      const float* wc = w + m * p.w_so + c * p.w_si;
      for (int64_t kh = kh0; kh < kh1; ++kh)
        for (int64_t kw = kw0; kw < kw1; ++kw)
          acc = fmaf(xc[(ih0 + kh) * p.x_sh + (iw0 + kw) * p.x_sw], wc[kh * p.w_sh + kw * p.w_sw],
                     acc);
    }
    y[n * p.y_sn + m * p.y_sc + oh * p.y_sh + ow * p.y_sw] = acc;
  }
}

}  // namespace

cudaError_t launch_direct(const ConvParams& p, const float* x, const float* w, float* y,
                          cudaStream_t stream) {
  const int64_t total = p.out_elems();
  if (total == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((total + kThreads - 1) / kThreads, 65535 * 8);
  DirectConvKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p, x, w, y);
  return cudaGetLastError();
}

}  // namespace fastconv
