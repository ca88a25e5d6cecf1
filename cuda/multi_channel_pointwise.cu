// Multi-channel 1x1 convolution with few channels (C = 32 or 64), streamed: plan[7] & 16.
//
// Why a kernel of its own: a 1x1 layer is a GEMM whose reduction (C) is short, so the general
// multi-channel kernel (multi_channel.cu) spends most of each output tile on the prologue and
// epilogue of a 4-step reduction (b32 112x112x64: 168 registers, 3 blocks per SM, issue slots
// 48% busy, 64-67% of the GEMM ceiling, notes).  Here the roles of the stride-fixed block
// (paper sec 3.2) are kept but the reduction is whole: one stage is one output tile's input,
// W'x = 128 pixels x all C channels (S = C), and the block holds its M' = 64 filters for the
// whole launch, split once into 3xTF32 halves (mma_3xtf32.cuh) in fragment order.  The grid is
// persistent (one wave, 2 blocks per SM): each block walks its pixel tiles with ONE cp.async
// ring across tiles (the paper's double buffering), so tile i+1's input loads while tile i
// computes, and tile i's outputs leave straight from the MMA fragments (whole 32-byte
// sectors).  No per-tile prologue, epilogue or block launch; ncu (b32 112x112x64 NHWC): DRAM
// 53% busy, issue limited by register dependencies at 2 warps per scheduler (shared memory
// bounds the blocks; splitting the filters at each use instead, or 3 stages, measured slower).
//
// Layouts: channels-last in and out (NHWC/NHWC: X is a [P][C] matrix, Y = X W) or channels-
// first in and out (NCHW/NCHW: per image X is [C][HW], Y = W^T X); filters any strides (read
// once per block).  Conditions (mc_pointwise_supported): 1x1, stride 1, no padding, C = 32 or
// 64 (compile-time: the k loop unrolled), M % 8 == 0, dense layouts, 16-byte aligned buffers,
// HW % 4 == 0 for NCHW; the planner asks for it where the layer has >= 65536 output pixels.
// Non-finite values: a lane whose accumulators are not all finite recomputes its outputs with
// FFMAs in channel order (float32 semantics), as the general kernel does.
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "cp_async.cuh"
#include "kernels.h"
#include "launch_util.h"
#include "mma_3xtf32.cuh"

namespace fastconv {
namespace pw {

constexpr int kMB = 64;   // M': filters per tile (the block's filters, fixed for the launch)

struct Args {
  const float* __restrict__ x;
  const float* __restrict__ w;
  float* __restrict__ y;
  int C, M, HW;           // HW: pixels per image (channels-first tiles stay in one image)
  long long P;            // N * HW
  long long w_so, w_si;   // filter strides (m, c)
  int m_tiles;            // ceil(M / 64); block b keeps filter tile b % m_tiles
  int tiles_per_img;      // channels-first: ceil(HW / W'x)
  long long pix_tiles;    // channels-last: ceil(P / W'x); channels-first: N * tiles_per_img
};

// Stage rows.  Channels-last [W'x pixels][pitch], pitch = C rounded up to 32, + 8 (8 mod 32):
// the LDS.64 of two channels of 8 pixel rows by 4 lanes each hit 32 distinct banks.
// Channels-first [C][W'x + 4] (4 mod 32): the B reads of channels 2t, 2t + 1 by 8 pixels do.
__host__ __device__ constexpr int stage_pitch(bool cl, int C, int BP) {
  return cl ? ((C + 31) / 32) * 32 + 8 : BP + 4;
}
__host__ __device__ constexpr int stage_floats(bool cl, int C, int BP) {
  return (cl ? BP : C) * stage_pitch(cl, C, BP);
}

// The block's 64 filters in fragment order, split into TF32 hi/lo (C * 128 floats).
//   CL (Y = X W, B operand = W, k x n = channel x filter): per (k-step s, n-tile j), lane (g, t)
//      holds float4 {hi(W[c][m]), hi(W[c+1][m]), lo(.), lo(.)}, c = 8s + 2t, m = 8j + g: the
//      k index t is channel 2t and t + 4 is channel 2t + 1 (any k order works as long as A and
//      B agree; this one makes the A pair of one pixel row a single LDS.64).
//   CF (Y^T = W^T X, A operand = W^T, m x k = filter x channel): per (k-step s, m16-tile i)
//      two float4 per lane: hi {a0, a1, a2, a3}, lo {...}, a0 = (m, c), a1 = (m + 8, c),
//      a2 = (m, c + 1), a3 = (m + 8, c + 1), m = 16i + g, c = 8s + 2t.
template <bool CL>
__device__ void fill_filters(const Args& a, int m0, float4* wf) {
  const int n = (a.C / 8) * 8 * 32;  // float4 groups (CL); CF has the same count of pairs
  for (int e = threadIdx.x; e < n; e += blockDim.x) {
    const int lane = e & 31, g = lane >> 2, t = lane & 3;
    const int blk = e >> 5;  // CL: s * 8 + j; CF: s * 4 + i (x2 float4)
    auto W = [&](int m, int c) -> float {
      return m < a.M ? __ldg(a.w + m * a.w_so + c * a.w_si) : 0.f;
    };
    if (CL) {
      const int s = blk >> 3, j = blk & 7;
      const int c = 8 * s + 2 * t, m = m0 + 8 * j + g;
      uint32_t h0, l0, h1, l1;
      split_tf32(W(m, c), h0, l0);
      split_tf32(W(m, c + 1), h1, l1);
      wf[e] = make_float4(__uint_as_float(h0), __uint_as_float(h1), __uint_as_float(l0),
                          __uint_as_float(l1));
    } else {
      if (blk >= (a.C / 8) * 4) continue;
      const int s = blk >> 2, i = blk & 3;
      const int c = 8 * s + 2 * t, m = m0 + 16 * i + g;
      uint32_t h[4], l[4];
      split_tf32(W(m, c), h[0], l[0]);
      split_tf32(W(m + 8, c), h[1], l[1]);
      split_tf32(W(m, c + 1), h[2], l[2]);
      split_tf32(W(m + 8, c + 1), h[3], l[3]);
      wf[(blk * 2) * 32 + lane] = make_float4(__uint_as_float(h[0]), __uint_as_float(h[1]),
                                              __uint_as_float(h[2]), __uint_as_float(h[3]));
      wf[(blk * 2 + 1) * 32 + lane] = make_float4(__uint_as_float(l[0]), __uint_as_float(l[1]),
                                                  __uint_as_float(l[2]), __uint_as_float(l[3]));
    }
  }
}

// One tile's input -> stage (16-byte cp.async; pixels past the end zero-filled).
template <bool CL, int C, int NT, int BP>
__device__ __forceinline__ void load_tile(const Args& a, long long tile, float* st) {
  constexpr int PITCH = stage_pitch(CL, C, BP);
  if (CL) {
    const long long p0 = tile * BP;
    const int chunks = BP * (C >> 2);
    for (int e = threadIdx.x; e < chunks; e += NT) {
      const int r = e / (C / 4), q = e % (C / 4);
      const bool ok = p0 + r < a.P;
      cp_async16(st + r * PITCH + 4 * q, ok ? a.x + (p0 + r) * C + 4 * q : a.x, ok);
    }
  } else {
    constexpr int QR = BP / 4;  // 16-byte chunks per channel row
    const long long img = tile / a.tiles_per_img;
    const int p0 = (int)(tile - img * a.tiles_per_img) * BP;
    const float* xi = a.x + img * (long long)C * a.HW;
    const int chunks = C * QR;
    for (int e = threadIdx.x; e < chunks; e += NT) {
      const int c = e / QR, q = e % QR;
      const int p = p0 + 4 * q;
      const bool ok = p < a.HW;  // HW % 4 == 0: a chunk is whole or outside
      cp_async16(st + c * PITCH + 4 * q, ok ? xi + (long long)c * a.HW + p : a.x, ok);
    }
  }
}

// A lane whose 3xTF32 accumulators are not all finite: its outputs again with float32 FFMAs
// in channel order, stored directly (out of line: the rare path keeps the main loop's
// registers).  CL: pixel rows r, r + 8 of the stage (global pixel p, p + 8), filters m, m + 1
// of each of NJ n8 tiles from m.  CF: for each of NJ n8 tiles of pixels from r, pixels
// r + 8 jn, + 1 of the stage (+ pt in the image), filters m, m + 8 of each of NI m16 tiles.
template <int NJ>
__device__ __noinline__ void recompute_cl(const float* __restrict__ w, float* __restrict__ y,
                                          long long w_so, long long w_si, int C, int M,
                                          long long P, int pitch, const float* st, int r,
                                          long long p, int m) {
  for (int j = 0; j < NJ; ++j)
    for (int e = 0; e < 4; ++e) {
      const int rr = r + (e >> 1) * 8, mm = m + j * 8 + (e & 1);
      const long long pp = p + (e >> 1) * 8;
      if (mm >= M || pp >= P) continue;
      float v = 0.f;
      for (int c = 0; c < C; ++c) v = fmaf(st[rr * pitch + c], __ldg(w + mm * w_so + c * w_si), v);
      y[pp * M + mm] = v;
    }
}
template <int NI, int NJ>
__device__ __noinline__ void recompute_cf(const float* __restrict__ w, long long w_so,
                                          long long w_si, int C, int M, int HW, int pitch,
                                          const float* st, int r, int pt, int m, float* yi) {
  for (int ii = 0; ii < NI; ++ii)
    for (int jn = 0; jn < NJ; ++jn)
      for (int e = 0; e < 4; ++e) {
        const int mm = m + ii * 16 + (e >> 1) * 8, rr = r + 8 * jn + (e & 1);
        if (mm >= M || pt + rr >= HW) continue;
        float v = 0.f;
        for (int c = 0; c < C; ++c) v = fmaf(st[c * pitch + rr], __ldg(w + mm * w_so + c * w_si), v);
        yi[(long long)mm * HW + pt + rr] = v;
      }
}

// 4 x WM warps: 4 along the pixels, WM (1 or 2) along the filters; each warp computes RP x 16
// pixels x 64 / WM filters, so a tile is W'x = 64 RP pixels.  Resident blocks the compiler
// must allow: unsaid (0), except 2 for channels-first C = 64 with one filter group, which
// ptxas otherwise held at 128 registers with 12 B of spills (sm_90a); it takes 144 without
// them, and its shared memory (~100 KB) holds 2 blocks per SM either way.
template <bool CL, int C, int WM>
constexpr int pw_min_blocks() { return (!CL && C == 64 && WM == 1) ? 2 : 0; }

template <bool CL, int C, int STAGES, int WM, int RP>
__global__ void __launch_bounds__(128 * WM, (pw_min_blocks<CL, C, WM>())) mc_pointwise_kernel(const Args a) {
  constexpr int NT = 128 * WM, BP = 64 * RP;
  constexpr int PITCH = stage_pitch(CL, C, BP);
  constexpr int NJ = 8 / WM;   // CL: n8 tiles of filters per warp
  constexpr int NI = 4 / WM;   // CF: m16 tiles of filters per warp
  constexpr int NP = 2 * RP;   // CF: n8 tiles of pixels per warp
  extern __shared__ float4 smem4[];
  float4* wf = smem4;
  float* ring = reinterpret_cast<float*>(smem4 + C * 32);  // after C * 128 floats of filters
  constexpr int sf = stage_floats(CL, C, BP);

  const int mt = blockIdx.x % a.m_tiles, m0 = mt * kMB;
  const long long first = blockIdx.x / a.m_tiles, step = gridDim.x / a.m_tiles;
  const long long mine = first < a.pix_tiles ? (a.pix_tiles - first + step - 1) / step : 0;

  // prologue: STAGES - 1 tiles in flight (one commit group per tile, empty ones too), then the
  // filters (plain loads) while they land
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < mine) load_tile<CL, C, NT, BP>(a, first + s * step, ring + s * sf);
    cp_async_commit();
  }
  fill_filters<CL>(a, m0, wf);

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int wp = warp & 3, wm = warp >> 2;  // pixel group (RP x 16 pixels), filter group
  constexpr int nks = C / 8;

  for (long long i = 0; i < mine; ++i) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile i landed for every thread; slot (i - 1) % STAGES is free
    if (i + STAGES - 1 < mine)
      load_tile<CL, C, NT, BP>(a, first + (i + STAGES - 1) * step,
                            ring + ((i + STAGES - 1) % STAGES) * sf);
    cp_async_commit();
    const float* st = ring + (i % STAGES) * sf;
    const long long tile = first + i * step;

    if (CL) {
      float acc[RP][NJ][4];
#pragma unroll
      for (int rp = 0; rp < RP; ++rp)
#pragma unroll
        for (int j = 0; j < NJ; ++j) acc[rp][j][0] = acc[rp][j][1] = acc[rp][j][2] = acc[rp][j][3] = 0.f;
      const float* xr = st + (16 * RP * wp + g) * PITCH + 2 * t;
      const float4* wb = wf + (wm * NJ) * 32 + lane;
#pragma unroll
      for (int s = 0; s < nks; ++s) {
        uint32_t ah[RP][4], al[RP][4];
#pragma unroll
        for (int rp = 0; rp < RP; ++rp) {
          const float2 r0 = *reinterpret_cast<const float2*>(xr + 16 * rp * PITCH + 8 * s);
          const float2 r1 = *reinterpret_cast<const float2*>(xr + (16 * rp + 8) * PITCH + 8 * s);
          split_tf32(r0.x, ah[rp][0], al[rp][0]);
          split_tf32(r1.x, ah[rp][1], al[rp][1]);
          split_tf32(r0.y, ah[rp][2], al[rp][2]);
          split_tf32(r1.y, ah[rp][3], al[rp][3]);
        }
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
          const float4 b = wb[(s * 8 + j) * 32];
          const uint32_t bh[2] = {__float_as_uint(b.x), __float_as_uint(b.y)};
          const uint32_t bl[2] = {__float_as_uint(b.z), __float_as_uint(b.w)};
#pragma unroll
          for (int rp = 0; rp < RP; ++rp) {
            mma_tf32(acc[rp][j], al[rp], bh);
            mma_tf32(acc[rp][j], ah[rp], bl);
            mma_tf32(acc[rp][j], ah[rp], bh);
          }
        }
      }
#pragma unroll
      for (int rp = 0; rp < RP; ++rp) {
        bool bad = false;
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) bad |= !(fabsf(acc[rp][j][e]) <= FLT_MAX);
        const int r = 16 * (RP * wp + rp) + g;  // stage rows r and r + 8
        const long long p = tile * BP + r;
        if (bad) {
          recompute_cl<NJ>(a.w, a.y, a.w_so, a.w_si, C, a.M, a.P, PITCH, st, r, p,
                           m0 + wm * NJ * 8 + 2 * t);
          continue;
        }
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
          const int m = m0 + (wm * NJ + j) * 8 + 2 * t;
          if (m >= a.M) continue;  // M % 8 == 0: an n8 tile is whole or outside
          if (p < a.P)
            *reinterpret_cast<float2*>(a.y + p * a.M + m) = make_float2(acc[rp][j][0], acc[rp][j][1]);
          if (p + 8 < a.P)
            *reinterpret_cast<float2*>(a.y + (p + 8) * a.M + m) =
                make_float2(acc[rp][j][2], acc[rp][j][3]);
        }
      }
    } else {
      float acc[NI][NP][4];
#pragma unroll
      for (int ii = 0; ii < NI; ++ii)
#pragma unroll
        for (int jn = 0; jn < NP; ++jn) acc[ii][jn][0] = acc[ii][jn][1] = acc[ii][jn][2] = acc[ii][jn][3] = 0.f;
      const float* xc = st + 2 * t * PITCH + 16 * RP * wp + g;
      const float4* wa = wf + (wm * NI) * 2 * 32 + lane;
#pragma unroll
      for (int s = 0; s < nks; ++s) {
        uint32_t bh[NP][2], bl[NP][2];
#pragma unroll
        for (int jn = 0; jn < NP; ++jn) {
          split_tf32(xc[8 * s * PITCH + 8 * jn], bh[jn][0], bl[jn][0]);
          split_tf32(xc[(8 * s + 1) * PITCH + 8 * jn], bh[jn][1], bl[jn][1]);
        }
#pragma unroll
        for (int ii = 0; ii < NI; ++ii) {
          const float4 h = wa[((s * 4 + ii) * 2) * 32], l = wa[((s * 4 + ii) * 2 + 1) * 32];
          const uint32_t ah[4] = {__float_as_uint(h.x), __float_as_uint(h.y), __float_as_uint(h.z),
                                  __float_as_uint(h.w)};
          const uint32_t al[4] = {__float_as_uint(l.x), __float_as_uint(l.y), __float_as_uint(l.z),
                                  __float_as_uint(l.w)};
#pragma unroll
          for (int jn = 0; jn < NP; ++jn) {
            mma_tf32(acc[ii][jn], al, bh[jn]);
            mma_tf32(acc[ii][jn], ah, bl[jn]);
            mma_tf32(acc[ii][jn], ah, bh[jn]);
          }
        }
      }
      bool bad = false;
#pragma unroll
      for (int ii = 0; ii < NI; ++ii)
#pragma unroll
        for (int jn = 0; jn < NP; ++jn)
#pragma unroll
          for (int e = 0; e < 4; ++e) bad |= !(fabsf(acc[ii][jn][e]) <= FLT_MAX);
      const long long img = tile / a.tiles_per_img;
      const int pt = (int)(tile - img * a.tiles_per_img) * BP;
      float* yi = a.y + img * (long long)a.M * a.HW;
      if (bad) {
        recompute_cf<NI, NP>(a.w, a.w_so, a.w_si, C, a.M, a.HW, PITCH, st,
                             16 * RP * wp + 2 * t, pt, m0 + wm * NI * 16 + g, yi);
        continue;
      }
#pragma unroll
      for (int ii = 0; ii < NI; ++ii) {
        const int m = m0 + (wm * NI + ii) * 16 + g;  // rows m and m + 8 (M % 8 == 0)
#pragma unroll
        for (int jn = 0; jn < NP; ++jn) {
          const int p = pt + 16 * RP * wp + 8 * jn + 2 * t;  // HW even: the pair is whole or outside
          if (p >= a.HW) continue;
          if (m < a.M)
            *reinterpret_cast<float2*>(yi + (long long)m * a.HW + p) =
                make_float2(acc[ii][jn][0], acc[ii][jn][1]);
          if (m + 8 < a.M)
            *reinterpret_cast<float2*>(yi + (long long)(m + 8) * a.HW + p) =
                make_float2(acc[ii][jn][2], acc[ii][jn][3]);
        }
      }
    }
  }
  cp_async_wait<0>();  // nothing left in flight at exit (the empty groups)
}

using KernelFn = void (*)(const Args);

constexpr int kTileW = 128;  // W'x of both variants (RP = 2 pixel groups of 16 per warp)
struct Variant {
  KernelFn cl32, cf32, cl64, cf64;
  int stages, wm;
};
#define PW_VARIANT(S, WM)                                                                  \
  { mc_pointwise_kernel<true, 32, S, WM, kTileW / 64>,                                      \
    mc_pointwise_kernel<false, 32, S, WM, kTileW / 64>,                                     \
    mc_pointwise_kernel<true, 64, S, WM, kTileW / 64>,                                      \
    mc_pointwise_kernel<false, 64, S, WM, kTileW / 64>, S, WM }
// [0] 4 warps of 32 pixels x 64 filters (W'x = 128), 2 stages, 2 blocks per SM (C = 64: 32 KB of
// split filters + 2 x 36 KB of stages); [1] the same tile on 8 warps of 32 pixels x 32 filters
// (more warps, each split of a pixel done twice), faster where each block gets few tiles.
// Measured (H200, driver, us; general kernel / [0] / [1] / 4 stages of 64 pixels, 4 warps):
// b32 112x112x64 NHWC 97.1 / 72.9 / 74.8 / 82.2, NCHW 99.9 / 81.2 / 83.6 / 87.8; b32 224x224x64
// NHWC 351 / 242 / 262 / 281; b32 56x56x64 NHWC 31.3 / 27.9 / 25.0 / 30.2, NCHW 31.0 / 30.9 /
// 29.0 / 30.1; b1 512x512x64 NHWC 67.8 / 52.3 / 53.8 / 59.0; b1 224x224x64 NHWC 16.2 / 21.8 /
// 18.9 / 21.7 (too few tiles: the planner keeps the general kernel there).
static const Variant kVariants[] = {PW_VARIANT(2, 1), PW_VARIANT(2, 2)};
constexpr long long kFewTilesPerBlock = 6;  // below: variant [1]
#undef PW_VARIANT
static int g_variant = -1;  // drivers: force one (-1: by the tiles per block)

// Channels-last (1) or channels-first (2) dense layouts of x and y, else 0.
static int layout_of(const ConvParams& p) {
  const long long HW = p.H * p.W;
  const bool x_cl = p.x_sc == 1 && p.x_sw == p.C && p.x_sh == p.W * p.C && p.x_sn == HW * p.C;
  const bool y_cl = p.y_sc == 1 && p.y_sw == p.M && p.y_sh == p.W * p.M && p.y_sn == HW * p.M;
  const bool x_cf = p.x_sw == 1 && p.x_sh == p.W && p.x_sc == HW && p.x_sn == p.C * HW;
  const bool y_cf = p.y_sw == 1 && p.y_sh == p.W && p.y_sc == HW && p.y_sn == p.M * HW;
  if (x_cl && y_cl) return 1;
  if (x_cf && y_cf && HW % 4 == 0) return 2;
  return 0;
}

}  // namespace pw

bool mc_pointwise_supported(const ConvParams& p, const void* x, const void* w, const void* y) {
  (void)w;
  return p.KH == 1 && p.KW == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_top == 0 &&
         p.pad_left == 0 && p.OH == p.H && p.OW == p.W && (p.C == 32 || p.C == 64) &&
         p.M % 8 == 0 && p.M >= 8 && p.N >= 1 && p.w_so >= 0 && p.w_si >= 0 &&
         (p.M - 1) * p.w_so + (p.C - 1) * p.w_si < (1LL << 31) && pw::layout_of(p) != 0 &&
         aligned16(x) && aligned16(y);
}

void multi_channel_pointwise_variant(int v) {
  pw::g_variant = v >= 0 && v < int(sizeof(pw::kVariants) / sizeof(pw::kVariants[0])) ? v : -1;
}

cudaError_t launch_mc_pointwise(const ConvParams& p, const float* x, const float* w, float* y,
                                cudaStream_t stream) {
  if (!mc_pointwise_supported(p, x, w, y)) return cudaErrorInvalidValue;
  DeviceInfo dev;
  cudaError_t err = current_device_info(&dev);
  if (err != cudaSuccess) return err;
  const bool cl = pw::layout_of(p) == 1;
  constexpr int BP = pw::kTileW;
  pw::Args a;
  a.x = x; a.w = w; a.y = y;
  a.C = (int)p.C; a.M = (int)p.M; a.HW = (int)(p.H * p.W);
  a.P = p.N * p.H * p.W;
  a.w_so = p.w_so; a.w_si = p.w_si;
  a.m_tiles = (int)((p.M + pw::kMB - 1) / pw::kMB);
  a.tiles_per_img = (int)((a.HW + BP - 1) / BP);
  a.pix_tiles = cl ? (a.P + BP - 1) / BP : p.N * a.tiles_per_img;
  if (p.H * p.W >= (1LL << 31) || a.pix_tiles >= (1LL << 40)) return cudaErrorInvalidValue;
  // both variants run 2 blocks per SM (the grid below); tiles counted over all N * H * W pixels
  const long long tiles = (a.P + BP - 1) / BP * a.m_tiles;
  const int vi = pw::g_variant >= 0 ? pw::g_variant
                                    : (tiles < pw::kFewTilesPerBlock * 2 * dev.sms ? 1 : 0);
  const pw::Variant& v = pw::kVariants[vi];
  const int nt = 128 * v.wm;

  const pw::KernelFn fn = p.C == 32 ? (cl ? v.cl32 : v.cf32) : (cl ? v.cl64 : v.cf64);
  const size_t smem =
      (size_t(a.C) * 128 + size_t(v.stages) * pw::stage_floats(cl, a.C, BP)) * sizeof(float);
  const void* fn_id = reinterpret_cast<const void*>(fn);
  err = raise_func_attribute_once(fn_id, dev.device, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  (int)smem);
  if (err != cudaSuccess) return err;
  // persistent grid: the resident blocks of one wave (a multiple of the filter tiles), no
  // more than there are tiles
  static thread_local const void* occ_fn = nullptr;
  static thread_local size_t occ_smem = 0;
  static thread_local int occ_blocks = 0;
  if (occ_fn != fn_id || occ_smem != smem) {
    int b = 0;
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, fn, nt, smem);
    if (err != cudaSuccess) return err;
    occ_fn = fn_id; occ_smem = smem; occ_blocks = b < 1 ? 1 : b;
  }
  long long grid = (long long)occ_blocks * dev.sms;
  const long long need = a.pix_tiles * a.m_tiles;
  if (grid > need) grid = need;
  grid = grid / a.m_tiles * a.m_tiles;
  if (grid < a.m_tiles) grid = a.m_tiles;
  if (grid > 0x7fffffffLL) return cudaErrorInvalidValue;
  fn<<<(unsigned)grid, nt, smem, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace fastconv
