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
  p->N = dims[0]; p->C = dims[1]; p->H = dims[2]; p->W = dims[3];
  p->M = dims[4]; p->KH = dims[5]; p->KW = dims[6]; p->OH = dims[7]; p->OW = dims[8];
  p->stride_h = conv[0]; p->stride_w = conv[1]; p->pad_top = conv[2]; p->pad_left = conv[3];
  p->x_sn = xs[0]; p->x_sc = xs[1]; p->x_sh = xs[2]; p->x_sw = xs[3];
  p->w_so = ws[0]; p->w_si = ws[1]; p->w_sh = ws[2]; p->w_sw = ws[3];
  p->y_sn = ys[0]; p->y_sc = ys[1]; p->y_sh = ys[2]; p->y_sw = ys[3];
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
