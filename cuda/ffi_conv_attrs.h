// The FFI attributes of one convolution call (names shared with jax_fastconv/primitive.py)
// and their decoding into ConvParams. Used by the CPU and the CUDA handler alike.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "conv_params.h"
#include "xla/ffi/api/ffi.h"

namespace fastconv {

namespace ffi = xla::ffi;
using I64Span = ffi::Span<const int64_t>;

// Adds the attribute decoders, in the order the handlers take them.
template <typename Binding>
auto BindConvAttrs(Binding binding) {
  return std::move(binding).template Attr<I64Span>("dims")   // N, C, H, W, M, KH, KW, OH, OW
      .template Attr<I64Span>("conv")            // stride_h, stride_w, pad_top, pad_left
      .template Attr<I64Span>("lhs_strides")     // n, c, h, w
      .template Attr<I64Span>("rhs_strides")     // m, c, kh, kw
      .template Attr<I64Span>("out_strides")     // n, m, oh, ow
      .template Attr<I64Span>("plan");           // planner.Plan.kernel_attrs
}

// Fills p from the attributes and checks them against the buffers' element counts.
inline ffi::Error DecodeConvParams(const ffi::Buffer<ffi::F32>& x, const ffi::Buffer<ffi::F32>& w,
                                   ffi::ResultBuffer<ffi::F32> y, I64Span dims,
                                   I64Span conv, I64Span xs, I64Span ws, I64Span ys, I64Span plan,
                                   ConvParams* p) {
  const size_t x_elems = x.element_count(), w_elems = w.element_count(),
               y_elems = y->element_count();
  if (dims.size() != 9 || conv.size() != 4 || xs.size() != 4 || ws.size() != 4 ||
      ys.size() != 4 || plan.size() != kPlanLen)
    return ffi::Error::InvalidArgument("fastconv: malformed convolution attributes");
  assign_conv_params(dims, conv, xs, ws, ys, p);
  for (int i = 0; i < kPlanLen; ++i) p->plan[i] = plan[i];
  if (p->stride_h <= 0 || p->stride_w <= 0)
    return ffi::Error::InvalidArgument("fastconv: window strides must be positive");
  const auto count = [](int64_t a, int64_t b, int64_t c, int64_t d) {
    return static_cast<size_t>(a * b * c * d);
  };
  if (count(p->N, p->C, p->H, p->W) != x_elems || count(p->M, p->C, p->KH, p->KW) != w_elems ||
      count(p->N, p->M, p->OH, p->OW) != y_elems)
    return ffi::Error::InvalidArgument(
        "fastconv: buffer sizes do not match the convolution attributes");
  return ffi::Error::Success();
}

}  // namespace fastconv
