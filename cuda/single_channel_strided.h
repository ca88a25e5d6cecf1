// Host-side facts of the strided single-channel kernel (cuda/single_channel_strided.cu): its
// tile, its slab of filters and the layers it runs. The planner mirrors them
// (jax_fastconv/plan_single_channel.py: strided_filters, strided_supported);
// tests/cuda/strided_support_check.cc builds this header on the host so that
// tests/test_plan_single_channel.py can ask both the same questions.
#pragma once

#include <cstdint>

#include "conv_params.h"

namespace fastconv {
namespace strided {

constexpr int kTM = 4;                        // the smallest filters per thread and slab
constexpr int kTP = 4;                        // output columns per thread
constexpr int kMaxMB = 128;                   // filters per slab
constexpr int kSharedFloats = 48 * 1024 / 4;  // the slab's weights stay under 48 KB

// Weights per filter: C x KH x KW (the FMAs of one output).
inline long long taps(const ConvParams& p) { return p.C * p.KH * p.KW; }

// Filters per slab: the smallest power of two >= M (at least kTM, at most 128), halved until
// the slab's C x KH x KW x MB weights fit 48 KB; 0 when even kTM filters do not.
inline int slab_filters(const ConvParams& p) {
  if (p.C < 1 || p.KH < 1 || p.KW < 1 || p.C > kSharedFloats || p.KH > kSharedFloats ||
      p.KW > kSharedFloats || taps(p) > kSharedFloats / kTM)
    return 0;  // (the first tests keep the product from overflowing)
  int mb = kTM;
  while (mb < kMaxMB && mb < p.M) mb *= 2;
  while (mb > kTM && taps(p) * mb > kSharedFloats) mb /= 2;
  return mb;
}

// Work items of one slab: N x OH x ceil(OW / kTP) x (MB / tm), tm filters per thread.
inline long long slab_items(const ConvParams& p, int mb, int tm = kTM) {
  return p.N * p.OH * ((p.OW + kTP - 1) / kTP) * (mb / tm);
}

// The filters-first thread order: the output's filters are its fastest axis (y_sc == 1, e.g.
// NHWC) in runs of 4 that 16-byte stores can write. The column order serves everything else.
inline bool filters_first(const ConvParams& p, bool y_aligned16) {
  return y_aligned16 && p.y_sc == 1 && p.M % 4 == 0 && p.y_sn % 4 == 0 && p.y_sh % 4 == 0 &&
         p.y_sw % 4 == 0;
}

// Filters per thread of a launch with slabs of mb filters on a device of sms SMs: 8 in the
// column order (half the input loads per FMA: b32 NCHW 7x7/2, 5x5/2, 4x4/4 0.83-0.90x the time
// on an H100) where an output takes >= 9 FMAs (C x KH x KW) and the launch keeps a thread per
// FP32 lane of every SM (C = 1 kernels of >= 25 taps have the work per thread to do without;
// with C > 1 that cost b1 NCHW RGB 3x3/2, 4x4/4 and C = 2 5x5/2 1.11-1.13x the time); else 4
// (the filters-first order, where 8 took 1.08-2.2x the time; slabs of 4; 2x2/2 1.01-1.07x;
// b1 224^2 3x3/2 1.07x and 256^2 4x4/4 1.13x, launches of under a thread per lane). In the
// filters-first order with C > 1, 8 where a window row costs more than 2 loads per tap
// ((3 SW + KW) / KW: 3x3/2, 5x5/2, 4x4/4, 2x2/2) and the launch keeps a thread per lane: b32
// NHWC RGB 3x3/2 0.92x, 4x4/4 0.92x, C = 2 5x5/2 0.95x the time; not 7x7/2 (1.18x: 128
// registers) nor 3x3/1 (1.00-1.04x).
inline int filters_per_thread(const ConvParams& p, int mb, bool y_aligned16, int sms) {
  if (mb < 2 * kTM) return kTM;
  const long long t = taps(p);
  const long long threads = slab_items(p, mb, 2 * kTM) * ((p.M + mb - 1) / mb);
  const bool lanes = threads >= 256LL * sms;
  if (filters_first(p, y_aligned16))
    return p.C > 1 && 3 * p.stride_w > p.KW && lanes ? 2 * kTM : kTM;
  return t >= 9 && ((t >= 25 && p.C == 1) || lanes) ? 2 * kTM : kTM;
}

// Whether the kernel runs p: C == 1 with a stride > 1, or C > 1 with any stride (the planner
// sends it 1 < C < 8, where the multi-channel kernel's segments would be mostly padding), sizes
// its 32-bit index math holds, a slab that fits, and item indices that stay below 2^31 (it +
// blockDim included; counted for kTM filters per thread, the most items a launch has).
inline bool supported(const ConvParams& p) {
  constexpr long long kBig = 1LL << 30;
  if (p.C < 1 || p.stride_h < 1 || p.stride_w < 1 ||
      (p.C == 1 && p.stride_h == 1 && p.stride_w == 1))
    return false;
  if (p.KH < 1 || p.KW < 1 || p.N < 0 || p.M < 0 || p.OH < 0 || p.OW < 0) return false;
  if (p.H >= kBig || p.W >= kBig || p.OH >= kBig || p.OW >= kBig || p.M >= kBig ||
      p.N >= kBig || p.stride_h >= kBig || p.stride_w >= kBig || p.KH >= kBig ||
      p.KW >= kBig || p.pad_top <= -kBig || p.pad_top >= kBig || p.pad_left <= -kBig ||
      p.pad_left >= kBig)
    return false;
  // the int index math of the kernel: input coordinates of the last output
  if ((p.OH - 1) * p.stride_h + p.KH >= kBig || (p.OW - 1) * p.stride_w + p.KW >= kBig)
    return false;
  const int mb = slab_filters(p);
  return mb > 0 && slab_items(p, mb) < (1LL << 31) - 1024 && (p.M + mb - 1) / mb <= 65535;
}

}  // namespace strided
}  // namespace fastconv
