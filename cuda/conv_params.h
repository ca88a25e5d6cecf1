// One 2-D convolution as the FFI handlers receive it: sizes, element strides of every
// logical axis (so any layout permutation XLA hands over is addressed directly), padding,
// and the planner's decisions. Shared by the CPU handler, the CUDA handler and the kernels.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define FASTCONV_HD __host__ __device__
#else
#define FASTCONV_HD
#endif

namespace fastconv {

// Plan methods: the values of the first entry of the "plan" attribute
// (jax_fastconv/planner.py, Plan.kernel_attrs, keeps the same numbering).
enum Method : int64_t {
  kDirect = 0,         // straightforward direct convolution (any shape)
  kSingleChannel = 1,  // paper section 3.1 (C == 1)
  kMultiChannel = 2,   // paper section 3.2, stride-fixed block (C > 1)
};

constexpr int kPlanLen = 8;

struct ConvParams {
  int64_t N, C, H, W;        // input (logical NCHW)
  int64_t M, KH, KW;         // filters (logical OIHW: M x C x KH x KW)
  int64_t OH, OW;            // output (logical N x M x OH x OW)
  int64_t stride_h, stride_w;
  int64_t pad_top, pad_left;  // may be negative; bottom/right follow from OH/OW
  // element strides of the logical axes
  int64_t x_sn, x_sc, x_sh, x_sw;  // lhs   (n, c, h, w)
  int64_t w_so, w_si, w_sh, w_sw;  // rhs   (m, c, kh, kw)
  int64_t y_sn, y_sc, y_sh, y_sw;  // out   (n, m, oh, ow)
  // plan[0] = Method; plan[1..7] method-specific (see planner.Plan.kernel_attrs):
  //   kSingleChannel: [1, division (1: filters across blocks, rows in P pieces;
  //                    2: rows across blocks, filters in Q pieces), P, Q,
  //                    filters_per_block, rows_per_block, prefetch (1) / volume (0), threads]
  //   kMultiChannel:  [2, S (elements of ch per segment), M', W'x, W'y, c_split, threads,
  //                    flags (2: filters staged to HWIO, 4: 3xTF32 tensor cores,
  //                    8: c_split ranks without a cluster, partials summed in a second pass,
  //                    16: the streamed 1x1 kernel, 32: tensor cores on OIHW filters in the
  //                    filters' own reduction order, no staging)]
  int64_t plan[kPlanLen];

  FASTCONV_HD int64_t method() const { return plan[0]; }
  FASTCONV_HD int64_t out_elems() const { return N * M * OH * OW; }
};

// Sizes, convolution and strides from the FFI attributes' order (ffi_conv_attrs.h: dims = N,
// C, H, W, M, KH, KW, OH, OW; conv = stride_h, stride_w, pad_top, pad_left; strides n, c, h, w /
// m, c, kh, kw / n, m, oh, ow), from any indexable sequences of the right lengths (the FFI
// handlers' spans, the plan timer's vectors); the plan is left to the caller.
template <typename Seq>
void assign_conv_params(const Seq& dims, const Seq& conv, const Seq& xs, const Seq& ws,
                        const Seq& ys, ConvParams* p) {
  p->N = dims[0]; p->C = dims[1]; p->H = dims[2]; p->W = dims[3];
  p->M = dims[4]; p->KH = dims[5]; p->KW = dims[6]; p->OH = dims[7]; p->OW = dims[8];
  p->stride_h = conv[0]; p->stride_w = conv[1]; p->pad_top = conv[2]; p->pad_left = conv[3];
  p->x_sn = xs[0]; p->x_sc = xs[1]; p->x_sh = xs[2]; p->x_sw = xs[3];
  p->w_so = ws[0]; p->w_si = ws[1]; p->w_sh = ws[2]; p->w_sw = ws[3];
  p->y_sn = ys[0]; p->y_sc = ys[1]; p->y_sh = ys[2]; p->y_sw = ys[3];
}

}  // namespace fastconv
