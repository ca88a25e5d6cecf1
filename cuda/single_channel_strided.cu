// Single-channel convolution with a stride (C == 1, stride_h or stride_w > 1): plan division 4
// ("strided", jax_fastconv/plan_single_channel.py S7), exactly [1, 4, 1, 1, 0, 0, 0, 256].
// The first layers of grayscale and signal networks often stride (7x7/2, 3x3/2, 4x4/4
// patches); the staged kernel of single_channel.cu reads a tap's inputs as consecutive
// floats of a shared line, which a stride breaks, so these layers ran lax.
//
// Few channels (1 < C < 8, any stride: RGB first layers) run here too: the multi-channel
// kernel's 32-byte segments along C would be mostly padding, so each channel is the
// single-channel computation below, summed into the same registers (compute_item).
//
// The output is what costs (M filters over one input map), so, as in the pointwise kernel,
// nothing is staged but the filters: a block copies the weights of its slab of MB filters into
// shared memory once ([tap][MB], a thread's TM filters TM / 4 float4s per tap) and each thread
// computes a register tile of TM filters x 4 output columns of one row, reading its input
// window with __ldg (the map is M times smaller than the output and stays in L1/L2). A row of
// the window, S (TP - 1) + K inputs, is loaded once into registers and feeds the K taps of
// that row at constant offsets (S j + kw), where the stride and the kernel size are compile-
// time constants: 3x3, 5x5, 7x7 at stride 2, 2x2, 4x4 patches (stride = size) and 3x3 at
// stride 1 (for C > 1; C = 1 at stride 1 is the staged kernel's); any other
// size or stride runs the generic instance (runtime loops, four loads per tap).
//
// Two thread orders, picked on the host from the output strides and alignment:
//   kFilters (y_sc == 1, M % 4 == 0, e.g. NHWC): filter groups fastest, TM = 4 (8 for some
//            C > 1 layers: strided::filters_per_thread); a thread writes one 16-byte store per
//            pixel and 4 filters, a warp whole lines of a run.
//   kColumns (anything else): TM = 8 where strided::filters_per_thread says so (8 filters per
//            thread halve the input loads per FMA: b32 NCHW 7x7/2 0.90x, 5x5/2 0.87x, 4x4/4
//            0.83x the time of 4; in kFilters 8 took 1.08-2.2x the time, H100, single-channel
//            notes round 14), else 4; 4 filter groups fastest, then column chunks, so that a warp
//            holds 4 filter groups x 8 chunks: its input loads touch 8 places (32 lanes along
//            the columns touched 32, 0.5-0.6x the time at 7x7/2 NCHW) and, with 16-byte aligned
//            rows (y_sw == 1, e.g. NCHW with OW % 4 == 0), each of its float4 stores per filter
//            covers 128 contiguous bytes of 4 planes; else scalar stores.
// The slab's weights are copied with cp.async, all in flight at once (a loop of dependent
// loads and shared stores took ~8 us on 7x7 slabs of 64 filters).
#include <algorithm>
#include <cstdint>

#include "cp_async.cuh"
#include "fast_divide.h"
#include "kernels.h"
#include "launch_util.h"
#include "register_tile.cuh"
#include "single_channel_strided.h"

namespace fastconv {
namespace {

constexpr int kSTThreads = 256;
constexpr int kSTTP = strided::kTP;  // output columns per thread

enum STOrder : int { kColumns = 0, kFilters = 1 };

struct STArgs {
  long long x_sn, x_sh, x_sw;
  long long w_so, w_sh, w_sw;
  long long y_sn, y_sc, y_sh, y_sw;
  int H, W, OH, OW, M, KH, KW, SH, SW, pad_top, pad_left;
  int MB;         // filters per slab (blockIdx.y): a power of two in [4, 128]
  int GM;         // MB / TM: filter groups of a slab
  int G4;         // kColumns: min(GM, 4) filter groups interleaved with the column chunks
  int CW;         // ceil(OW / 4): column chunks of an output row
  int items;      // items of one slab: N x OH x CW x GM (< 2^31)
  int vec;        // kColumns: every row chunk of 4 is a 16-byte aligned store
  FastDiv fd_a, fd_b, fd_c, fd_d;  // the item decode's divisors, fastest first (see decode)
  int xvec;  // 4 / 2: every window row starts 16- / 8-byte aligned (x_sw == 1), else 1; read by
             // the patch instances only (compute_item)
  int turn_q, turn_r;  // turns of blockDim items per block: q, one more for the first r blocks
  int C;                // channels (> 1: the instances with XIN >= 0)
  long long x_sc, w_si;  // (last: the C = 1 instances' parameter offsets, so code, unchanged)
};

struct STItem {
  int n, oh, c0, gl;
};

// kFilters: it = ((n OH + oh) CW + c) GM + gl (fd_a..c = GM, CW, OH);
// kColumns: it = (((n GH + gh) OH + oh) CW + c) G4 + gl % G4, gh = gl / G4, GH = GM / G4
// (fd_a..d = G4, CW, OH, GH).
template <int ORDER>
__device__ __forceinline__ STItem decode(const STArgs& a, int it) {
  STItem r;
  int c;
  uint32_t t = uint32_t(it);
  if (ORDER == kFilters) {
    t = a.fd_a.divmod(t, &r.gl);
    t = a.fd_b.divmod(t, &c);
    r.n = int(a.fd_c.divmod(t, &r.oh));
  } else {
    int lo, hi;
    t = a.fd_a.divmod(t, &lo);
    t = a.fd_b.divmod(t, &c);
    t = a.fd_c.divmod(t, &r.oh);
    r.n = int(a.fd_d.divmod(t, &hi));
    r.gl = hi * a.G4 + lo;
  }
  r.c0 = c * kSTTP;
  return r;
}

// x itself; with ON, a value the compiler cannot see through (nor hoist out of a loop).
template <bool ON>
__device__ __forceinline__ int opaque(int x) {
  if constexpr (ON) asm volatile("mov.b32 %0, %0;" : "+r"(x));
  return x;
}

// acc[i][j] += sum over the taps of filter i (the thread's TM, weights swg[tap * MB + i]) x the
// input under output column c0 + j of row oh of one channel's plane xn; the window outside the
// map is zeros. XS > 0: x_sw == XS, so a row's loads are constant offsets (1: every C = 1
// layout but the exotic ones; 3: RGB channels-last input, C = 3 NHWC); XS = 0: any x_sw.
// Patch instances (stride = kernel size: windows do not overlap, so a row's loads are all
// there is to reuse) read rows inside the map as float4s or float2s where xvec says every
// window row starts aligned (a 4x4/4 row: 4 loads instead of 16; b32 256^2 4x4/4 NCHW 0.85x
// the time). Not for the overlapping windows (3x3/2, 5x5/2, 7x7/2): there the vector paths
// took 62-64 registers to 75-78 (3 blocks per SM instead of 4) and ran up to 1.48x slower.
template <int KT, int ST, int XS, int TM, bool MC>
__device__ __forceinline__ void accumulate_channel(const STArgs& a, const float* __restrict__ xn,
                                                   int oh, int c0, const float* __restrict__ swg,
                                                   float (&acc)[TM][kSTTP]) {
  const long long xsw = XS > 0 ? XS : a.x_sw;
  // MC (a loop over channels): opaque, so computed again per channel; else the compiler kept
  // every row's addresses and bounds live across the loop (7x7/2 with 8 filters: 172
  // registers instead of 128)
  const int ih0 = opaque<MC>(oh * (ST > 0 ? ST : a.SH) - a.pad_top);
  const int iw0 = opaque<MC>(c0 * (ST > 0 ? ST : a.SW) - a.pad_left);
  if constexpr (KT > 0) {
    constexpr int NV = ST * (kSTTP - 1) + KT;  // inputs of one window row
    constexpr int NV4 = (NV + 3) / 4 * 4, NV2 = (NV + 1) / 2 * 2;
    const bool inside = iw0 >= 0 && iw0 + NV <= a.W;
    constexpr bool kPatch = XS == 1 && KT == ST;
    const int xvec = !kPatch ? 1 : a.xvec == 4 && iw0 >= 0 && iw0 + NV4 <= a.W ? 4
                                 : a.xvec >= 2 && iw0 >= 0 && iw0 + NV2 <= a.W ? 2 : 1;
    // Window row kh into r: zeros outside the map (row_ok: row kh is inside it).
    auto load_row = [&](int kh, bool row_ok, float (&r)[kPatch ? NV4 : NV]) {
      const int ih = ih0 + kh;
      const float* xr = xn + (long long)ih * a.x_sh + iw0 * xsw;
      if (kPatch && xvec == 4 && row_ok) {
#pragma unroll
        for (int q = 0; q < NV4 / 4; ++q) {
          const float4 f = __ldg(reinterpret_cast<const float4*>(xr) + q);
          r[4 * q] = f.x; r[4 * q + 1] = f.y; r[4 * q + 2] = f.z; r[4 * q + 3] = f.w;
        }
      } else if (kPatch && xvec == 2 && row_ok) {
#pragma unroll
        for (int q = 0; q < NV2 / 2; ++q) {
          const float2 f = __ldg(reinterpret_cast<const float2*>(xr) + q);
          r[2 * q] = f.x; r[2 * q + 1] = f.y;
        }
      } else if (inside && row_ok) {
#pragma unroll
        for (int q = 0; q < NV; ++q) r[q] = __ldg(xr + q * xsw);
      } else {
#pragma unroll
        for (int q = 0; q < NV; ++q) {
          const bool ok = row_ok && iw0 + q >= 0 && iw0 + q < a.W;
          r[q] = ok ? __ldg(xr + q * xsw) : 0.f;
        }
      }
    };
    // Which instances load row kh + 1 before row kh's FMAs, so that its loads are in flight
    // while they issue: the patches (their rows feed one tap each; b32 256^2 4x4/4 0.87-0.93x
    // the time, b1 0.82-0.84x), and the overlapping windows where the second row buffer costs
    // no block per SM (3x3/2 with 4 filters, 64 registers either way: b1 224^2 0.89x; 7x7/2
    // with 8, 94 -> 128: 0.97-0.98x). Elsewhere it does (5x5/2: 1.03-1.15x the time; 7x7/2
    // with 4 filters: 1.02-1.06x; 3x3/2 with 8: 0.98-1.01x), H100, single-channel notes round 15.
    constexpr bool kPrefetch = kPatch || (KT == 3 && TM == 4) || (KT == 7 && TM == 8);
    float v[2][kPatch ? NV4 : NV];
    if (kPrefetch) load_row(0, ih0 >= 0 && ih0 < a.H, v[0]);
#pragma unroll
    for (int kh = 0; kh < KT; ++kh) {
      const int cur = kPrefetch ? kh & 1 : 0;
      if (kPrefetch && kh + 1 < KT)
        load_row(kh + 1, ih0 + kh + 1 >= 0 && ih0 + kh + 1 < a.H, v[(kh + 1) & 1]);
      const int ih = ih0 + kh;
      if (ih < 0 || ih >= a.H) continue;
      if (!kPrefetch) load_row(kh, true, v[0]);
#pragma unroll
      for (int kw = 0; kw < KT; ++kw) {
        float wv[TM];
        load_weights<TM>(swg + (kh * KT + kw) * a.MB, wv);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < kSTTP; ++j)
            acc[i][j] = fmaf(wv[i], v[cur][ST * j + kw], acc[i][j]);
      }
    }
  } else {
#pragma unroll 1
    for (int kh = 0; kh < a.KH; ++kh) {
      const int ih = ih0 + kh;
      if (ih < 0 || ih >= a.H) continue;
      const float* xr = xn + (long long)ih * a.x_sh;
#pragma unroll 1
      for (int kw = 0; kw < a.KW; ++kw) {
        float v[kSTTP];
#pragma unroll
        for (int j = 0; j < kSTTP; ++j) {
          const int iw = iw0 + j * a.SW + kw;
          v[j] = (iw >= 0 && iw < a.W) ? __ldg(xr + iw * xsw) : 0.f;
        }
        float wv[TM];
        load_weights<TM>(swg + (kh * a.KW + kw) * a.MB, wv);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < kSTTP; ++j) acc[i][j] = fmaf(wv[i], v[j], acc[i][j]);
      }
    }
  }
}

// acc = the thread's tile of outputs of image xn. MC (instances for C > 1; the planner sends
// 1 < C < 8): the channels one after another, each the single-channel computation into the same
// registers (weights swg[(c KH KW + tap) MB + i]); the C = 1 instances keep their own code
// (the loop cost them registers: 3x3/2 64 -> 73-79, 5x5/2 with 8 filters 79 -> 99).
template <int KT, int ST, int XS, int TM, bool MC>
__device__ __forceinline__ void compute_item(const STArgs& a, const float* __restrict__ xn,
                                             int oh, int c0, const float* __restrict__ swg,
                                             float (&acc)[TM][kSTTP]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < kSTTP; ++j) acc[i][j] = 0.f;
  if constexpr (MC) {
#pragma unroll 1
    for (int c = 0; c < a.C; ++c)
      accumulate_channel<KT, ST, XS, TM, true>(a, xn + c * a.x_sc, oh, c0,
                                                 swg + c * a.KH * a.KW * a.MB, acc);
  } else {
    accumulate_channel<KT, ST, XS, TM, false>(a, xn, oh, c0, swg, acc);
  }
}

// XIN: kOneChannel (C = 1; a window row's loads at constant offsets where x_sw == 1, else at
// multiples of x_sw, decided per launch), or C > 1 with x_sw == XIN (1: planes, e.g. NCHW; 3:
// RGB channels-last, NHWC) or 0 (any x_sw). One x_sw per C > 1 kernel: a kernel holding the
// three paths took the registers of the largest (3x3/1 with 8 filters 76 -> 100: VGG-16's
// b32 NCHW conv1_1 1.12x the time); a constant 3 instead of x_sw: b32 NHWC RGB 7x7/2 0.75x.
constexpr int kOneChannel = -1;

template <int KT, int ST, int ORDER, int TM, int XIN>
__global__ void __launch_bounds__(kSTThreads)
    single_channel_strided_kernel(const STArgs a, const float* __restrict__ x,
                                  const float* __restrict__ w, float* __restrict__ y) {
  extern __shared__ float4 st_smem4[];
  float* sw = reinterpret_cast<float*>(st_smem4);
  const int m_slab = blockIdx.y * a.MB;
  // The slab's weights as [c][kh][kw][MB] (zeros past M). MB is a power of two <= the block, so
  // a thread keeps one filter and walks the taps in steps of blockDim / MB: no division per copy.
  {
    const int ml = threadIdx.x & (a.MB - 1);
    const int step = blockDim.x / a.MB;
    const int m = m_slab + ml;
    int tap = threadIdx.x / a.MB, kh = tap / a.KW, kw = tap - kh * a.KW;
    constexpr bool MC = XIN >= 0;  // C > 1
    int c = MC ? kh / a.KH : 0;
    kh -= c * a.KH;
    const float* wm = w + (long long)min(m, a.M - 1) * a.w_so;
    for (; MC ? c < a.C : kh < a.KH; tap += step) {
      cp_async4(sw + tap * a.MB + ml, wm + c * a.w_si + kh * a.w_sh + kw * a.w_sw, m < a.M);
      kw += step;
      while (kw >= a.KW) {
        kw -= a.KW;
        ++kh;
        if (MC && kh == a.KH) { kh = 0; ++c; }
      }
    }
    cp_async_commit();
    cp_async_wait<0>();
  }
  __syncthreads();

  // Each block takes a contiguous run of the slab's turns (blockDim items each; the runs
  // differ by at most one turn; the launcher sizes the grid). Contiguous: a grid-stride order
  // lost the L1 reuse of neighbouring rows (b32 1024^2 7x7/2 NHWC 1.1x the time).
  // Block b's run: turns [b q + min(b, r), + q + (b < r)), q and r of turns / gridDim.x from
  // the host (a 64-bit division here cost b1 512^2 3x3/2 7% of its time).
  const int b = int(blockIdx.x);
  const int t0 = b * a.turn_q + min(b, a.turn_r), t1 = t0 + a.turn_q + (b < a.turn_r);
  const int end = min(a.items, t1 * int(blockDim.x));
  for (int it = t0 * int(blockDim.x) + int(threadIdx.x); it < end; it += blockDim.x) {
    const STItem t = decode<ORDER>(a, it);
    const int m0 = m_slab + TM * t.gl;
    if (m0 >= a.M) continue;
    float acc[TM][kSTTP];
    const float* swg = sw + TM * t.gl;
    if constexpr (XIN >= 0) {
      compute_item<KT, ST, XIN, TM, true>(a, x + (long long)t.n * a.x_sn, t.oh, t.c0, swg, acc);
    } else {
      if (a.x_sw == 1)
        compute_item<KT, ST, 1, TM, false>(a, x + (long long)t.n * a.x_sn, t.oh, t.c0, swg, acc);
      else
        compute_item<KT, ST, 0, TM, false>(a, x + (long long)t.n * a.x_sn, t.oh, t.c0, swg, acc);
    }
    const int crem = a.OW - t.c0;  // columns left in this row (>= 1)
    float* yp = y + (long long)t.n * a.y_sn + (long long)t.oh * a.y_sh + (long long)m0 * a.y_sc +
                (long long)t.c0 * a.y_sw;
    if (ORDER == kFilters) {  // y_sc == 1, M % 4 == 0, 16-byte aligned pixels
#pragma unroll
      for (int h = 0; h < TM / 4; ++h) {
        if (h > 0 && m0 + 4 * h >= a.M) break;  // (m0 < M was checked)
#pragma unroll
        for (int j = 0; j < kSTTP; ++j)
          if (j < crem)
            __stcs(reinterpret_cast<float4*>(yp + 4 * h + j * a.y_sw),
                   make_float4(acc[4 * h][j], acc[4 * h + 1][j], acc[4 * h + 2][j], acc[4 * h + 3][j]));
      }
    } else {
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        if (m0 + i >= a.M) break;
        float* ym = yp + i * a.y_sc;
        if (a.vec && crem >= kSTTP) {
          __stcs(reinterpret_cast<float4*>(ym), make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]));
        } else {
#pragma unroll
          for (int j = 0; j < kSTTP; ++j)
            if (j < crem) __stcs(ym + j * a.y_sw, acc[i][j]);
        }
      }
    }
  }
}

using strided::slab_filters;
using strided::slab_items;

int pick_order(const ConvParams& p, const float* y, int* vec) {
  const bool y16 = aligned16(y);
  *vec = 0;
  if (strided::filters_first(p, y16)) return kFilters;
  *vec = y16 && p.y_sw == 1 && p.y_sc % 4 == 0 && p.y_sh % 4 == 0 && p.y_sn % 4 == 0;
  return kColumns;
}

template <int KT, int ST, int ORDER, int TM, int XIN>
cudaError_t launch_t(STArgs a, const ConvParams& p, const DeviceInfo& dev,
                     const float* x, const float* w, float* y, cudaStream_t stream) {
  auto kern = single_channel_strided_kernel<KT, ST, ORDER, TM, XIN>;
  const size_t smem = size_t(strided::taps(p) * a.MB) * sizeof(float);
  int per_sm = 0;
  const cudaError_t err =
      blocks_per_sm_once(reinterpret_cast<const void*>(kern), dev.device, kSTThreads, smem, &per_sm);
  if (err != cudaSuccess) return err;
  // Blocks per slab. Waves of blocks of up to 4 turns, consecutive blocks on neighbouring
  // items, where their last wave is >= 80% full and the kernel is store-bound (< 16 taps: one
  // wave of long runs wrote 264 far-apart places of the output at once, b32 512^2 and 1024^2
  // 3x3/2 1.03-1.05x the time). Else one wave, the SMs' places shared among the slabs, at
  // most a block per turn (b1 1024^2 7x7/2 NCHW: 342 blocks of 3 turns on 264 places, 0.73x
  // the time; b32 256^2 4x4/4 0.84-0.92x; 5x5/2, 7x7/2 0.96-0.99x), unless the slabs are too
  // many to share them (over a quarter of the places).
  const long long slabs = (p.M + a.MB - 1) / a.MB;
  const long long places = (long long)std::max(1, per_sm) * std::max(1, dev.sms);
  const long long turns = (a.items + kSTThreads - 1) / kSTThreads;
  const long long waves_of_4 = (turns + 3) / 4, all = waves_of_4 * slabs;
  const bool full_waves = 5 * all >= 4 * places * ((all + places - 1) / places);
  const long long blocks = std::max(
      1LL, (strided::taps(p) < 16 && full_waves) || 4 * slabs > places ? waves_of_4
                                                                   : std::min(turns, places / slabs));
  a.turn_q = int(turns / blocks);
  a.turn_r = int(turns % blocks);
  return launch_ex(kern, dim3(unsigned(blocks), unsigned(slabs)), dim3(unsigned(kSTThreads)),
                   smem, stream, a, x, w, y);  // smem <= 48 KB: no opt-in needed
}

template <int ORDER, int TM, int XIN>
cudaError_t dispatch(const STArgs& a, const ConvParams& p, const DeviceInfo& dev,
                     const float* x, const float* w, float* y, cudaStream_t s) {
  const long long K = p.KH, S = p.stride_h;
  if (p.KW == K && p.stride_w == S) {
    if (S == 2 && K == 3) return launch_t<3, 2, ORDER, TM, XIN>(a, p, dev, x, w, y, s);
    if (S == 2 && K == 5) return launch_t<5, 2, ORDER, TM, XIN>(a, p, dev, x, w, y, s);
    if (S == 2 && K == 7) return launch_t<7, 2, ORDER, TM, XIN>(a, p, dev, x, w, y, s);
    if (S == 2 && K == 2) return launch_t<2, 2, ORDER, TM, XIN>(a, p, dev, x, w, y, s);
    if (S == 4 && K == 4) return launch_t<4, 4, ORDER, TM, XIN>(a, p, dev, x, w, y, s);
    if constexpr (XIN >= 0)  // (stride 1 with C = 1 is the staged kernel's)
      if (S == 1 && K == 3) return launch_t<3, 1, ORDER, TM, XIN>(a, p, dev, x, w, y, s);
  }
  return launch_t<0, 0, ORDER, TM, XIN>(a, p, dev, x, w, y, s);
}

template <int ORDER, int TM>
cudaError_t dispatch_channels(const STArgs& a, const ConvParams& p, const DeviceInfo& dev,
                              const float* x, const float* w, float* y, cudaStream_t s) {
  if constexpr (!(ORDER == kFilters && TM == 8))  // (that pair only for C > 1)
    if (p.C == 1) return dispatch<ORDER, TM, kOneChannel>(a, p, dev, x, w, y, s);
  if (p.x_sw == 1) return dispatch<ORDER, TM, 1>(a, p, dev, x, w, y, s);
  if (p.x_sw == 3) return dispatch<ORDER, TM, 3>(a, p, dev, x, w, y, s);
  return dispatch<ORDER, TM, 0>(a, p, dev, x, w, y, s);
}

}  // namespace

bool single_channel_strided_supported(const ConvParams& p) { return strided::supported(p); }

cudaError_t launch_single_channel_strided(const ConvParams& p, const float* x, const float* w,
                                          float* y, cudaStream_t stream) {
  if (!single_channel_strided_supported(p)) return cudaErrorInvalidValue;
  if (p.out_elems() == 0) return cudaSuccess;
  DeviceInfo dev;
  cudaError_t err = current_device_info(&dev);
  if (err != cudaSuccess) return err;
  STArgs a{};
  a.x_sn = p.x_sn; a.x_sc = p.x_sc; a.x_sh = p.x_sh; a.x_sw = p.x_sw;
  a.w_so = p.w_so; a.w_si = p.w_si; a.w_sh = p.w_sh; a.w_sw = p.w_sw;
  a.y_sn = p.y_sn; a.y_sc = p.y_sc; a.y_sh = p.y_sh; a.y_sw = p.y_sw;
  a.C = int(p.C); a.H = int(p.H); a.W = int(p.W); a.OH = int(p.OH); a.OW = int(p.OW);
  a.M = int(p.M);
  a.KH = int(p.KH); a.KW = int(p.KW); a.SH = int(p.stride_h); a.SW = int(p.stride_w);
  a.pad_top = int(p.pad_top); a.pad_left = int(p.pad_left);
  a.MB = slab_filters(p);
  const int order = pick_order(p, y, &a.vec);
  const int tm = strided::filters_per_thread(p, a.MB, aligned16(y), dev.sms);
  a.GM = a.MB / tm;
  a.CW = int((p.OW + kSTTP - 1) / kSTTP);
  a.items = int(slab_items(p, a.MB, tm));
  a.G4 = std::min(a.GM, 4);
  // window rows start at x + n x_sn + c x_sc + ih x_sh + iw0, iw0 = c0 S - pad_left, c0 % 4 == 0
  const long long pl = ((-p.pad_left) % 4 + 4) % 4;
  const uintptr_t xa = reinterpret_cast<uintptr_t>(x);
  const long long xsc = p.C > 1 ? p.x_sc : 0;  // (every channel's plane too)
  a.xvec = p.x_sw != 1 ? 1
           : (xa % 16 == 0 && p.x_sh % 4 == 0 && p.x_sn % 4 == 0 && xsc % 4 == 0 && pl == 0) ? 4
           : (xa % 8 == 0 && p.x_sh % 2 == 0 && p.x_sn % 2 == 0 && xsc % 2 == 0 && pl % 2 == 0)
               ? 2 : 1;
  a.fd_a = FastDiv(uint32_t(order == kFilters ? a.GM : a.G4));
  a.fd_b = FastDiv(uint32_t(a.CW));
  a.fd_c = FastDiv(uint32_t(p.OH));
  a.fd_d = FastDiv(uint32_t(a.GM / a.G4));
  if (order == kFilters)
    return tm == 8 ? dispatch_channels<kFilters, 8>(a, p, dev, x, w, y, stream)
                   : dispatch_channels<kFilters, 4>(a, p, dev, x, w, y, stream);
  if (tm == 8) return dispatch_channels<kColumns, 8>(a, p, dev, x, w, y, stream);
  return dispatch_channels<kColumns, 4>(a, p, dev, x, w, y, stream);
}

}  // namespace fastconv
