// Prototype: the single-channel convolution as a 3xTF32 wgmma GEMM whose A operand is the
// staged input band itself (a Toeplitz view through the shared-memory descriptor), sm_90a.
// Measured and not taken (benchmarks/notes/single_channel.md, rounds 25 and 26); round 26 added
// the transposed product (tz_rs_kernel: the weights as wgmma's register operand) and a
// warp-specialized kernel with it as producer (tz_ws_rs_kernel).
//
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Icuda \
//        -o /tmp/tz benchmarks/notes/sc_wgmma_toeplitz.cu && /tmp/tz
//   /tmp/tz --check: correctness only. TZ_CASES="b1 512^2 M32 K5,...": these cases only;
//   TZ_ONLY=SPT,NWG: one configuration (e.g. under ncu). TZ_WS=1: the warp-specialized variant.
//   TZ_NWG=2,3,45: these launch codes (see run()). TZ_TIMELINE=1: per-warpgroup stamps and the
//   SM clock of one more launch. TZ_MODE (timing only, wrong answers): 1 no stores, 2 no
//   filter build, 4 no band staging; 8 NCHW write-back stores, 16 NHWC whole-line stores,
//   128 no MMAs in the transposed product; 32 (staggered start) and 64 (bulk-copy stores) keep
//   the answers. TZ_NOMMA=1: staging and stores only.
//
// The idea. A tile's input band sits in shared memory as a flat float array (row stride Ws, a
// multiple of 4; the batch's padded images stacked into one tall map). For output pixel p
// (flat index in the band's frame), filter row kh and tap kw the product reads
// band[p + kh Ws + kw]. Group the pixels by p = 4 r + ph (ph = 0..3): then
//   out[4 r + ph][f] = sum_kh sum_k band[4 r + kh Ws + k] * B_kh[k][ph, f],
//   B_kh[k][ph, f] = w[f][kh][k - ph] (zero where k - ph is not a tap), k = 0..7 (KW <= 5),
// a GEMM with A[r][k] = band[4 r + k + kh Ws]: rows 16 bytes apart, k contiguous. In the
// no-swizzle K-major layout a core matrix is 8 rows x 16 bytes, contiguous; the next core
// matrix along k is LBO bytes on (here 16: it overlaps the next row) and the next 8 rows SBO =
// 128 bytes on. So one wgmma m64n128k8 takes 64 A rows (256 pixels) x 4 phases x 32 filters,
// with no im2col copy and no per-element shared load by the threads (the overlapping core
// matrices read correctly on the H200: every configuration checked). 3xTF32: the band and
// the filters are split once (hi, lo copies) when staged; each (segment, kh) issues 3 wgmmas.
// Cost: 8 k for KW taps (5 of 8 used for K = 5, 3 of 8 for K = 3), times 3 for the split.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "probe_timing.cuh"  // CK (returns 1), time_graph, globaltimer
#include "toeplitz_wgmma.cuh"  // (cuda/, -Icuda) b_filter, tz_mma, tz_gather, tz_pixel; the
                                // wgmma helpers (split_tf32, desc, the shapes)
using namespace fastconv;

// CK for void contexts: print and exit.
#define CKX(x)                                                                            \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      fprintf(stderr, "CUDA %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, __LINE__, #x); \
      exit(2);                                                                            \
    }                                                                                     \
  } while (0)

struct TzParams {
  int N, H, W, M, KH, KW, pt, pl, OH, OW;
  int nhwc;          // output layout: 1 NHWC, 0 NCHW
  int Hp, Ws;        // padded rows per image (tall-stack period), band row stride (floats, % 4 == 0)
  int hp_div, ws_div;  // tz_pixel's divisors (= Hp, Ws)
  int S;             // 256-pixel segments of the flat tall stack (tall row * Ws + column)
  int SPT;           // segments per CTA
  int NB;            // band rows staged per CTA (at most)
  int nfb;           // 32-filter blocks (grid.y)
  unsigned long long* tl;  // timeline (TZ_TIMELINE): per CTA and warpgroup, see TzStamps
  int mode;          // knobs: 1 no stores, 2 no filter build, 4 no band staging (timing only);
                     // 8 NCHW write-back stores, 16 NHWC whole-line stores, 32 staggered warpgroups,
                     // 64 stores through shared memory and bulk copies, 128 no MMAs
                     // (transposed product; timing only)
};

constexpr int kStageFloats = 32 * 260;  // one warpgroup's output staging buffer (mode 64)

// Segment s's outputs from the accumulators (lane layout: see b_filter). LEAN: only the common
// case (whole 32-filter blocks, NHWC or NCHW with OW % 4 == 0, streaming float4 stores, no
// timing modes), a smaller unrolled body for the instruction cache (round 26).
template <bool LEAN = false>
__device__ __forceinline__ void tz_store(const float (&d)[64], float* __restrict__ y,
                                         const TzParams& p, int s, int fb, int wq, int g, int t) {
  if (!LEAN && (p.mode & 1)) {  // timing: keep the sums live, store nothing
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < 64; ++i) acc += d[i];
    if (acc == 1234.5f) y[0] = acc;
    return;
  }
  if (!LEAN && (p.mode & 16) && p.nhwc && (p.M & 31) == 0) {
    // Whole 128-byte lines: lanes g and g ^ 1 trade a 16-filter half so that each store
    // instruction writes 4 pixels x 32 filters (lane (g, t) holds filters 4t.. and 16 + 4t..).
    const bool ev = (g & 1) == 0;
    auto px = [&](int P) -> float* {  // output of flat pixel P (filters fb * 32 ..), or null
      int n, oy, ox;
      if (!tz_pixel(p, P, n, oy, ox)) return nullptr;
      return y + (((size_t)n * p.OH + oy) * p.OW + ox) * p.M + fb * 32;
    };
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float v0[4][4], v1[4][4];  // the two 16-filter halves, v[ph][i] as tz_gather gives them
      tz_gather(d, h, 0, v0);
      tz_gather(d, h, 1, v1);
#pragma unroll
      for (int ph = 0; ph < 4; ++ph) {
        float rv[4], s1[4], s2[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          rv[i] = __shfl_xor_sync(0xffffffffu, ev ? v1[ph][i] : v0[ph][i], 4);
          s1[i] = ev ? v0[ph][i] : rv[i];
          s2[i] = ev ? rv[i] : v1[ph][i];
        }
        const int P = s * 256 + 4 * (16 * wq + g + 8 * h) + ph;  // this lane's pixel
        float* a1 = px(ev ? P : P - 4);
        float* a2 = px(ev ? P + 4 : P);
        const int o = (ev ? 0 : 16) + 4 * t;
        if (a1) __stcs(reinterpret_cast<float4*>(a1 + o), make_float4(s1[0], s1[1], s1[2], s1[3]));
        if (a2) __stcs(reinterpret_cast<float4*>(a2 + o), make_float4(s2[0], s2[1], s2[2], s2[3]));
      }
    }
    return;
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = 16 * wq + g + 8 * h;
    int n, oy, ox0;  // of the phase-0 pixel; its 4 share the row (Ws % 4 == 0)
    if (!tz_pixel(p, s * 256 + 4 * r, n, oy, ox0)) continue;
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int f0 = fb * 32 + 16 * q + 4 * t;
      float v[4][4];  // v[ph][i]: phase ph, filter f0 + i
      tz_gather(d, h, q, v);
      if (p.nhwc) {
        const size_t base = (((size_t)n * p.OH + oy) * p.OW + ox0) * p.M + f0;
#pragma unroll
        for (int ph = 0; ph < 4; ++ph) {
          if (ox0 + ph >= p.OW) break;
          if (LEAN || ((p.M & 3) == 0 && f0 + 3 < p.M)) {
            __stcs(reinterpret_cast<float4*>(y + base + (size_t)ph * p.M),
                   make_float4(v[ph][0], v[ph][1], v[ph][2], v[ph][3]));
          } else {
            for (int i = 0; i < 4; ++i)
              if (f0 + i < p.M) y[base + (size_t)ph * p.M + i] = v[ph][i];
          }
        }
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          if (!LEAN && f0 + i >= p.M) break;
          const size_t base = (((size_t)n * p.M + f0 + i) * p.OH + oy) * p.OW + ox0;
          if (LEAN || (p.OW & 3) == 0) {
            const float4 o = make_float4(v[0][i], v[1][i], v[2][i], v[3][i]);
            if (!LEAN && (p.mode & 8)) *reinterpret_cast<float4*>(y + base) = o;  // write-back, not streaming
            else __stcs(reinterpret_cast<float4*>(y + base), o);
          } else {
            for (int ph = 0; ph < 4; ++ph)
              if (ox0 + ph < p.OW) y[base + ph] = v[ph][i];
          }
        }
      }
    }
  }
}

// TZ_TIMELINE: per CTA and warpgroup kTlSlots values: %globaltimer at kernel entry, setup done,
// first segment's MMAs done, its stores issued, last stores issued; then %clock64 at the first
// and the last stamp (the SM clock while the kernel runs).
constexpr int kTlSlots = 7;
struct TzStamps {
  unsigned long long* tl;
  __device__ TzStamps(const TzParams& p, int nwg, int tid)
      : tl(p.tl && (tid & 127) == 0
               ? p.tl + ((size_t)(blockIdx.y * gridDim.x + blockIdx.x) * nwg + (tid >> 7)) * kTlSlots
               : nullptr) {}
  __device__ void operator()(int i) const {
    if (!tl) return;
    tl[i] = globaltimer();
    if (i == 0 || i == 4) tl[i == 0 ? 5 : 6] = clock64();
  }
};

// Staging, shared by both kernels: the CTA's band (tall rows Rb .. Rb + nb - 1 of the padded,
// stacked images) split into hi / lo copies, and its 32 raw filters wraw[c][kh][kw] (zero past
// M). Returns nonzero where a value is non-finite or huge (the 3xTF32 split is not valid there).
template <int NT>
__device__ __forceinline__ int tz_stage(const float* __restrict__ x, const float* __restrict__ w,
                                        const TzParams& p, float* ahi, float* alo, float* wraw,
                                        int fb, int Rb, int nb, int tid) {
  int bad = 0;
  const int taps = p.KH * p.KW, wn = 32 * taps;
  const float* wsrc = w + (size_t)fb * wn;
  const bool wvec = (fb + 1) * 32 <= p.M && wn / 4 <= NT;  // one 16-byte load per thread
  float4 wv = make_float4(0.f, 0.f, 0.f, 0.f);
  if (wvec && tid < wn / 4) wv = __ldg(reinterpret_cast<const float4*>(wsrc) + tid);
  // band: tall rows Rb .. Rb + nb - 1 of the padded, stacked images; 16-byte loads where the
  // rows are unpadded and 16-byte aligned, all of a thread's loads in flight before any is used
  const int Wp = p.OW + p.KW - 1;
  if (!(p.mode & 4)) {
    if (p.pt == 0 && p.pl == 0 && p.Hp == p.H && Wp == p.W && p.Ws == p.W) {
      // unpadded, 16-byte rows: the tall stack is the input itself, the band one flat range
      const long long g0 = (long long)Rb * (p.W >> 2), gend = (long long)p.N * p.H * (p.W >> 2);
      const int total = nb * (p.Ws >> 2);
      constexpr int U = 8;
      for (int i0 = tid; i0 < total; i0 += NT * U) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int i = i0 + u * NT;
          v[u] = make_float4(0.f, 0.f, 0.f, 0.f);
          if (i < total && g0 + i < gend) v[u] = __ldg(reinterpret_cast<const float4*>(x) + g0 + i);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int i = i0 + u * NT;
          if (i >= total) break;
          const float e[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
          uint32_t h[4], l[4];
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            bad |= !(fabsf(e[k]) <= 1e18f);
            split_tf32(e[k], h[k], l[k]);
          }
          reinterpret_cast<uint4*>(ahi)[i] = make_uint4(h[0], h[1], h[2], h[3]);
          reinterpret_cast<uint4*>(alo)[i] = make_uint4(l[0], l[1], l[2], l[3]);
        }
      }
    } else {
      for (int rr = tid >> 5; rr < nb; rr += NT / 32) {  // a warp per band row, 4 loads in flight
        const int R = Rb + rr, n = R / p.Hp, yy = R - n * p.Hp - p.pt;
        const bool rowok = n < p.N && yy >= 0 && yy < p.H;
        const float* src = rowok ? x + ((size_t)n * p.H + yy) * p.W - p.pl : x;
        for (int c0 = tid & 31; c0 < p.Ws; c0 += 128) {
          float v[4];
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const int c = c0 + 32 * u, xx = c - p.pl;
            v[u] = (rowok && c < Wp && xx >= 0 && xx < p.W) ? __ldg(src + c) : 0.f;
          }
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const int c = c0 + 32 * u;
            if (c >= p.Ws) break;
            bad |= !(fabsf(v[u]) <= 1e18f);
            uint32_t h, l;
            split_tf32(v[u], h, l);
            ahi[rr * p.Ws + c] = __uint_as_float(h);
            alo[rr * p.Ws + c] = __uint_as_float(l);
          }
        }
      }
    }
  }
  if (wvec) {
    if (tid < wn / 4) reinterpret_cast<float4*>(wraw)[tid] = wv;
  } else {
    for (int i = tid; i < wn; i += NT) wraw[i] = fb * 32 + i / taps < p.M ? __ldg(wsrc + i) : 0.f;
  }
  return bad;
}

// A CTA's tile: its band (hi / lo copies, NB x Ws each, at `band` in shared memory) and its 32
// raw filters after it, the filter block, its segments [s0, s1), the tall row of band row 0 and
// the band rows staged.
struct TzTile {
  float *ahi, *alo, *wraw;
  int fb, s0, s1, Rb, nb;
};

// Fills c for this CTA and stages its band and filters (tz_stage), then __syncthreads; returns
// nonzero where a staged band value is non-finite or huge.
template <int NT>
__device__ __forceinline__ int tz_begin(const float* __restrict__ x, const float* __restrict__ w,
                                        const TzParams& p, float* band, int tid, TzTile& c) {
  c.ahi = band;
  c.alo = band + p.NB * p.Ws;
  c.wraw = c.alo + p.NB * p.Ws;
  c.fb = blockIdx.y;
  c.s0 = blockIdx.x * p.SPT;
  c.s1 = min(c.s0 + p.SPT, p.S);
  c.Rb = (c.s0 * 256) / p.Ws;
  c.nb = min(p.NB, (c.s1 * 256 + 8) / p.Ws - c.Rb + p.KH);
  const int bad = tz_stage<NT>(x, w, p, c.ahi, c.alo, c.wraw, c.fb, c.Rb, c.nb, tid);
  __syncthreads();
  return bad;
}

// Warp-specialized kernels' store warpgroup cw of NC: segments k = cw, cw + NC, ... of the CTA's
// nseg, each from producer k % 2's slot (k / 2) % 2 ([pixel][32 filters], 16-byte chunks
// XOR-swizzled by pixel % 8), 512 contiguous bytes per warp instruction. Named barriers: 1 + slot
// "full" (the producer arrives, we wait), 5 + slot "empty" (we arrive, the producer waits).
template <int NC>
__device__ __forceinline__ void ws_consume(const float* slots, float* __restrict__ y, const TzParams& p,
                                           int s0, int nseg, int fb, int cw, int tid,
                                           const TzStamps& stamp) {
  const int lt = tid & 127, c = lt & 7;
  for (int k = cw; k < nseg; k += NC) {
    const int j = k >> 1, slot = (k & 1) * 2 + (j & 1);
    const float* buf = slots + slot * 8192;
    asm volatile("bar.sync %0, 256;\n" ::"r"(1 + slot) : "memory");
    if (k == cw) stamp(2);
    const int P0 = (s0 + k) * 256, R0 = P0 / p.Ws, ox0 = P0 - R0 * p.Ws;
    if (ox0 + 256 <= p.Ws) {  // the segment lies in one tall row: one base, no division
      const int n = R0 / p.Hp, oy = R0 - n * p.Hp;
      if (n < p.N && oy < p.OH) {
        float* row = y + ((size_t)n * p.OH + oy) * p.OW * p.M + fb * 32 + 4 * c;
        const int valid = p.OW - ox0;  // pixels of the segment inside the output row
#pragma unroll 4
        for (int it = 0; it < 16; ++it) {
          const int lp = it * 16 + (lt >> 3);
          const float4 v =
              *reinterpret_cast<const float4*>(buf + lp * 32 + ((c ^ (lp & 7)) << 2));
          if (lp < valid) __stcs(reinterpret_cast<float4*>(row + (size_t)(ox0 + lp) * p.M), v);
        }
      }
    } else {
#pragma unroll 4
      for (int it = 0; it < 16; ++it) {
        const int lp = it * 16 + (lt >> 3);
        const float4 v = *reinterpret_cast<const float4*>(buf + lp * 32 + ((c ^ (lp & 7)) << 2));
        int ox = ox0 + lp, R = R0;
        while (ox >= p.Ws) { ox -= p.Ws; ++R; }
        const int n = R / p.Hp, oy = R - n * p.Hp;
        if (n < p.N && oy < p.OH && ox < p.OW)
          __stcs(reinterpret_cast<float4*>(y + (((size_t)n * p.OH + oy) * p.OW + ox) * p.M +
                                           fb * 32 + 4 * c), v);
      }
    }
    if (k + 4 < nseg) asm volatile("bar.arrive %0, 256;\n" ::"r"(5 + slot) : "memory");
    if (k == cw) stamp(3);
  }
}

// Mode 64: the segment's outputs go through a shared-memory buffer and leave by bulk copies
// (cp.async.bulk, the copy engine drains them while the warpgroup runs its next wgmmas).
// NHWC (M = 32): buffer[pixel][32], one copy per run of pixels within an output row;
// NCHW (OW % 4 == 0): buffer[filter][260], one copy per filter and run.
__device__ __forceinline__ void tz_store_bulk(const float (&d)[64], float* __restrict__ y,
                                              const TzParams& p, int s, int fb, int wq, int g,
                                              int t, float* buf, int wg, bool wait_prev) {
  const int ltid = (wq << 5) | (g << 2) | t;  // thread in the warpgroup
  // each issuing thread waits for its own copies' reads (NHWC: lane 0 of warp 0; NCHW: warp 0)
  if (wait_prev && (p.nhwc ? ltid == 0 : wq == 0))
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
  asm volatile("bar.sync %0, 128;\n" ::"r"(8 + wg) : "memory");  // the buffer is free
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = 16 * wq + g + 8 * h;
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      float v[4][4];  // v[ph][i]: phase ph, filter 16 q + 4 t + i
      tz_gather(d, h, q, v);
      const int f0 = 16 * q + 4 * t;
      if (p.nhwc) {
#pragma unroll
        for (int ph = 0; ph < 4; ++ph)
          *reinterpret_cast<float4*>(buf + (4 * r + ph) * 32 + f0) =
              make_float4(v[ph][0], v[ph][1], v[ph][2], v[ph][3]);
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          *reinterpret_cast<float4*>(buf + (f0 + i) * 260 + 4 * r) =
              make_float4(v[0][i], v[1][i], v[2][i], v[3][i]);
      }
    }
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("bar.sync %0, 128;\n" ::"r"(8 + wg) : "memory");
  if (wq != 0) return;  // warp 0 of the warpgroup issues the copies
  const uint32_t sbuf = static_cast<uint32_t>(__cvta_generic_to_shared(buf));
  // runs: the segment's flat pixels [P0, P0 + 256) cut at row ends, clipped to OW
  for (int P = s * 256; P < s * 256 + 256;) {
    const int R = P / p.Ws, ox = P - R * p.Ws, n = R / p.Hp, oy = R - n * p.Hp;
    const int Pend = min(s * 256 + 256, (R + 1) * p.Ws);
    const int len = min(Pend - P, p.OW - ox);  // pixels of this run
    if (len > 0 && n < p.N && oy < p.OH) {
      const int lp = P - s * 256;
      if (p.nhwc) {
        if (t == 0 && g == 0) {
          float* dst = y + (((size_t)n * p.OH + oy) * p.OW + ox) * p.M;
          asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst),
                       "r"(sbuf + lp * 128), "r"(len * 128) : "memory");
        }
      } else {
        const int f = (g << 2) | t;  // lane = filter
        float* dst = y + (((size_t)n * p.M + fb * 32 + f) * p.OH + oy) * p.OW + ox;
        if (fb * 32 + f < p.M)
          asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst),
                       "r"(sbuf + (f * 260 + lp) * 4), "r"(len * 4) : "memory");
      }
    }
    P = Pend;
  }
  if (ltid == 0 || (!p.nhwc)) asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

template <int KH, int NWG, bool PIPE, bool NOMMA = false, bool WS = false, bool LEAN = false>
__global__ void __launch_bounds__(128 * NWG, NWG <= 2 ? 2 : 1) tz_kernel(const float* __restrict__ x,
                                                       const float* __restrict__ w,
                                                       float* __restrict__ y, TzParams p) {
  extern __shared__ __align__(128) float smem[];
  float* bhi = smem;                        // KH x 1024: [kh][k/4][n][k%4]
  float* blo = bhi + p.KH * 1024;
  float* ahi = blo + p.KH * 1024;           // NB x Ws band
  float* alo = ahi + p.NB * p.Ws;
  const int fb = blockIdx.y;
  const int s0 = blockIdx.x * p.SPT, s1 = min(s0 + p.SPT, p.S);
  const int Rb = (s0 * 256) / p.Ws;                      // tall row of band row 0
  const int nb = min(p.NB, (s1 * 256 + 8) / p.Ws - Rb + p.KH);
  const int tid = threadIdx.x;
  const TzStamps stamp(p, NWG, tid);
  stamp(0);
  constexpr int NT = 128 * NWG;
  float* wraw = alo + p.NB * p.Ws;          // this block's 32 filters, raw: [c][kh][kw]
  int bad = tz_stage<NT>(x, w, p, ahi, alo, wraw, fb, Rb, nb, tid);
  const int taps = p.KH * p.KW;
  __syncthreads();
  // filters: B_kh[k][n] for n = ph * 32 + c, 4 k per 16-byte chunk, from the raw copy
  for (int j = (p.mode & 2) ? p.KH * 256 : tid; j < p.KH * 256; j += NT) {
    const int kh = j >> 8, kq = (j >> 7) & 1, n = j & 127;
    const int ph = n >> 5;
    const float* wf = wraw + b_filter(n & 31) * taps + kh * p.KW;
    uint32_t h[4], l[4];
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const int tap = 4 * kq + kk - ph;
      const float v = (tap >= 0 && tap < p.KW) ? wf[tap] : 0.f;
      bad |= !(fabsf(v) <= 1e18f);
      split_tf32(v, h[kk], l[kk]);
    }
    const int o = kh * 1024 + kq * 512 + (n >> 3) * 32 + (n & 7) * 4;
    *reinterpret_cast<uint4*>(bhi + o) = make_uint4(h[0], h[1], h[2], h[3]);
    *reinterpret_cast<uint4*>(blo + o) = make_uint4(l[0], l[1], l[2], l[3]);
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  bad = __syncthreads_or(bad);
  stamp(1);
  const int wg = tid >> 7, wq = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, t = lane & 3;
  if (bad) return;  // non-finite or huge values: direct float32 sums (prototype: none)
  if constexpr (WS) {
    // Warp-specialized (NWG = 3, NHWC, 32-filter blocks whole): warpgroups 0 and 1 run the
    // wgmmas and park each segment's outputs in one of their two shared-memory slots
    // ([pixel][32 filters], 16-byte chunks XOR-swizzled by pixel % 8); warpgroup 2 only stores,
    // 512 contiguous bytes per warp instruction, so the store stream never waits for MMAs.
    // Named barriers: 1 + slot "full" (producer arrives, consumer waits), 5 + slot "empty"
    // (consumer arrives, producer waits), 9 the producers' staggered start.
    float* slots = wraw + 32 * taps;
    const int nseg = s1 - s0;
    if (wg < 2) {
      int j = 0;
      for (int k = wg; k < nseg; k += 2, ++j) {
        const int slot = wg * 2 + (j & 1);
        float* buf = slots + slot * 8192;
        if (j == 0 && wg == 1) asm volatile("bar.sync 9, 256;\n" ::: "memory");
        float d[64];
        tz_mma<KH>(d, ahi, alo, bhi, blo, (s0 + k) * 256 - Rb * p.Ws, p.Ws);
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        if (j == 0) stamp(2);
        if (j == 0 && wg == 0 && nseg > 1) asm volatile("bar.arrive 9, 256;\n" ::: "memory");
        if (j >= 2) asm volatile("bar.sync %0, 256;\n" ::"r"(5 + slot) : "memory");
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = 16 * wq + g + 8 * h;
#pragma unroll
          for (int q = 0; q < 2; ++q) {
            float v[4][4];
            tz_gather(d, h, q, v);
#pragma unroll
            for (int ph = 0; ph < 4; ++ph) {
              const int lp = 4 * r + ph, c = 4 * q + t;
              *reinterpret_cast<float4*>(buf + lp * 32 + ((c ^ (lp & 7)) << 2)) =
                  make_float4(v[ph][0], v[ph][1], v[ph][2], v[ph][3]);
            }
          }
        }
        asm volatile("bar.arrive %0, 256;\n" ::"r"(1 + slot) : "memory");
        if (j == 0) stamp(3);
      }
    } else {
      // consumers: warpgroup 2 (and 3) store the segments of producer 0 (and 1), or all of them
      ws_consume<NWG - 2>(slots, y, p, s0, nseg, fb, wg - 2, tid, stamp);
    }
    stamp(4);
    return;
  }
  if (!PIPE) {
    // mode 32: staggered start, warpgroup w issues its first segment only once w - 1's is done
    // (named barrier w: w - 1 arrives, w waits), so the first stores start one segment in
    const bool stagger = (p.mode & 32) && NWG > 1;
    const bool bulk = !LEAN && (p.mode & 64) && !(p.mode & 1) &&
                      (p.nhwc ? p.M == 32 : (p.OW & 3) == 0);
    float* stagebuf = wraw + 32 * p.KH * p.KW + wg * kStageFloats;
    int k = 0;
    for (int s = s0 + wg; s < s1; s += NWG, ++k) {
      float d[64];
      if (stagger && k == 0 && wg > 0) asm volatile("bar.sync %0, 256;\n" ::"r"(wg) : "memory");
      if (NOMMA) {  // timing: staging and stores only (the sums are the band's values)
#pragma unroll
        for (int i = 0; i < 64; ++i) d[i] = __int_as_float(0x3f800000 + s + i * 3 + tid);
      } else {
        tz_mma<KH>(d, ahi, alo, bhi, blo, s * 256 - Rb * p.Ws, p.Ws);
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
      }
      if (k == 0) stamp(2);
      if (stagger && k == 0 && wg + 1 < NWG) asm volatile("bar.arrive %0, 256;\n" ::"r"(wg + 1) : "memory");
      if (bulk) tz_store_bulk(d, y, p, s, fb, wq, g, t, stagebuf, wg, k > 0);
      else tz_store<LEAN>(d, y, p, s, fb, wq, g, t);
      if (k == 0) stamp(3);
    }
    stamp(4);
    if (bulk && wq == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
    if (stagger && k == 0) {  // no segment here: pass the turn on
      if (wg > 0) asm volatile("bar.sync %0, 256;\n" ::"r"(wg) : "memory");
      if (wg + 1 < NWG) asm volatile("bar.arrive %0, 256;\n" ::"r"(wg + 1) : "memory");
    }
  } else {  // two accumulator sets: a segment's stores under the next one's wgmmas
    // Every warpgroup runs the same trip count (from the parameters only) and every trip issues
    // the next segment's wgmmas (past the end: s1 - 1 again, stored nowhere), so no wait_group
    // sits on a branch (that made ptxas serialize every wgmma: C7518). ptxas still serializes
    // them (C7514: accumulator reads inside a pipeline stage), so this variant's timings are of
    // serialized wgmmas (round 26).
    const int kmax = (p.SPT + NWG - 1) / NWG;
    float da[64], db[64];
    auto seg = [&](int k) { return min(s0 + wg + k * NWG, s1 - 1); };
    auto valid = [&](int k) { return k < kmax && s0 + wg + k * NWG < s1; };
    tz_mma<KH>(da, ahi, alo, bhi, blo, seg(0) * 256 - Rb * p.Ws, p.Ws);
    for (int k = 0; k < kmax; k += 2) {
      tz_mma<KH>(db, ahi, alo, bhi, blo, seg(k + 1) * 256 - Rb * p.Ws, p.Ws);
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      if (valid(k)) tz_store(da, y, p, seg(k), fb, wq, g, t);
      tz_mma<KH>(da, ahi, alo, bhi, blo, seg(k + 2) * 256 - Rb * p.Ws, p.Ws);
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      if (valid(k + 1)) tz_store(db, y, p, seg(k + 1), fb, wq, g, t);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  }
}

// ---- The transposed product (TZ_RS): D^T = B^T A^T, the weights as wgmma's register operand ----
// Rows of D are (filter, phase) pairs, columns the segment's 64 groups r of 4 pixels; the band is
// the descriptor operand with the same Toeplitz view as above (B[k][r] = band[4 r + k + kh Ws]:
// K-major, core matrices 8 r x 16 bytes, LBO 16, SBO 128). Each warpgroup keeps its 32 filters'
// A fragments for every kh, split hi / lo, in registers (loaded once per CTA), so a product reads
// only the band from shared memory: 2 KB per m64n64k8 against 6 KB per m64n128k8 of the same
// work above (round 25's question: do the operand reads slow the stores?).
// Two m-tiles (i = 0, 1) of 64 rows; lane (wq, g, t) holds rows 16 wq + g + 8 h of each, mapped
//   NHWC: filter 4 g + 2 i + h, phase wq  (a lane's 4 values of a column: 4 filters of a pixel),
//   NCHW: filter 8 wq + g, phase 2 i + h  (a lane's 4 values of a column: 4 pixels of a filter).
__device__ __forceinline__ void rs_row(const TzParams& p, int i, int h, int wq, int g, int& c, int& ph) {
  if (p.nhwc) { c = 4 * g + 2 * i + h; ph = wq; }
  else { c = 8 * wq + g; ph = 2 * i + h; }
}


// This lane's A fragments for every kh, split hi / lo: a[0..3] = rows (g, k t), (g + 8, k t),
// (g, k t + 4), (g + 8, k t + 4) of m-tile i (rows mapped by rs_row). Returns nonzero where a
// weight is non-finite or huge.
template <int KH>
__device__ __forceinline__ int rs_load_weights(const TzParams& p, const float* wraw, int wq, int g, int t,
                                               uint32_t (&whi)[2][KH][4], uint32_t (&wlo)[2][KH][4]) {
  int bad = 0;
  const int taps = p.KH * p.KW;
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int kh = 0; kh < KH; ++kh)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        int c, ph;
        rs_row(p, i, q & 1, wq, g, c, ph);
        const int tap = t + 4 * (q >> 1) - ph;
        const float v = (tap >= 0 && tap < p.KW) ? wraw[c * taps + kh * p.KW + tap] : 0.f;
        bad |= !(fabsf(v) <= 1e18f);
        split_tf32(v, whi[i][kh][q], wlo[i][kh][q]);
      }
  return bad;
}

// One segment's products (band offset ao) into d0, d1: 3xTF32, 6 KH wgmmas (commit, then wait).
template <int KH>
__device__ __forceinline__ void rs_mma(float (&d0)[32], float (&d1)[32], const uint32_t (&whi)[2][KH][4],
                                       const uint32_t (&wlo)[2][KH][4], const float* ahi, const float* alo,
                                       int ao, int Ws) {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
  for (int kh = 0; kh < KH; ++kh) {
    const uint64_t bh = desc(ahi + ao + kh * Ws, 16, 128), bl = desc(alo + ao + kh * Ws, 16, 128);
    wgmma_rs_m64n64k8(d0, wlo[0][kh], bh, kh);
    wgmma_rs_m64n64k8(d1, wlo[1][kh], bh, kh);
    wgmma_rs_m64n64k8(d0, whi[0][kh], bl, 1);
    wgmma_rs_m64n64k8(d1, whi[1][kh], bl, 1);
    wgmma_rs_m64n64k8(d0, whi[0][kh], bh, 1);
    wgmma_rs_m64n64k8(d1, whi[1][kh], bh, 1);
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// rs_store's helpers. Output of tall row R for filter f (column 0), or null where R is no
// output row.
__device__ __forceinline__ float* rs_row_base(const TzParams& p, float* y, int R, int f) {
  const int n = R / p.Hp, oy = R - n * p.Hp;
  if (n >= p.N || oy >= p.OH || f >= p.M) return nullptr;
  return p.nhwc ? y + ((size_t)n * p.OH + oy) * p.OW * p.M + f : y + (((size_t)n * p.M + f) * p.OH + oy) * p.OW;
}

// Any column (rows narrower than 256 pixels, a partial filter group or row): out of line, so that
// the unrolled loop stays small.
__device__ __noinline__ void rs_store_slow(const TzParams& p, float* y, int R0, int c, int f, int wq, float4 v) {
  const int dr = c / p.Ws;
  c -= dr * p.Ws;
  float* b = rs_row_base(p, y, R0 + dr, f);
  const int ox = p.nhwc ? c + wq : c;
  if (!b || ox >= p.OW) return;
  const float vv[4] = {v.x, v.y, v.z, v.w};
  if (p.nhwc) {
    float* o = b + (size_t)ox * p.M;
    for (int i = 0; i < 4; ++i)
      if (f + i < p.M) o[i] = vv[i];
  } else {
    float* o = b + ox;
    for (int ph = 0; ph < 4; ++ph)
      if (ox + ph < p.OW) o[ph] = vv[ph];
  }
}

// Segment s's outputs: column r = 8 j + 2 t + e of the accumulators is pixel group 4 r of the
// segment; v = (d0[4j+e], d0[4j+2+e], d1[4j+e], d1[4j+2+e]) are rows (i, h) = 00, 01, 10, 11.
__device__ __forceinline__ void rs_store(const float (&d0)[32], const float (&d1)[32],
                                         float* __restrict__ y, const TzParams& p, int s, int fb,
                                         int wq, int g, int t) {
  if (p.mode & 1) {  // timing: keep the sums live, store nothing
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < 32; ++i) acc += d0[i] + d1[i];
    if (acc == 1234.5f) y[0] = acc;
    return;
  }
  // the segment's first pixel, decoded once; a column's row is then at most a few rows on.
  // The unrolled column loop holds only the common path (rows of >= 256 pixels, whole float4s):
  // with every case inline the kernel's code outgrew the instruction cache (ncu, round 26: 6.6
  // cycles of "no instruction" stall per issued instruction against 0.4 in the single-set kernel).
  const int P0 = s * 256, R0 = P0 / p.Ws, c0 = P0 - R0 * p.Ws;
  const int f = p.nhwc ? fb * 32 + 4 * g : fb * 32 + 8 * wq + g;  // NHWC: first of 4 filters
  const bool full = p.nhwc ? (p.M & 3) == 0 && f + 3 < p.M : (p.OW & 3) == 0;  // one float4
  const bool wide = p.Ws >= 256;  // a segment crosses at most one row end
  float* base0 = rs_row_base(p, y, R0, f);
  float* base1 = rs_row_base(p, y, R0 + 1, f);
  const size_t step = p.nhwc ? p.M : 1;  // floats from one column's output to the next pixel's
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float4 v = make_float4(d0[4 * j + e], d0[4 * j + 2 + e], d1[4 * j + e], d1[4 * j + 2 + e]);
      const int c = c0 + 4 * (8 * j + 2 * t + e);  // the column's first pixel in its tall row
      if (!(wide && full)) {
        rs_store_slow(p, y, R0, c, f, wq, v);
        continue;
      }
      const bool next = c >= p.Ws;
      const int cc = next ? c - p.Ws : c, ox = p.nhwc ? cc + wq : cc;
      float* bb = next ? base1 : base0;
      if (bb && ox < p.OW) __stcs(reinterpret_cast<float4*>(bb + ox * step), v);
    }
  }
}

// KH = p.KH (a template parameter: see tz_mma); MINB: CTAs per SM the registers must allow.
template <int KH, int NWG, int MINB>
__global__ void __launch_bounds__(128 * NWG, MINB) tz_rs_kernel(const float* __restrict__ x,
                                                               const float* __restrict__ w,
                                                               float* __restrict__ y, TzParams p) {
  extern __shared__ __align__(128) float smem[];
  const int tid = threadIdx.x;
  const TzStamps stamp(p, NWG, tid);
  stamp(0);
  TzTile c;  // band and raw filters from smem[0]
  int bad = tz_begin<128 * NWG>(x, w, p, smem, tid, c);
  const float *ahi = c.ahi, *alo = c.alo, *wraw = c.wraw;
  const int fb = c.fb, s0 = c.s0, s1 = c.s1, Rb = c.Rb;
  const int wg = tid >> 7, wq = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, t = lane & 3;
  uint32_t whi[2][KH][4], wlo[2][KH][4];
  bad |= rs_load_weights<KH>(p, wraw, wq, g, t, whi, wlo);
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  bad = __syncthreads_or(bad);
  stamp(1);
  if (bad) return;  // non-finite or huge values: direct float32 sums (prototype: none)
  const bool stagger = (p.mode & 32) && NWG > 1;
  int k = 0;
  for (int s = s0 + wg; s < s1; s += NWG, ++k) {
    if (stagger && k == 0 && wg > 0) asm volatile("bar.sync %0, 256;\n" ::"r"(wg) : "memory");
    float d0[32], d1[32];
    const int ao = s * 256 - Rb * p.Ws;
    if (p.mode & 128) {  // timing: staging and stores only (the sums are made-up values)
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        d0[i] = __int_as_float(0x3f800000 + s + i * 3 + tid);
        d1[i] = __int_as_float(0x3f900000 + s + i * 5 + tid);
      }
      if (k == 0) stamp(2);
      if (stagger && k == 0 && wg + 1 < NWG) asm volatile("bar.arrive %0, 256;\n" ::"r"(wg + 1) : "memory");
      rs_store(d0, d1, y, p, s, fb, wq, g, t);
      if (k == 0) stamp(3);
      continue;
    }
    rs_mma<KH>(d0, d1, whi, wlo, ahi, alo, ao, p.Ws);
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    if (k == 0) stamp(2);
    if (stagger && k == 0 && wg + 1 < NWG) asm volatile("bar.arrive %0, 256;\n" ::"r"(wg + 1) : "memory");
    rs_store(d0, d1, y, p, s, fb, wq, g, t);
    if (k == 0) stamp(3);
  }
  stamp(4);
  if (stagger && k == 0) {  // no segment here: pass the turn on
    if (wg > 0) asm volatile("bar.sync %0, 256;\n" ::"r"(wg) : "memory");
    if (wg + 1 < NWG) asm volatile("bar.arrive %0, 256;\n" ::"r"(wg + 1) : "memory");
  }
}

// ---- Warp-specialized with the transposed product (launch codes 53, 54) ----
// Round 26's probe: an SM's streaming stores keep their rate beside wgmmas whose A operand is in
// registers, and beside ld.shared reads of a hand-off ring. So: warpgroups 0 and 1 (producers,
// registers raised by setmaxnreg) run the transposed product (weights in registers) and park
// each segment's outputs in one of their two slots, as round 25's warp-specialized kernel did;
// NC store warpgroups (registers lowered) write them out (ws_consume). NHWC, M % 32 == 0.
template <int KH, int NC>
__global__ void __launch_bounds__(128 * (2 + NC), 1) tz_ws_rs_kernel(const float* __restrict__ x,
                                                                   const float* __restrict__ w,
                                                                   float* __restrict__ y, TzParams p) {
  constexpr int NWG = 2 + NC;
  // registers per thread: producers and consumers together fill the 64 K register file
  constexpr int kProdRegs = NC == 1 ? 232 : 216, kConsRegs = 40;
  extern __shared__ __align__(128) float smem[];
  const int tid = threadIdx.x;
  const TzStamps stamp(p, NWG, tid);
  stamp(0);
  TzTile c;  // band and raw filters from smem[0], then 4 slots of [256 pixels][32 filters]
  int bad = tz_begin<128 * NWG>(x, w, p, smem, tid, c);
  const float *ahi = c.ahi, *alo = c.alo, *wraw = c.wraw;
  float* slots = c.wraw + 32 * p.KH * p.KW;
  const int fb = c.fb, s0 = c.s0, nseg = c.s1 - c.s0, Rb = c.Rb;
  for (int i = tid; i < 32 * p.KH * p.KW; i += 128 * NWG) bad |= !(fabsf(wraw[i]) <= 1e18f);
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  bad = __syncthreads_or(bad);
  stamp(1);
  if (bad) return;  // non-finite or huge values: direct float32 sums (prototype: none)
  const int wg = tid >> 7, wq = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, t = lane & 3;
  if (wg < 2) {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kProdRegs));
    uint32_t whi[2][KH][4], wlo[2][KH][4];
    rs_load_weights<KH>(p, wraw, wq, g, t, whi, wlo);
    int j = 0;
    for (int k = wg; k < nseg; k += 2, ++j) {
      const int slot = wg * 2 + (j & 1);
      float* buf = slots + slot * 8192;
      if (j == 0 && wg == 1) asm volatile("bar.sync 9, 256;\n" ::: "memory");  // staggered start
      float d0[32], d1[32];
      rs_mma<KH>(d0, d1, whi, wlo, ahi, alo, (s0 + k) * 256 - Rb * p.Ws, p.Ws);
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
      if (j == 0) stamp(2);
      if (j == 0 && wg == 0 && nseg > 1) asm volatile("bar.arrive 9, 256;\n" ::: "memory");
      if (j >= 2) asm volatile("bar.sync %0, 256;\n" ::"r"(5 + slot) : "memory");  // slot free
      // column r = 8 jj + 2 t + e is pixel 4 r + wq; lane g holds its filters 4 g .. 4 g + 3
#pragma unroll
      for (int jj = 0; jj < 8; ++jj)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int lp = 4 * (8 * jj + 2 * t + e) + wq;
          *reinterpret_cast<float4*>(buf + lp * 32 + ((g ^ (lp & 7)) << 2)) =
              make_float4(d0[4 * jj + e], d0[4 * jj + 2 + e], d1[4 * jj + e], d1[4 * jj + 2 + e]);
        }
      asm volatile("bar.arrive %0, 256;\n" ::"r"(1 + slot) : "memory");  // slot full
      if (j == 0) stamp(3);
    }
  } else {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kConsRegs));
    ws_consume<NC>(slots, y, p, s0, nseg, fb, wg - 2, tid, stamp);
  }
  stamp(4);
}

static TzParams make_params(int N, int H, int W, int M, int KH, int KW, int pt, int pb, int pl,
                            int pr, int nhwc, int SPT) {
  TzParams p{};
  p.N = N; p.H = H; p.W = W; p.M = M; p.KH = KH; p.KW = KW; p.pt = pt; p.pl = pl;
  p.OH = H + pt + pb - KH + 1;
  p.OW = W + pl + pr - KW + 1;
  p.nhwc = nhwc;
  p.Hp = H + pt + pb;
  p.Ws = (p.OW + KW - 1 + 3) / 4 * 4;
  p.hp_div = p.Hp;
  p.ws_div = p.Ws;
  const long long flat = (long long)(N * p.Hp - KH + 1) * p.Ws;  // through the last valid row
  p.S = int((flat + 255) / 256);
  p.SPT = SPT;
  p.NB = (SPT * 256 + 8 + p.Ws - 1) / p.Ws + KH + 1;
  p.nfb = (M + 31) / 32;
  return p;
}

// nwg: the launch code of run() (1-4 warpgroups; 11-13 two accumulator sets; 22-23 no MMAs;
// 33-34 warp-specialized; 41-46 the transposed product: 41-44 1-4 warpgroups, 45 one warpgroup
// with 2 CTAs per SM, 46 two warpgroups with 1; 53-54 warp-specialized with the transposed
// product, 1 or 2 store warpgroups; 62-63 as 2-3 with the LEAN store path)
static bool is_ws(int nwg) { return nwg == 33 || nwg == 34 || nwg == 53 || nwg == 54; }
static bool is_rs(int nwg) { return nwg / 10 == 4; }
static int wg_count(int nwg) { return nwg == 45 ? 1 : nwg == 46 ? 2 : nwg == 53 ? 3 : nwg == 54 ? 4 : nwg % 10; }
// launch codes 62 / 63 (LEAN stores) cover whole 32-filter blocks with float4 rows only
static bool lean_ok(int nwg, int M, int OW, int nhwc) { return nwg / 10 != 6 || (M % 32 == 0 && (nhwc || OW % 4 == 0)); }

static size_t smem_bytes(const TzParams& p, int nwg) {
  const size_t band = size_t(p.NB) * p.Ws * 2 + 32 * p.KH * p.KW;
  if (is_rs(nwg)) return band * sizeof(float);
  if (nwg / 10 == 5) return (band + 4 * 8192) * sizeof(float);
  return (size_t(p.KH) * 2048 + band + ((p.mode & 64) ? size_t(wg_count(nwg)) * kStageFloats : 0) +
          (is_ws(nwg) ? 4 * 8192 : 0)) *
         sizeof(float);
}

template <typename K>
static void launch_kernel(K kernel, int threads, size_t sm, const TzParams& p, const float* x,
                          const float* w, float* y, cudaStream_t s) {
  static std::set<const void*> set;  // the kernels whose shared-memory limit is raised
  if (set.insert(reinterpret_cast<const void*>(kernel)).second)
    CKX(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  kernel<<<dim3((p.S + p.SPT - 1) / p.SPT, p.nfb), threads, sm, s>>>(x, w, y, p);
}

// f(std::integral_constant<int, KH>) for the kernel heights instantiated (2, 3, 5)
template <typename F>
static void with_kh(int KH, F f) {
  switch (KH) {
    case 2: f(std::integral_constant<int, 2>()); break;
    case 3: f(std::integral_constant<int, 3>()); break;
    case 5: f(std::integral_constant<int, 5>()); break;
    default: fprintf(stderr, "KH = %d not instantiated\n", KH); exit(2);
  }
}

template <int NWG, bool PIPE, bool NOMMA = false, bool WS = false, bool LEAN = false>
static void launch(const TzParams& p, const float* x, const float* w, float* y, cudaStream_t s) {
  with_kh(p.KH, [&](auto kh) {
    launch_kernel(tz_kernel<decltype(kh)::value, NWG, PIPE, NOMMA, WS, LEAN>, 128 * NWG,
                  smem_bytes(p, WS ? 30 + NWG : NWG), p, x, w, y, s);
  });
}

template <int NC>
static void launch_ws_rs(const TzParams& p, const float* x, const float* w, float* y, cudaStream_t s) {
  with_kh(p.KH, [&](auto kh) {
    launch_kernel(tz_ws_rs_kernel<decltype(kh)::value, NC>, 128 * (2 + NC), smem_bytes(p, 52 + NC), p, x, w, y, s);
  });
}

template <int NWG, int MINB>
static void launch_rs(const TzParams& p, const float* x, const float* w, float* y, cudaStream_t s) {
  with_kh(p.KH, [&](auto kh) {
    launch_kernel(tz_rs_kernel<decltype(kh)::value, NWG, MINB>, 128 * NWG, smem_bytes(p, 40 + NWG), p, x, w, y, s);
  });
}

static void run(int nwg, const TzParams& p, const float* x, const float* w, float* y, cudaStream_t s) {
  switch (nwg) {
    case 1: launch<1, false>(p, x, w, y, s); break;
    case 2: launch<2, false>(p, x, w, y, s); break;
    case 3: launch<3, false>(p, x, w, y, s); break;
    case 4: launch<4, false>(p, x, w, y, s); break;
    case 11: launch<1, true>(p, x, w, y, s); break;
    case 12: launch<2, true>(p, x, w, y, s); break;
    case 22: launch<2, false, true>(p, x, w, y, s); break;
    case 23: launch<3, false, true>(p, x, w, y, s); break;
    case 33: launch<3, false, false, true>(p, x, w, y, s); break;
    case 34: launch<4, false, false, true>(p, x, w, y, s); break;
    case 41: launch_rs<1, 3>(p, x, w, y, s); break;
    case 42: launch_rs<2, 2>(p, x, w, y, s); break;
    case 43: launch_rs<3, 1>(p, x, w, y, s); break;
    case 44: launch_rs<4, 1>(p, x, w, y, s); break;
    case 45: launch_rs<1, 2>(p, x, w, y, s); break;
    case 46: launch_rs<2, 1>(p, x, w, y, s); break;
    case 62: launch<2, false, false, false, true>(p, x, w, y, s); break;
    case 63: launch<3, false, false, false, true>(p, x, w, y, s); break;
    case 53: launch_ws_rs<1>(p, x, w, y, s); break;
    case 54: launch_ws_rs<2>(p, x, w, y, s); break;
    default: launch<3, true>(p, x, w, y, s); break;
  }
}

struct Case { const char* name; int N, H, W, M, K, pad, nhwc; };

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--check";
  std::vector<Case> cases = {
      {"b1 512^2 M32 K5", 1, 512, 512, 32, 5, 0, 1}, {"b1 512^2 M32 K5", 1, 512, 512, 32, 5, 0, 0},
      {"b1 512^2 M32 K3", 1, 512, 512, 32, 3, 0, 1}, {"b1 512^2 M32 K3", 1, 512, 512, 32, 3, 0, 0},
      {"b32 28^2 M512 K5", 32, 28, 28, 512, 5, 0, 1}, {"b32 28^2 M512 K5", 32, 28, 28, 512, 5, 0, 0},
      {"b32 28^2 M512 K3", 32, 28, 28, 512, 3, 0, 1}, {"b32 28^2 M512 K3", 32, 28, 28, 512, 3, 0, 0},
      {"b32 56^2 M256 K5", 32, 56, 56, 256, 5, 0, 1}, {"b32 56^2 M256 K5", 32, 56, 56, 256, 5, 0, 0},
      {"b1 1024^2 M32 K5", 1, 1024, 1024, 32, 5, 0, 1}, {"b1 1024^2 M32 K5", 1, 1024, 1024, 32, 5, 0, 0},
      {"b32 112^2 M128 K5", 32, 112, 112, 128, 5, 0, 1},
      // correctness only: odd sizes, padding, non-square kernels, M not a multiple of 32
      {"chk b3 37x29 M20 K3x5 pad", 3, 37, 29, 20, 35, 2, 1}, {"chk b3 37x29 M20 K3x5 pad", 3, 37, 29, 20, 35, 2, 0},
      {"chk b2 61x50 M40 K5 pad", 2, 61, 50, 40, 5, 1, 1}, {"chk b2 61x50 M40 K5 pad", 2, 61, 50, 40, 5, 1, 0},
      {"chk b5 9x13 M7 K2x4", 5, 9, 13, 7, 24, 0, 1}, {"chk b5 9x13 M7 K2x4", 5, 9, 13, 7, 24, 0, 0},
  };
  std::mt19937 rng(1234);
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  const size_t rot_bytes = size_t(400) << 20;
  float* ybig;
  CK(cudaMalloc(&ybig, rot_bytes));
  for (const Case& c : cases) {
    if (getenv("TZ_CASES") && !strstr(getenv("TZ_CASES"), c.name)) continue;
    int KH = c.K, KW = c.K;
    if (c.K >= 10) { KH = c.K / 10; KW = c.K % 10; }
    const int pad = c.pad;
    const int OH = c.H + 2 * pad - KH + 1, OW = c.W + 2 * pad - KW + 1;
    const size_t nx = size_t(c.N) * c.H * c.W, nw = size_t(c.M) * KH * KW;
    const size_t ny = size_t(c.N) * c.M * OH * OW;
    std::vector<float> hx(nx), hw(nw);
    std::uniform_real_distribution<float> U(-1.f, 1.f);
    for (auto& v : hx) v = U(rng);
    for (auto& v : hw) v = U(rng);
    float *dx, *dw;
    CK(cudaMalloc(&dx, nx * 4));
    CK(cudaMalloc(&dw, nw * 4));
    CK(cudaMemcpy(dx, hx.data(), nx * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw, hw.data(), nw * 4, cudaMemcpyHostToDevice));
    const int nrot = std::max<int>(1, int(rot_bytes / (ny * 4)));
    const bool timed = std::string(c.name).rfind("chk", 0) != 0 && !quick;
    const double floor_bytes = (nx + nw + ny) * 4.0;
    const TzParams p1 = make_params(c.N, c.H, c.W, c.M, KH, KW, pad, pad, pad, pad, c.nhwc, 1);
    std::vector<int> spts = {1, 2, 4, 8};
    for (int per_sm : {1, 2, 3, 4}) {  // a grid of per_sm x 132 CTAs (x nfb)
      const int v = (p1.S * p1.nfb + per_sm * 132 - 1) / (per_sm * 132);
      if (std::find(spts.begin(), spts.end(), v) == spts.end()) spts.push_back(v);
    }
    for (int SPT : spts) {
      std::vector<int> nwgs = getenv("TZ_NOMMA") ? std::vector<int>{22, 23}
                              : getenv("TZ_WS")  ? std::vector<int>{2, 33, 34}
                                                 : std::vector<int>{2, 3, 4, 12, 13};
      if (getenv("TZ_NWG")) {  // "2,41,43": these launch codes (see run)
        nwgs.clear();
        for (const char* q = getenv("TZ_NWG"); *q;) {
          nwgs.push_back(atoi(q));
          while (*q && *q != ',') ++q;
          if (*q) ++q;
        }
      }
      for (int nwg : nwgs) {
        TzParams p = make_params(c.N, c.H, c.W, c.M, KH, KW, pad, pad, pad, pad, c.nhwc, SPT);
        p.mode = getenv("TZ_MODE") ? atoi(getenv("TZ_MODE")) : 0;
        if (wg_count(nwg) > SPT) continue;
        if (getenv("TZ_ONLY")) {  // "SPT,NWG": this configuration only (for a profiler)
          int a = 0, b = 0;
          if (sscanf(getenv("TZ_ONLY"), "%d,%d", &a, &b) == 2 && (a != SPT || b != nwg)) continue;
        }
        if (is_ws(nwg) && (!c.nhwc || c.M % 32)) continue;
        if (!lean_ok(nwg, c.M, OW, c.nhwc)) continue;
        if (smem_bytes(p, nwg) > 227 * 1024) continue;
        // correctness: poison, run, sample
        CK(cudaMemset(ybig, 0xff, ny * 4));  // NaN poison
        run(nwg, p, dx, dw, ybig, s);
        CK(cudaStreamSynchronize(s));
        CK(cudaGetLastError());
        std::vector<float> hy(ny);
        CK(cudaMemcpy(hy.data(), ybig, ny * 4, cudaMemcpyDeviceToHost));
        size_t nan = 0;
        for (float v : hy) nan += std::isnan(v);
        double maxerr = 0, maxref = 0;
        const int samples = 4000;
        for (int sidx = 0; sidx < samples; ++sidx) {
          const size_t i = (size_t(rng()) * 2654435761ull + rng()) % ny;
          size_t r = i;
          int n, m, oy, ox;
          if (c.nhwc) { m = r % c.M; r /= c.M; ox = r % OW; r /= OW; oy = r % OH; n = int(r / OH); }
          else { ox = r % OW; r /= OW; oy = r % OH; r /= OH; m = r % c.M; n = int(r / c.M); }
          double ref = 0;
          for (int kh = 0; kh < KH; ++kh)
            for (int kw = 0; kw < KW; ++kw) {
              const int yy = oy + kh - pad, xx = ox + kw - pad;
              if (yy < 0 || yy >= c.H || xx < 0 || xx >= c.W) continue;
              ref += double(hx[(size_t(n) * c.H + yy) * c.W + xx]) * hw[(size_t(m) * KH + kh) * KW + kw];
            }
          maxerr = std::max(maxerr, std::fabs(ref - hy[i]));
          maxref = std::max(maxref, std::fabs(ref));
        }
        double med = -1;
        if (timed) {
          // a CUDA graph of 20 launches over rotating outputs (as the package's launches run
          // under XLA's command buffers), replayed 7 times: median per launch (probe_timing.cuh)
          float us = 0.f;
          if (time_graph(s, 20, 7, [&](int it) { run(nwg, p, dx, dw, ybig + size_t(it % nrot) * ny, s); },
                         &us))
            exit(2);
          med = us;
        }
        std::string tls;
        if (timed && getenv("TZ_TIMELINE") && (nwg < 10 || nwg > 30)) {  // one more launch with stamps
          const int ncta = (p.S + SPT - 1) / SPT * p.nfb;
          const size_t nst = size_t(ncta) * wg_count(nwg) * kTlSlots;
          unsigned long long* dtl;
          CK(cudaMalloc(&dtl, nst * 8));
          CK(cudaMemset(dtl, 0, nst * 8));
          TzParams pt = p;
          pt.tl = dtl;
          run(nwg, p, dx, dw, ybig, s);  // the launch before, as in the graph
          run(nwg, pt, dx, dw, ybig + (nrot > 1 ? ny : 0), s);
          CK(cudaStreamSynchronize(s));
          std::vector<unsigned long long> h(nst);
          CK(cudaMemcpy(h.data(), dtl, nst * 8, cudaMemcpyDeviceToHost));
          CK(cudaFree(dtl));
          unsigned long long t0 = ~0ull, tend = 0;
          for (size_t i = 0; i < nst; i += kTlSlots) { t0 = std::min(t0, h[i]); tend = std::max(tend, h[i + 4]); }
          char buf[256];
          std::string part;
          for (int st = 0; st < 5; ++st) {  // median and max over warpgroups of each stamp
            std::vector<double> v;
            for (size_t i = st; i < nst; i += kTlSlots) if (h[i]) v.push_back((h[i] - t0) * 1e-3);
            std::sort(v.begin(), v.end());
            if (v.empty()) continue;
            snprintf(buf, sizeof buf, " t%d %.2f/%.2f", st, v[v.size() / 2], v.back());
            part += buf;
          }
          std::vector<double> mhz;  // SM clock per warpgroup: clocks over ns between stamps 0 and 4
          for (size_t i = 0; i < nst; i += kTlSlots)
            if (h[i + 4] > h[i]) mhz.push_back(1e3 * double(h[i + 6] - h[i + 5]) / double(h[i + 4] - h[i]));
          std::sort(mhz.begin(), mhz.end());
          if (!mhz.empty()) {
            snprintf(buf, sizeof buf, " clock %.0f MHz (min %.0f)", mhz[mhz.size() / 2], mhz.front());
            part += buf;
          }
          tls = " | timeline (us, median/max over warpgroups: entry, setup done, 1st MMA done, 1st stores issued, last stores issued):" + part;
        }
        printf("%-28s %s SPT %3d WG %d CTAs %6d x %2d smem %6zu | nan %zu rel %.2e | %8.2f us  %5.1f%% of 4.25 TB/s%s\n",
               c.name, c.nhwc ? "NHWC" : "NCHW", SPT, nwg, (p.S + SPT - 1) / SPT, p.nfb, smem_bytes(p, nwg),
               nan, maxerr / maxref, med, med > 0 ? floor_bytes / 4.25e6 / med * 100 : 0.0, tls.c_str());
        fflush(stdout);
      }
    }
    CK(cudaFree(dx));
    CK(cudaFree(dw));
  }
  return 0;
}
