// Single-channel 1x1 convolution (C == 1, KH == KW == 1, stride 1): plan division 3
// ("pointwise", jax_fastconv/plan_single_channel.py S6). Every output is one product,
// y[n, m, oh, ow] = w[m] x[n, oh - pad_top, ow - pad_left] (0 outside the map), so nothing is
// reused across taps and the staging of section 3.1 (input band and filters in shared memory,
// a barrier before the first FMA) only delays the stores: on a batch-1 28x28 M512 layer the
// staged kernel took 2.7 us where a kernel that only writes the output takes 1.3 (H200,
// benchmarks/notes/single_channel.md, round 12). Here each thread reads its inputs and
// weights straight from global memory (L1/L2 hits after the first touch) and streams 16-byte
// stores; the launch is a store stream like that store-only kernel.
//
// Four store orders, picked on the host from the output strides and alignment:
//   kAlongM4 (kAlongM's outputs, and the input plane is the output plane: no padding, rows
//            back to back, OH x OW % 4 == 0): an item is (4 consecutive pixels, 4 filters),
//            filters fastest; one float4 of weights, one float4 of inputs, four 16-byte
//            stores (a warp's cover whole lines of a pixel's filters): a quarter of kAlongM's
//            loads and item decodes per output. kAlongM took 1.12-1.27x its time on the b1
//            28^2-224^2 NHWC paper layers (H200, benchmarks/notes/single_channel.md round 19).
//   kAlongM  (y_sc == 1, M % 4 == 0, e.g. NHWC): an item is (pixel, 4 filters), filters
//            fastest; one float4 of weights, one input, one 16-byte store.
//   kAlongOW (rows back to back, y_sw == 1 and y_sh == OW, OH x OW % 4 == 0, e.g. NCHW): an
//            item is (image, 4 filters, 4 pixels), pixels fastest; four inputs (one float4
//            where the input plane is the output plane: no padding, rows back to back), four
//            16-byte stores, one per filter plane.
//   kScalar  (anything else): an item is one output element, written with a 4-byte store.
// The launch parameters are one compact struct (PWArgs): the kernel touches a few constant
// lines instead of ConvParams' 33 64-bit fields.
#include <algorithm>
#include <cstdint>

#include "fast_divide.h"
#include "kernels.h"
#include "launch_util.h"

namespace fastconv {
namespace {

enum PWOrder : int { kScalar = 0, kAlongM = 1, kAlongOW = 2, kAlongM4 = 3 };

constexpr int kPWThreads = 256;
constexpr int kPWUnroll = 4;  // items per thread per loop turn: their loads are issued together

struct PWArgs {
  long long items;                  // work items of the launch
  long long per_block;              // items per block: a multiple of the block, <= kPWUnroll of it
  long long x_sn, x_sh, x_sw, w_so;
  long long y_sn, y_sc, y_sh, y_sw;
  int H, W, OW, pad_top, pad_left;
  int M;
  int small;                        // items < 2^31: decode by FastDiv
  int x_plane;                      // kAlongOW: the input plane is the output plane (float4 loads)
  long long y_spix;                 // kAlongM4: the output stride of one flat pixel (y_sw)
  int plane_small;                  // kAlongOW: OH x OW < 2^31: pixel rows by fd_ow
  FastDiv fd_a, fd_b, fd_c;         // item decode (see decode)
  FastDiv fd_ow;                    // kAlongOW: flat pixel -> (oh, ow)
  long long da, db, dc;             // the same divisors for the 64-bit decode
};

// (n, m0, oh, ow) of item `it`: kAlongM: it = ((n OH + oh) OW + ow) M/4 + m/4;
// kAlongM4: it = (n OH OW / 4 + p/4) M/4 + m/4 (the flat pixel p returned in oh);
// kAlongOW: it = (n ceil(M/4) + m/4) OH OW / 4 + p/4, p = oh OW + ow; kScalar:
// it = ((n M + m) OH + oh) OW + ow. fd_a/fd_b/fd_c divide by the fastest axes in turn.
struct PWItem {
  long long n;
  int m, oh, ow;
};

// The two fastest digits f0, f1 of item `it` = (n db + f1) da + f0, and n (fd_a / fd_b; 64-bit
// divisions where the launch's items do not fit 32 bits).
__device__ __forceinline__ long long decode2(const PWArgs& a, long long it, int* f0, int* f1) {
  if (a.small) {
    const uint32_t t = a.fd_a.divmod(uint32_t(it), f0);
    return a.fd_b.divmod(t, f1);
  }
  *f0 = int(it % a.da);
  const long long t = it / a.da;
  *f1 = int(t % a.db);
  return t / a.db;
}

template <int ORDER>
__device__ __forceinline__ PWItem decode(const PWArgs& a, long long it) {
  PWItem r;
  if (ORDER == kAlongM4 || ORDER == kAlongOW) {  // kAlongM4: fd_a = M / 4, fd_b = OH OW / 4;
    int f0, f1;                                  // kAlongOW: fd_a = OH OW / 4, fd_b = ceil(M / 4)
    r.n = decode2(a, it, &f0, &f1);
    r.m = 4 * (ORDER == kAlongM4 ? f0 : f1);
    r.oh = 4 * (ORDER == kAlongM4 ? f1 : f0);  // the flat pixel index p of the image
    r.ow = 0;
    return r;
  }
  // kAlongM: fd_a = M / 4, fd_b = OW, fd_c = OH; kScalar: fd_a = OW, fd_b = OH, fd_c = M
  int f0, f1, f2;
  long long rest;
  if (a.small) {
    uint32_t t = a.fd_a.divmod(uint32_t(it), &f0);
    t = a.fd_b.divmod(t, &f1);
    rest = a.fd_c.divmod(t, &f2);
  } else {
    f0 = int(it % a.da);
    long long t = it / a.da;
    f1 = int(t % a.db);
    t /= a.db;
    f2 = int(t % a.dc);
    rest = t / a.dc;
  }
  if (ORDER == kAlongM) {
    r.m = 4 * f0; r.ow = f1; r.oh = f2; r.n = rest;
  } else {
    r.ow = f0; r.oh = f1; r.m = f2; r.n = rest;
  }
  return r;
}

// The input under output pixel (oh, ow) of image n; 0 in the padding.
__device__ __forceinline__ float input_at(const PWArgs& a, const float* __restrict__ x, long long n,
                                          int oh, int ow) {
  const int ih = oh - a.pad_top, iw = ow - a.pad_left;
  if (ih < 0 || ih >= a.H || iw < 0 || iw >= a.W) return 0.f;
  return __ldg(x + n * a.x_sn + ih * a.x_sh + iw * a.x_sw);
}

__device__ __forceinline__ void st4cs(float* ptr, float4 v) {
  __stcs(reinterpret_cast<float4*>(ptr), v);  // streaming: written once (see st4 in single_channel.cu)
}

template <int ORDER>
__global__ void __launch_bounds__(kPWThreads)
    single_channel_pointwise_kernel(const PWArgs a, const float* __restrict__ x,
                                    const float* __restrict__ w, float* __restrict__ y) {
  // Block b takes the contiguous items [b per_block, (b + 1) per_block) (kPWUnroll turns of
  // blockDim): its stores cover one contiguous stretch of the output, not stripes across it.
  const long long stride = blockDim.x;
  const long long first = (long long)blockIdx.x * a.per_block;
  const long long end = min(a.items, first + a.per_block);
  for (long long base = first + threadIdx.x; base < end; base += kPWUnroll * stride) {
    if (ORDER == kAlongM || ORDER == kAlongM4) {
      constexpr int P = ORDER == kAlongM4 ? 4 : 1;  // pixels per item
      float xv[kPWUnroll][P];
      float4 wv[kPWUnroll];
      float* yp[kPWUnroll];
#pragma unroll
      for (int u = 0; u < kPWUnroll; ++u) {
        const long long it = base + u * stride;
        yp[u] = nullptr;
        if (it >= end) continue;
        const PWItem t = decode<ORDER>(a, it);
        if constexpr (P == 4) {  // t.oh: the flat pixel, a multiple of 4
          const float4 v = __ldg(reinterpret_cast<const float4*>(x + t.n * a.x_sn + t.oh));
          xv[u][0] = v.x; xv[u][1] = v.y; xv[u][2] = v.z; xv[u][3] = v.w;
        } else {
          xv[u][0] = input_at(a, x, t.n, t.oh, t.ow);
        }
        wv[u] = __ldg(reinterpret_cast<const float4*>(w + t.m));  // w_so == 1, aligned
        if constexpr (P == 4)
          yp[u] = y + t.n * a.y_sn + t.oh * a.y_spix + t.m;
        else
          yp[u] = y + t.n * a.y_sn + t.oh * a.y_sh + t.ow * a.y_sw + t.m;
      }
#pragma unroll
      for (int u = 0; u < kPWUnroll; ++u) {
        if (!yp[u]) continue;
#pragma unroll
        for (int j = 0; j < P; ++j)
          st4cs(yp[u] + j * a.y_spix, make_float4(wv[u].x * xv[u][j], wv[u].y * xv[u][j],
                                                  wv[u].z * xv[u][j], wv[u].w * xv[u][j]));
      }
    } else if (ORDER == kAlongOW) {
#pragma unroll
      for (int u = 0; u < kPWUnroll; ++u) {
        const long long it = base + u * stride;
        if (it >= end) break;
        const PWItem t = decode<kAlongOW>(a, it);
        const int p = t.oh;  // flat pixel of the plane, a multiple of 4
        float4 xv;
        if (a.x_plane) {
          xv = __ldg(reinterpret_cast<const float4*>(x + t.n * a.x_sn + p));
        } else {
          float v[4];
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            int ow;
            const int oh = a.plane_small ? int(a.fd_ow.divmod(uint32_t(p + j), &ow))
                                         : (p + j) / a.OW;
            if (!a.plane_small) ow = (p + j) - oh * a.OW;
            v[j] = input_at(a, x, t.n, oh, ow);
          }
          xv = make_float4(v[0], v[1], v[2], v[3]);
        }
        float* yb = y + t.n * a.y_sn + p;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          if (t.m + i >= a.M) break;
          const float wm = __ldg(w + (t.m + i) * a.w_so);
          st4cs(yb + (t.m + i) * a.y_sc, make_float4(wm * xv.x, wm * xv.y, wm * xv.z, wm * xv.w));
        }
      }
    } else {
#pragma unroll
      for (int u = 0; u < kPWUnroll; ++u) {
        const long long it = base + u * stride;
        if (it >= end) break;
        const PWItem t = decode<kScalar>(a, it);
        const float v = __ldg(w + t.m * a.w_so) * input_at(a, x, t.n, t.oh, t.ow);
        __stcs(y + t.n * a.y_sn + t.m * a.y_sc + t.oh * a.y_sh + t.ow * a.y_sw, v);
      }
    }
  }
}

// Whether the input plane of every image is the output plane, rows back to back, with
// 16-byte aligned planes: then 4 consecutive output pixels read one float4 of inputs.
bool input_is_output_plane(const ConvParams& p, const float* x) {
  return p.pad_top == 0 && p.pad_left == 0 && p.H == p.OH && p.W == p.OW && p.x_sw == 1 &&
         p.x_sh == p.W && p.x_sn % 4 == 0 && aligned16(x);
}

// The store order for these buffers (see the header comment).
int pick_order(const ConvParams& p, const float* x, const float* w, const float* y) {
  const bool y16 = aligned16(y);
  if (y16 && p.y_sc == 1 && p.M % 4 == 0 && p.y_sn % 4 == 0 && p.y_sh % 4 == 0 &&
      p.y_sw % 4 == 0 && p.w_so == 1 && aligned16(w))
    return input_is_output_plane(p, x) && p.y_sh == p.OW * p.y_sw && (p.OH * p.OW) % 4 == 0
               ? kAlongM4
               : kAlongM;
  if (y16 && p.y_sw == 1 && p.y_sh == p.OW && (p.OH * p.OW) % 4 == 0 && p.y_sc % 4 == 0 &&
      p.y_sn % 4 == 0)
    return kAlongOW;
  return kScalar;
}

PWArgs make_args(const ConvParams& p, const float* x, int order) {
  PWArgs a{};
  a.x_sn = p.x_sn; a.x_sh = p.x_sh; a.x_sw = p.x_sw; a.w_so = p.w_so;
  a.y_sn = p.y_sn; a.y_sc = p.y_sc; a.y_sh = p.y_sh; a.y_sw = p.y_sw;
  a.H = int(p.H); a.W = int(p.W); a.OW = int(p.OW);
  a.pad_top = int(p.pad_top); a.pad_left = int(p.pad_left);
  a.M = int(p.M);
  long long da = 1, db = 1, dc = 1;
  if (order == kAlongM) {
    da = p.M / 4; db = p.OW; dc = p.OH;
    a.items = p.N * p.OH * p.OW * da;
  } else if (order == kAlongM4) {
    da = p.M / 4; db = p.OH * p.OW / 4;
    a.items = p.N * db * da;
    a.y_spix = p.y_sw;
  } else if (order == kAlongOW) {
    da = p.OH * p.OW / 4; db = (p.M + 3) / 4;
    a.items = p.N * da * db;
    a.plane_small = p.OH * p.OW < (1LL << 31);
    a.fd_ow = FastDiv(uint32_t(p.OW));
    a.x_plane = input_is_output_plane(p, x);
  } else {
    da = p.OW; db = p.OH; dc = p.M;
    a.items = p.N * p.M * p.OH * p.OW;
  }
  a.da = da; a.db = db; a.dc = dc;
  a.small = a.items < (1LL << 31);
  a.fd_a = FastDiv(uint32_t(a.small ? da : 1));
  a.fd_b = FastDiv(uint32_t(a.small ? db : 1));
  a.fd_c = FastDiv(uint32_t(a.small ? dc : 1));
  return a;
}

template <int ORDER>
cudaError_t launch_order(PWArgs a, const DeviceInfo& dev, const float* x, const float* w,
                         float* y, cudaStream_t stream) {
  // kPWUnroll items per thread, fewer where that leaves under two blocks per SM: a store stream
  // wants every SM writing (a batch-1 28x28 M512 NCHW layer has 25 K items: 25 blocks at 4)
  const long long sms = std::max(1, dev.sms);
  long long turns = kPWUnroll;
  while (turns > 1 && (a.items + turns * kPWThreads - 1) / (turns * kPWThreads) < 2 * sms) --turns;
  a.per_block = turns * kPWThreads;
  const long long grid = (a.items + a.per_block - 1) / a.per_block;
  if (grid < 1) return cudaSuccess;
  if (grid > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  return launch_ex(single_channel_pointwise_kernel<ORDER>, dim3(unsigned(grid)),
                   dim3(unsigned(kPWThreads)), 0, stream, a, x, w, y);
}

}  // namespace

// Range checks the FastDiv decode and the int fields rely on.
bool single_channel_pointwise_supported(const ConvParams& p) {
  return p.C == 1 && p.KH == 1 && p.KW == 1 && p.stride_h == 1 && p.stride_w == 1 &&
         p.H < (1 << 30) && p.W < (1 << 30) && p.OH < (1 << 30) && p.OW < (1 << 30) &&
         p.M < (1 << 30) && p.pad_top > -(1 << 30) && p.pad_top < (1 << 30) &&
         p.pad_left > -(1 << 30) && p.pad_left < (1 << 30);
}

cudaError_t launch_single_channel_pointwise(const ConvParams& p, const float* x, const float* w,
                                            float* y, cudaStream_t stream) {
  if (!single_channel_pointwise_supported(p)) return cudaErrorInvalidValue;
  if (p.out_elems() == 0) return cudaSuccess;
  DeviceInfo dev;
  cudaError_t err = current_device_info(&dev);
  if (err != cudaSuccess) return err;
  const int order = pick_order(p, x, w, y);
  const PWArgs a = make_args(p, x, order);
  if (order == kAlongM4) return launch_order<kAlongM4>(a, dev, x, w, y, stream);
  if (order == kAlongM) return launch_order<kAlongM>(a, dev, x, w, y, stream);
  if (order == kAlongOW) return launch_order<kAlongOW>(a, dev, x, w, y, stream);
  return launch_order<kScalar>(a, dev, x, w, y, stream);
}

}  // namespace fastconv
