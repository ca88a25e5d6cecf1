// CPU FFI handler: the direct convolution in C++ (double accumulation), any layout/stride.
#include <algorithm>
#include <cstdint>

#include "ffi_conv_attrs.h"

namespace fastconv {
namespace {

// First and one-past-last filter tap k with 0 <= o*stride + k - pad < extent.
inline void TapRange(int64_t o, int64_t stride, int64_t pad, int64_t extent, int64_t k_size,
                     int64_t* k0, int64_t* k1) {
  const int64_t base = o * stride - pad;
  *k0 = std::max<int64_t>(0, -base);
  *k1 = std::min<int64_t>(k_size, extent - base);
}

void DirectConvCpu(const ConvParams& p, const float* x, const float* w, float* y) {
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t oh = 0; oh < p.OH; ++oh) {
        int64_t kh0, kh1;
        TapRange(oh, p.stride_h, p.pad_top, p.H, p.KH, &kh0, &kh1);
        for (int64_t ow = 0; ow < p.OW; ++ow) {
          int64_t kw0, kw1;
          TapRange(ow, p.stride_w, p.pad_left, p.W, p.KW, &kw0, &kw1);
          const int64_t ih0 = oh * p.stride_h - p.pad_top, iw0 = ow * p.stride_w - p.pad_left;
          double acc = 0.0;
          for (int64_t c = 0; c < p.C; ++c) {
            const float* xc = x + n * p.x_sn + c * p.x_sc;
            const float* wc = w + m * p.w_so + c * p.w_si;
            for (int64_t kh = kh0; kh < kh1; ++kh)
              for (int64_t kw = kw0; kw < kw1; ++kw)
                acc += static_cast<double>(xc[(ih0 + kh) * p.x_sh + (iw0 + kw) * p.x_sw]) *
                       static_cast<double>(wc[kh * p.w_sh + kw * p.w_sw]);
          }
          y[n * p.y_sn + m * p.y_sc + oh * p.y_sh + ow * p.y_sw] = static_cast<float>(acc);
        }
      }
}

ffi::Error ConvCpuImpl(ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> w,
                       ffi::ResultBuffer<ffi::F32> y, I64Span dims, I64Span conv, I64Span xs,
                       I64Span ws, I64Span ys, I64Span plan) {
  ConvParams p;
  ffi::Error err = DecodeConvParams(x, w, y, dims, conv, xs, ws, ys, plan, &p);
  if (err.failure()) return err;
  DirectConvCpu(p, x.typed_data(), w.typed_data(), y->typed_data());
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(ConvCpu, ConvCpuImpl,
                              BindConvAttrs(ffi::Ffi::Bind()
                                                .Arg<ffi::Buffer<ffi::F32>>()
                                                .Arg<ffi::Buffer<ffi::F32>>()
                                                .Ret<ffi::Buffer<ffi::F32>>()));

}  // namespace fastconv
