// Probe (single-channel notes, round 34): the C = 1 convolution as the transposed product on
// mma.sync 3xTF32, D[filter][pixel] = A[filter][tap] B[tap][pixel], beside the package's
// planned launch of the same layer, same buffers, same graph timing.
//
// Why this orientation (division 5, single_channel_mma.cu, has A = pixels): the weights are
// the A operand, loaded and split hi / lo once per warp and filter group (KSTEPS x 8 registers),
// and the input band is split once at staging into float4s (hi x_i, hi x_i+1, lo x_i, lo x_i+1)
// with the k slots as tap pairs, so a k-step of one n8 tile (8 pixels) is 1 LDS.128 + 3 MMAs per
// 16 filters: no per-use split (division 5's k-step: 8 LDS + 8 LOP3 + 8 FADD + 2 IADD per 12
// MMAs, issue-bound at ~0.28 MMA / clock / SM, round 17). Lane (g, t) holds A rows g, g + 8 x
// columns 2t, 2t + 1 of each n8 tile; columns are permuted so that NCHW lanes hold 4 consecutive
// pixels per filter (a float4 store), and NHWC with MT = 2 maps a lane's 4 rows to 4 consecutive
// filters (a float4 per pixel). MODE 1 / 2 compile out the stores / the MMAs (timing splits).
//
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -DFASTCONV_HAVE_WGMMA -Icuda \
//        benchmarks/notes/sc_mma_t_probe.cu cuda/single_channel*.cu cuda/direct_conv.cu -o /tmp/tp
//   /tmp/tp            the probe's cases: errors vs a float64 reference, then graph timing
//   TP_CASES=a,b       only the cases whose names contain one of these
//   TP_VARIANTS=02     only these variants (indices into kVariants)
//   -DTP_STAMPS=1      timeline stamps; -DTP_OLDW=0: the first group's weights loaded before the
//                      item loop, not at each warp's first item
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fast_divide.h"
#include "kernels.h"
#include "probe_timing.cuh"  // time_graph, globaltimer (its CK returns 1; CKX here exits)

#define CKX(x)                                                                           \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

using fastconv::FastDiv;
#ifndef TP_STAMPS  // 1: the timeline stamps compiled in (1.5-2.5 us slower: round 34, section L)
#define TP_STAMPS 0
#endif
#ifndef TP_OLDW  // 1: each warp loads its first group's weights at its first item (0.5 us faster than
#define TP_OLDW 1  // after the band, before the item loop: section L)
#endif
#ifndef TP_MINB
#define TP_MINB 2
#endif

namespace {

struct TArgs {
  const float* x;
  const float* w;
  float* y;
  int N, H, W, M, KH, KW, OH, OW, pad_top, pad_left;
  long long x_sn, x_sh, x_sw;
  long long w_so, w_sh, w_sw;
  long long y_sn, y_sc, y_sh, y_sw;  // dense NCHW (y_sw 1, y_sh OW) or dense NHWC (y_sc 1)
  int RB, MBT;       // output rows and filters (multiple of 16) per CTA tile
  int n_rb, n_mb;    // tiles along rows, filter blocks
  int SWp;           // band row stride (float4s)
  int BW, band_rows; // band columns OW + KW - 1, rows RB + KH - 1
  int BQ, vec_in;    // 4-element chunks per band row; 16-byte input loads allowed
  FastDiv fd_ow, fd_bq, fd_nmb, fd_nrb;
  unsigned long long* stamps;  // per CTA: entry, band staged, warp 0's first item done, warp 0 done (null: off)
  int mode;          // 0 whole; 1 no stores (a store that never happens); 2 no MMAs
};


__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// truncating split: hi = x with 13 low bits cleared, lo = x - hi (exact)
__device__ __forceinline__ void split(float x, uint32_t& hi, uint32_t& lo) {
  hi = __float_as_uint(x) & 0xffffe000u;
  lo = __float_as_uint(x - __uint_as_float(hi));
}

// The band element i of a row is a float4 (hi x_i, hi x_i+1, lo x_i, lo x_i+1): one LDS.128
// gives the B fragment's hi pair and lo pair of a tap pair (kh, kw0), (kh, kw0 + 1), so the
// slots of a k-step are tap pairs: k = t <-> first tap of pair 4 ks + t, k = t + 4 <-> its
// second tap (a padded second tap, kw0 + 1 = KW, has weight 0 and reads x_{i+1} = the band's
// zero column). K5: 3 pairs a row, 15 pairs, 4 k-steps (32 slots for 25 taps, as im2col).
// LAYOUT 0: NCHW-like dense planes; 1: NHWC-like dense pixels. MT 16-filter groups per warp.
template <int KH, int KW, int MT, int NT, int LAYOUT, int MODE, bool SPLIT = false>
__global__ void __launch_bounds__(256, TP_MINB) mma_t_kernel(const TArgs a) {
  constexpr int PPR = (KW + 1) / 2, NPAIRS = KH * PPR, KSTEPS = (NPAIRS + 3) / 4;
  extern __shared__ float4 band[];
#if TP_STAMPS
  const unsigned long long t_entry = globaltimer();
#endif
  int rem;
  const int mb = int(a.fd_nmb.divmod(blockIdx.x, &rem));  // blockIdx = (n, rb, mb), mb fastest
  const int blk_m = rem;
  int rb;
  const int n = int(a.fd_nrb.divmod(uint32_t(mb), &rb));
  const int oh0 = rb * a.RB, m0 = blk_m * a.MBT;
  const int RBt = min(a.RB, a.OH - oh0);
  const int npix = RBt * a.OW;

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int G = min(a.MBT, a.M - m0) / (16 * MT);  // whole groups of 16 MT filters (probe: M % 32 == 0)
  const int nchunks = (npix + 8 * NT - 1) / (8 * NT);  // warp items per 16 MT filters
  // a group's weights into registers (A rows g, g + 8 <-> filters 2g, 2g + 1 of each 16; NHWC
  // with MT 2: 4g .. 4g + 3), split below
  float wraw[MT][KSTEPS][4];
  auto load_w = [&](int q) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const int mA = (LAYOUT == 1 && MT == 2) ? m0 + 32 * q + 4 * g + 2 * mt : m0 + 16 * (MT * q + mt) + 2 * g;
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int m = mA + (r & 1), pr = 4 * ks + t, kh = pr / PPR, kw = 2 * (pr % PPR) + (r >> 1);
          wraw[mt][ks][r] = (pr < NPAIRS && kw < KW) ? __ldg(a.w + m * a.w_so + kh * a.w_sh + kw * a.w_sw) : 0.f;
        }
    }
  };

  // stage the band, zeros outside the map: chunks of 4 elements, x_c..x_c+3 one 16-byte load
  // where the row allows (x_c+4, the last element's partner, a 4-byte one); every load of a
  // thread's U chunks issued before any is used. (Measured against cp.async copies of the raw
  // rows and a split pass from shared memory: 0.3-0.5 us later to the first item, round 34.)
  const float* xn = a.x + n * a.x_sn;
  const int nq = a.band_rows * a.BQ;
  constexpr int U = 4;
  for (int e0 = threadIdx.x; e0 < nq; e0 += U * blockDim.x) {
    float v[U][5];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int e = e0 + u * blockDim.x;
      int qc;
      const int rr = int(a.fd_bq.divmod(uint32_t(e), &qc));
      const int ih = oh0 - a.pad_top + rr, iw0 = 4 * qc - a.pad_left;
#pragma unroll
      for (int k = 0; k < 5; ++k) v[u][k] = 0.f;
      if (e < nq && ih >= 0 && ih < a.H) {
        const float* xr = xn + ih * a.x_sh;
        if (a.vec_in && iw0 >= 0 && iw0 + 4 <= a.W) {
          const float4 f = __ldg(reinterpret_cast<const float4*>(xr + iw0));
          v[u][0] = f.x; v[u][1] = f.y; v[u][2] = f.z; v[u][3] = f.w;
          if (iw0 + 4 < a.W) v[u][4] = __ldg(xr + iw0 + 4);
        } else {
#pragma unroll
          for (int k = 0; k < 5; ++k)
            if (iw0 + k >= 0 && iw0 + k < a.W) v[u][k] = __ldg(xr + (iw0 + k) * a.x_sw);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int e = e0 + u * blockDim.x;
      if (e >= nq) break;
      int qc;
      const int rr = int(a.fd_bq.divmod(uint32_t(e), &qc));
      uint32_t h[5], l[5];
#pragma unroll
      for (int k = 0; k < 5; ++k) split(v[u][k], h[k], l[k]);
      float4* dst = band + rr * a.SWp + 4 * qc;
#pragma unroll
      for (int k = 0; k < 4; ++k)
        dst[k] = make_float4(__uint_as_float(h[k]), __uint_as_float(h[k + 1]), __uint_as_float(l[k]),
                             __uint_as_float(l[k + 1]));
    }
  }

  int boff[KSTEPS];  // the lane's tap pair of each k-step (padded pairs: offset 0, A is 0)
#pragma unroll
  for (int ks = 0; ks < KSTEPS; ++ks) {
    const int pr = 4 * ks + t;
    boff[ks] = pr < NPAIRS ? (pr / PPR) * a.SWp + 2 * (pr % PPR) : 0;
  }
  __syncthreads();
#if TP_STAMPS
  if (a.stamps && threadIdx.x == 0) {
    a.stamps[4 * blockIdx.x] = t_entry;
    a.stamps[4 * blockIdx.x + 1] = globaltimer();
  }
  bool first_item = true;
#endif

  uint32_t ahi[MT][KSTEPS][4], alo[MT][KSTEPS][4];
  auto split_w = [&]() {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks)
#pragma unroll
        for (int r = 0; r < 4; ++r) split(wraw[mt][ks][r], ahi[mt][ks][r], alo[mt][ks][r]);
  };
  int cur_q = -1;
  if (!TP_OLDW && warp < G * nchunks) {  // the first group's weights, before the item loop
    load_w(warp / nchunks);
    split_w();
    cur_q = warp / nchunks;
  }
  for (int it = warp; it < G * nchunks; it += nwarps) {
    const int q = it / nchunks, chunk = it - q * nchunks;
    if (q != cur_q) {  // warp-uniform: this group's A fragments, split
      load_w(q);
      split_w();
      cur_q = q;
    }
    const int f0 = chunk * 8 * NT;
    int base[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      // NCHW: column n of n-tile j is pixel 16 (j / 2) + 4 (n / 2) + 2 (j % 2) + n % 2, so that
      // lane t holds pixels 16 jj + 4t .. + 3 of n-tiles 2jj, 2jj + 1: a float4 per filter
      const int col = LAYOUT == 0 ? 16 * (j >> 1) + 4 * (g >> 1) + 2 * (j & 1) + (g & 1) : 8 * j + g;
      const int f = min(f0 + col, npix - 1);
      int c;
      const int r = int(a.fd_ow.divmod(uint32_t(f), &c));
      base[j] = r * a.SWp + c;
    }
    float acc[MT][NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[mt][j][r] = 0.f;
    float cor[SPLIT ? MT : 1][SPLIT ? NT : 1][4];
#pragma unroll
    for (int mt = 0; mt < (SPLIT ? MT : 1); ++mt)
#pragma unroll
      for (int j = 0; j < (SPLIT ? NT : 1); ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) cor[mt][j][r] = 0.f;
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
      float4 b[NT];
#pragma unroll
      for (int j = 0; j < NT; ++j) b[j] = band[base[j] + boff[ks]];
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const uint32_t h0 = __float_as_uint(b[j].x), h1 = __float_as_uint(b[j].y);
        const uint32_t l0 = __float_as_uint(b[j].z), l1 = __float_as_uint(b[j].w);
        if constexpr (MODE == 2) {  // no MMAs: the loads still feed the outputs
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) acc[mt][j][0] += b[j].x + b[j].w, acc[mt][j][3] += b[j].y;
        } else {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          if (SPLIT) {  // the corrections in their own accumulator: two chains of 4 and 8 per item
            mma_tf32(cor[mt][j], alo[mt][ks], h0, h1);
            mma_tf32(cor[mt][j], ahi[mt][ks], l0, l1);
          } else {
            mma_tf32(acc[mt][j], alo[mt][ks], h0, h1);
            mma_tf32(acc[mt][j], ahi[mt][ks], l0, l1);
          }
          mma_tf32(acc[mt][j], ahi[mt][ks], h0, h1);
        }
        }
      }
    }
    if (SPLIT) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int r = 0; r < 4; ++r) acc[mt][j][r] += cor[SPLIT ? mt : 0][SPLIT ? j : 0][r];
    }
    if (MODE == 1 && acc[0][0][0] != -1.2345e-38f) continue;
    // stores: d0 (row g, column 2t), d1 (g, 2t + 1), d2 (g + 8, 2t), d3 (g + 8, 2t + 1)
    float* yn = a.y + n * a.y_sn;
    if (LAYOUT == 0) {  // rows g, g + 8 = filters 2g, 2g + 1; 16-byte pieces of 4 pixels
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const int m = m0 + 16 * (MT * q + mt) + 2 * g;
#pragma unroll
        for (int jj = 0; jj < NT / 2; ++jj) {
          const int fp = f0 + 16 * jj + 4 * t;
          float* y0 = yn + m * a.y_sc + oh0 * a.y_sh + fp;
          const float v0[4] = {acc[mt][2 * jj][0], acc[mt][2 * jj][1], acc[mt][2 * jj + 1][0], acc[mt][2 * jj + 1][1]};
          const float v1[4] = {acc[mt][2 * jj][2], acc[mt][2 * jj][3], acc[mt][2 * jj + 1][2], acc[mt][2 * jj + 1][3]};
          const bool al = ((reinterpret_cast<uintptr_t>(y0) | reinterpret_cast<uintptr_t>(y0 + a.y_sc)) & 15) == 0;
          if (fp + 3 < npix && al) {  // (K3's OW = 510: planes and rows 8 bytes off, scalar)
            __stcs(reinterpret_cast<float4*>(y0), make_float4(v0[0], v0[1], v0[2], v0[3]));
            __stcs(reinterpret_cast<float4*>(y0 + a.y_sc), make_float4(v1[0], v1[1], v1[2], v1[3]));
          } else {
#pragma unroll
            for (int k = 0; k < 4; ++k)
              if (fp + k < npix) { __stcs(y0 + k, v0[k]); __stcs(y0 + a.y_sc + k, v1[k]); }
          }
        }
      }
    } else if (MT == 2) {  // filters 4g .. 4g + 3 of the 32: a float4 per pixel
      const int m = m0 + 32 * q + 4 * g;
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int fp = f0 + 8 * j + 2 * t + h;
          if (fp >= npix) continue;
          float* y0 = yn + (long long)(oh0 * a.OW + fp) * a.M + m;
          __stcs(reinterpret_cast<float4*>(y0), make_float4(acc[0][j][h], acc[0][j][2 + h], acc[MT - 1][j][h], acc[MT - 1][j][2 + h]));
        }
    } else {
      const int m = m0 + 16 * q + 2 * g;
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const int fp = f0 + 8 * j + 2 * t;
        if (fp >= npix) continue;
        float* y0 = yn + (long long)(oh0 * a.OW + fp) * a.M + m;
        __stcs(reinterpret_cast<float2*>(y0), make_float2(acc[0][j][0], acc[0][j][2]));
        if (fp + 1 < npix) __stcs(reinterpret_cast<float2*>(y0 + a.M), make_float2(acc[0][j][1], acc[0][j][3]));
      }
    }
#if TP_STAMPS
    if (a.stamps && first_item && threadIdx.x == 0) a.stamps[4 * blockIdx.x + 2] = globaltimer();
    first_item = false;
#endif
  }
#if TP_STAMPS
  if (a.stamps && threadIdx.x == 0) a.stamps[4 * blockIdx.x + 3] = globaltimer();
#endif
}

// Output i of the logical NCHW order: (n, m, oh, ow).
struct OutIdx {
  int n, m, oh, ow;
};
__device__ __forceinline__ OutIdx out_idx(const TArgs& a, long long i) {
  OutIdx o;
  o.ow = int(i % a.OW); i /= a.OW;
  o.oh = int(i % a.OH); i /= a.OH;
  o.m = int(i % a.M); o.n = int(i / a.M);
  return o;
}

// float64 reference, one output per thread
__global__ void ref_kernel(const TArgs a, double* out) {
  const long long total = (long long)a.N * a.M * a.OH * a.OW;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const auto [n, m, oh, ow] = out_idx(a, i);
    double s = 0;
    for (int kh = 0; kh < a.KH; ++kh)
      for (int kw = 0; kw < a.KW; ++kw) {
        const int ih = oh - a.pad_top + kh, iw = ow - a.pad_left + kw;
        if (ih < 0 || ih >= a.H || iw < 0 || iw >= a.W) continue;
        s += double(a.x[n * a.x_sn + ih * a.x_sh + iw * a.x_sw]) *
             double(a.w[m * a.w_so + kh * a.w_sh + kw * a.w_sw]);
      }
    out[i] = s;  // logical NCHW order
  }
}

__global__ void err_kernel(const TArgs a, const double* ref, double* acc) {
  // acc[0] += (y - ref)^2, acc[1] += ref^2, acc[2] = max |y - ref|, acc[3] = NaN count
  const long long total = (long long)a.N * a.M * a.OH * a.OW;
  double se = 0, sr = 0, mx = 0, nan = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const auto [n, m, oh, ow] = out_idx(a, i);
    const float v = a.y[n * a.y_sn + m * a.y_sc + oh * a.y_sh + ow * a.y_sw];
    if (!isfinite(v)) { nan += 1; continue; }
    const double d = double(v) - ref[i];
    se += d * d; sr += ref[i] * ref[i]; mx = fmax(mx, fabs(d));
  }
  atomicAdd(acc, se); atomicAdd(acc + 1, sr); atomicAdd(acc + 3, nan);
  unsigned long long* mxp = reinterpret_cast<unsigned long long*>(acc + 2);
  atomicMax(mxp, __double_as_longlong(mx));  // non-negative doubles order as their bits
}

__global__ void fill_kernel(float* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
    p[i] = (float(h & 0xffffff) / 16777216.f) * 2.f - 1.f;
  }
}

__global__ void store_only_kernel(float4* y, size_t n4) {
  const float4 v = make_float4(1.f, 2.f, 3.f, 4.f);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) y[i] = v;
}

struct Case {
  const char* name;
  int N, HW, M, K, layout;
  long long plan[8];  // the package's launch for the baseline (the H200 bench's choice)
};

template <int K, int MT, int NT, int LAYOUT, int MODE, bool SPLIT>
void launch_t(const TArgs& a, cudaStream_t s) {
  auto kern = mma_t_kernel<K, K, MT, NT, LAYOUT, MODE, SPLIT>;
  const size_t smem = size_t(a.band_rows) * a.SWp * sizeof(float4);
  static bool raised = false;
  if (!raised) {
    CKX(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
    raised = true;
  }
  kern<<<a.N * a.n_rb * a.n_mb, 256, smem, s>>>(a);
}

template <int K, int MT, int NT, bool SPLIT = false>
void launch_mode(const TArgs& a, int layout, cudaStream_t s) {
  if (layout == 0) {
    if (a.mode == 1) launch_t<K, MT, NT, 0, 1, SPLIT>(a, s);
    else if (a.mode == 2) launch_t<K, MT, NT, 0, 2, SPLIT>(a, s);
    else launch_t<K, MT, NT, 0, 0, SPLIT>(a, s);
  } else {
    if (a.mode == 1) launch_t<K, MT, NT, 1, 1, SPLIT>(a, s);
    else if (a.mode == 2) launch_t<K, MT, NT, 1, 2, SPLIT>(a, s);
    else launch_t<K, MT, NT, 1, 0, SPLIT>(a, s);
  }
}

// variant v: (MT, NT)
constexpr int kNumVariants = 4;  // the last: (2, 2) with the corrections in their own accumulators
const int kVariants[kNumVariants][2] = {{1, 4}, {2, 4}, {2, 2}, {2, 2}};
void launch_probe(const TArgs& a, int v, int layout, cudaStream_t s) {
#define TP_L(K, MT, NT)                                              \
  if (a.KH == K && kVariants[v][0] == MT && kVariants[v][1] == NT) { \
    if (v == 3) launch_mode<K, MT, NT, true>(a, layout, s);          \
    else launch_mode<K, MT, NT>(a, layout, s);                        \
    return;                                                          \
  }
  TP_L(5, 1, 4) TP_L(5, 2, 4) TP_L(5, 2, 2)
  TP_L(3, 1, 4) TP_L(3, 2, 4) TP_L(3, 2, 2)
#undef TP_L
  fprintf(stderr, "no instance for K %d variant %d\n", a.KH, v);
  exit(1);
}

TArgs make_args(const Case& c, const float* x, const float* w, float* y, int RB, int MBT, int mode = 0) {
  TArgs a{};
  a.mode = mode;
  a.x = x; a.w = w; a.y = y;
  a.N = c.N; a.H = a.W = c.HW; a.M = c.M; a.KH = a.KW = c.K;
  a.OH = a.OW = c.HW - c.K + 1;
  a.x_sw = 1; a.x_sh = c.HW; a.x_sn = (long long)c.HW * c.HW;
  a.w_sw = 1; a.w_sh = c.K; a.w_so = c.K * c.K;
  const long long P = (long long)a.OH * a.OW;
  if (c.layout == 0) { a.y_sw = 1; a.y_sh = a.OW; a.y_sc = P; a.y_sn = P * c.M; }
  else { a.y_sc = 1; a.y_sw = c.M; a.y_sh = (long long)a.OW * c.M; a.y_sn = P * c.M; }
  a.RB = RB; a.MBT = MBT;
  a.n_rb = (a.OH + RB - 1) / RB; a.n_mb = (c.M + MBT - 1) / MBT;
  a.BW = a.OW + c.K - 1; a.band_rows = RB + c.K - 1;
  a.BQ = (a.BW + 3) / 4; a.vec_in = a.x_sw == 1 && a.x_sh % 4 == 0 && a.x_sn % 4 == 0 && a.pad_left % 4 == 0 && (reinterpret_cast<uintptr_t>(x) & 15) == 0;
  a.SWp = (4 * a.BQ + 7) / 8 * 8 + 6;  // float4s; = 6 mod 8: a quarter-warp's 8 loads in distinct banks
  a.fd_ow = FastDiv(a.OW); a.fd_bq = FastDiv(a.BQ); a.fd_nmb = FastDiv(a.n_mb); a.fd_nrb = FastDiv(a.n_rb);
  return a;
}

fastconv::ConvParams make_params(const Case& c) {
  fastconv::ConvParams p{};
  p.N = c.N; p.C = 1; p.H = p.W = c.HW; p.M = c.M; p.KH = p.KW = c.K;
  p.OH = p.OW = c.HW - c.K + 1;
  p.stride_h = p.stride_w = 1;
  p.x_sw = 1; p.x_sh = c.HW; p.x_sc = (long long)c.HW * c.HW; p.x_sn = p.x_sc;
  p.w_sw = 1; p.w_sh = c.K; p.w_si = c.K * c.K; p.w_so = p.w_si;
  const long long P = p.OH * p.OW;
  if (c.layout == 0) { p.y_sw = 1; p.y_sh = p.OW; p.y_sc = P; p.y_sn = P * c.M; }
  else { p.y_sc = 1; p.y_sw = c.M; p.y_sh = p.OW * c.M; p.y_sn = P * c.M; }
  for (int i = 0; i < 8; ++i) p.plan[i] = c.plan[i];
  return p;
}

// launch(r, stream) for r < R captured in one graph, replayed `samples` times: median us per launch
template <class Launch>
double graph_time_us(int R, int samples, Launch launch) {
  cudaStream_t st;
  CKX(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  float us = 0.f;
  if (time_graph(st, R, samples, [&](int r) { launch(r, st); }, &us)) exit(1);
  CKX(cudaStreamDestroy(st));
  return us;
}

}  // namespace

int main() {
  cudaDeviceProp prop; CKX(cudaGetDeviceProperties(&prop, 0));
  printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  const Case cases[] = {
      {"b1 512^2 K5 NCHW", 1, 512, 32, 5, 0, {1, 2, 1, 1, 32, 4, 0, 256}},
      {"b1 512^2 K5 NHWC", 1, 512, 32, 5, 1, {1, 6, 1, 1, 32, 8, 3, 256}},
      {"b1 512^2 K5 NHWC ffma", 1, 512, 32, 5, 1, {1, 2, 1, 1, 32, 4, 0, 256}},
      {"b32 28^2 K5 NCHW", 32, 28, 512, 5, 0, {1, 2, 1, 4, 128, 24, 0, 256}},
      {"b32 28^2 K5 NHWC", 32, 28, 512, 5, 1, {1, 2, 1, 4, 128, 24, 0, 256}},
      {"b32 56^2 K5 NCHW", 32, 56, 256, 5, 0, {1, 2, 1, 4, 64, 52, 0, 256}},
      {"b1 512^2 K3 NCHW", 1, 512, 32, 3, 0, {1, 2, 1, 1, 32, 4, 0, 256}},
      {"b1 1024^2 K5 NCHW", 1, 1024, 32, 5, 0, {1, 2, 1, 1, 32, 4, 0, 256}},
  };
  const char* only = std::getenv("TP_CASES");
  for (const Case& c : cases) {
    if (only) {
      bool hit = false;
      std::string list = only;
      for (size_t s0 = 0, s1; s0 <= list.size(); s0 = s1 + 1) {
        s1 = list.find(',', s0); if (s1 == std::string::npos) s1 = list.size();
        if (s1 > s0 && std::string(c.name).find(list.substr(s0, s1 - s0)) != std::string::npos) hit = true;
      }
      if (!hit) continue;
    }
    const int OH = c.HW - c.K + 1;
    const size_t xe = size_t(c.N) * c.HW * c.HW, we = size_t(c.M) * c.K * c.K,
                 ye = size_t(c.N) * c.M * OH * OH;
    const int R = std::max<int>(2, std::min<int>(8, int(600e6 / (4.0 * (xe + ye)))));
    std::vector<float*> xs(R), ws(R), ys(R);
    for (int r = 0; r < R; ++r) {
      CKX(cudaMalloc(&xs[r], xe * 4)); CKX(cudaMalloc(&ws[r], we * 4)); CKX(cudaMalloc(&ys[r], ye * 4));
      fill_kernel<<<1024, 256>>>(xs[r], xe, 17 + r); fill_kernel<<<64, 256>>>(ws[r], we, 91 + r);
    }
    double* ref; CKX(cudaMalloc(&ref, ye * 8));
    double* acc; CKX(cudaMalloc(&acc, 4 * 8));
    const double floor_us = 4.0 * (xe + we + ye) / 4.25e6;  // H200 copy 4.25 TB/s (scale only)
    printf("\n== %s (floor %.2f us at 4.25 TB/s; R %d)\n", c.name, floor_us, R);
    {
      TArgs a0 = make_args(c, xs[0], ws[0], ys[0], 4, 32);
      ref_kernel<<<2048, 256>>>(a0, ref);
      CKX(cudaGetLastError());
    }
    auto check = [&](const char* what, float* y, int layout) {
      TArgs a0 = make_args(c, xs[0], ws[0], y, 4, 32);
      (void)layout;
      CKX(cudaMemset(acc, 0, 32));
      err_kernel<<<1024, 256>>>(a0, ref, acc);
      double h[4]; CKX(cudaMemcpy(h, acc, 32, cudaMemcpyDeviceToHost));
      printf("  check %-28s rel L2 %.3e  max|d| %.3e  non-finite %.0f\n", what, sqrt(h[0] / h[1]), h[2], h[3]);
    };
    if (const char* one = std::getenv("TP_ONE")) {  // "variant,RB,MBT,mode": one launch (for ncu), then exit
      int v = 0, RB = 0, MBT = 0, mode = 0;
      sscanf(one, "%d,%d,%d,%d", &v, &RB, &MBT, &mode);
      TArgs a0 = make_args(c, xs[0], ws[0], ys[0], RB, MBT, mode);
      launch_probe(a0, v, c.layout, 0);
      CKX(cudaDeviceSynchronize());
      fastconv::ConvParams p1 = make_params(c);
      CKX(fastconv::launch_single_channel(p1, xs[1], ws[1], ys[1], 0));
      CKX(cudaDeviceSynchronize());
      return 0;
    }
    // the package's planned launch
    fastconv::ConvParams p = make_params(c);
    CKX(cudaMemset(ys[0], 0xff, ye * 4));
    CKX(fastconv::launch_single_channel(p, xs[0], ws[0], ys[0], 0));
    CKX(cudaDeviceSynchronize());
    check("package plan", ys[0], c.layout);
    const double t_pkg = graph_time_us(R, 25, [&](int r, cudaStream_t st) {
      CKX(fastconv::launch_single_channel(p, xs[r], ws[r], ys[r], st));
    });
    const size_t n4 = ye / 4;
    const double t_store = graph_time_us(R, 25, [&](int r, cudaStream_t st) {
      store_only_kernel<<<4 * prop.multiProcessorCount, 256, 0, st>>>(reinterpret_cast<float4*>(ys[r]), n4);
    });
    printf("  package plan [%lld,%lld,%lld,%lld,%lld,%lld,%lld] %8.2f us   store-only %8.2f us\n",
           c.plan[1], c.plan[2], c.plan[3], c.plan[4], c.plan[5], c.plan[6], c.plan[7], t_pkg, t_store);
    // the probe over a few tiles
    std::vector<std::pair<int, int>> tiles;  // (RB, MBT)
    if (c.N == 1) tiles = {{2, 32}, {4, 32}, {8, 32}, {1, 32}};
    else if (c.HW == 28) tiles = {{24, 32}, {24, 64}, {24, 128}, {12, 64}, {12, 128}, {8, 128}};
    else tiles = {{13, 64}, {13, 128}, {26, 64}, {52, 32}, {7, 128}};
    for (int v = 0; v < kNumVariants; ++v) {
      if (std::getenv("TP_VARIANTS") && !strchr(std::getenv("TP_VARIANTS"), '0' + v)) continue;  // e.g. "2"
      const int mt = kVariants[v][0], nt = kVariants[v][1];
      double best = 1e30; int bRB = 0, bMB = 0;
      for (const auto& tile : tiles) {
        const int RB = tile.first, MBT = tile.second;
        if (MBT > c.M || MBT % (16 * mt)) continue;
        CKX(cudaMemset(ys[0], 0xff, ye * 4));
        TArgs a0 = make_args(c, xs[0], ws[0], ys[0], RB, MBT);
        launch_probe(a0, v, c.layout, 0);
        CKX(cudaGetLastError()); CKX(cudaDeviceSynchronize());
        char nm[64]; snprintf(nm, sizeof nm, "probe MT %d NT %d RB %d MBT %d", mt, nt, RB, MBT);
        check(nm, ys[0], c.layout);
        const double tt = graph_time_us(R, 25, [&](int r, cudaStream_t st) {
          TArgs ar = make_args(c, xs[r], ws[r], ys[r], RB, MBT);
          launch_probe(ar, v, c.layout, st);
        });
        printf("  probe MT %d NT %d RB %2d MBT %3d grid %6d %8.2f us  (%.3fx the package plan)\n", mt, nt, RB, MBT,
               a0.N * a0.n_rb * a0.n_mb, tt, tt / t_pkg);
        if (tt < best) { best = tt; bRB = RB; bMB = MBT; }
      }
      double tm[3] = {best, 0, 0};
      for (int mode = 1; mode <= 2 && bRB; ++mode)
        tm[mode] = graph_time_us(R, 25, [&](int r, cudaStream_t st) {
          TArgs ar = make_args(c, xs[r], ws[r], ys[r], bRB, bMB, mode);
          launch_probe(ar, v, c.layout, st);
        });
      printf("  BEST MT %d NT %d: RB %d MBT %d %.2f us (no stores %.2f, no MMAs %.2f), package %.2f us, ratio %.3f, %% of floor %.1f\n",
             mt, nt, bRB, bMB, best, tm[1], tm[2], t_pkg, best / t_pkg, 100 * floor_us / best);
      for (int mode = 0; mode <= 1 && bRB && TP_STAMPS; ++mode) {  // timeline of the best tile (3rd of 3 back-to-back launches)
        TArgs ar = make_args(c, xs[0], ws[0], ys[0], bRB, bMB, mode);
        const int G = ar.N * ar.n_rb * ar.n_mb;
        unsigned long long* st; CKX(cudaMalloc(&st, 32ull * G));
        for (int k = 0; k < 3; ++k) { ar.stamps = k == 2 ? st : nullptr; launch_probe(ar, v, c.layout, 0); }
        CKX(cudaDeviceSynchronize());
        std::vector<unsigned long long> h(4ull * G);
        CKX(cudaMemcpy(h.data(), st, 32ull * G, cudaMemcpyDeviceToHost));
        CKX(cudaFree(st));
        unsigned long long t0 = ~0ull, tend = 0;
        for (int b = 0; b < G; ++b) { t0 = std::min(t0, h[4 * b]); tend = std::max(tend, h[4 * b + 3]); }
        std::vector<double> e, sg, fi, en;
        for (int b = 0; b < G; ++b) {
          e.push_back((h[4 * b] - t0) * 1e-3); sg.push_back((h[4 * b + 1] - t0) * 1e-3);
          if (mode == 0) fi.push_back((h[4 * b + 2] - t0) * 1e-3);
          en.push_back((h[4 * b + 3] - t0) * 1e-3);
        }
        auto med = [](std::vector<double> v) { if (v.empty()) return 0.0; std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
        auto mx = [](std::vector<double> v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
        printf("    timeline mode %d (us from the first CTA's entry; median / max over CTAs): entry %.2f / %.2f, staged %.2f / %.2f, "
               "first item stored %.2f / %.2f, warp 0 done %.2f / %.2f\n", mode, med(e), mx(e), med(sg), mx(sg), med(fi), mx(fi),
               med(en), mx(en));
      }
    }
    for (int r = 0; r < R; ++r) { CKX(cudaFree(xs[r])); CKX(cudaFree(ws[r])); CKX(cudaFree(ys[r])); }
    CKX(cudaFree(ref)); CKX(cudaFree(acc));
  }
  return 0;
}
