// Single-channel (C == 1) direct convolution, paper section 3.1 (Chang, Onishi, Maruyama),
// computing as Chen et al. do: a band of input rows and a group of filters staged in shared
// memory, each thread accumulating a small register tile of outputs.
//
// ---------------------------------------------------------------------------------------
// Work decomposition
//   A "tile" is (n, row band rb, column tile cb, filter group g): RB output rows x CB output
//   columns x MB filters of image n. Its input patch is (RB+KH-1) x (CB+KW-1) input pixels
//   (padding = zeros, filled inside the kernel), its filters MB x KH x KW.
//   Tiles are linearised in one of two orders and each block of a persistent grid takes a
//   contiguous range of them, keeping in shared memory what consecutive tiles share:
//     division 1 (paper "method 1", filters split across blocks): order (g, n, rb, cb):
//       a block keeps its filter group and sweeps the map rows piece by piece (P pieces).
//     division 2 (paper "method 2", rows split across blocks): order (n, rb, cb, g):
//       a block keeps its band of rows and sweeps the filters piece by piece (Q pieces).
//   prefetch (plan[6] == 1, the paper's Th >= N_FMA case): the input patch and the filter
//     buffer are double buffered; while tile t is computed, whatever tile t+1 needs anew is
//     already in flight (cp.async), so only one barrier per tile.
//   volume (plan[6] == 0, Th < N_FMA): single buffers, one tile per block (grid = number of
//     tiles), load -> barrier -> compute; latency is hidden by the volume of resident blocks.
//
// Mapping of plan[1..7] = [division, P, Q, MB, RB, prefetch, threads] (the planner,
// jax_fastconv/plan_single_channel.py, emits only values inside the ranges below, and the
// kernel then runs EXACTLY that launch; nothing is re-chosen or clamped):
//   division 1 or 2: the tile order above (which operand a block keeps while it sweeps).
//   division 3 (1x1 kernels only, plan [1, 3, 1, 1, 0, 0, 0, 256]): no tiles and no staging:
//        the pointwise kernel of single_channel_pointwise.cu writes every output from global
//        loads (pointwise_plan); any other K, or other values, take the defensive path.
//   division 4 (stride > 1 only, plan [1, 4, 1, 1, 0, 0, 0, 256]): the strided kernel of
//        single_channel_strided.cu (strided_plan); stride 1 is rejected like any stride
//        outside it.
//   division 5 (2 to 64 taps, sm_80+, plan [1, 5, 1, 1, MB, RB, 0, 256]): the 3xTF32
//        tensor-core kernel of single_channel_mma.cu (mma_plan; MB in {16, 32, 64, 128}).
//   division 6 (sm_90a builds, plan [1, 6, 1, 1, 32, SPT, 0-3, 256 or 384]): the wgmma kernel of
//        single_channel_wgmma.cu (wgmma_plan; plan[6]: 1 staggered start, 2 A from registers;
//        NHWC-like outputs, M % 32 == 0, KH, KW <= 5).
//   MB = plan[4] filters per tile: a multiple of TM = 8 in [8, 128] (may exceed M: the
//        missing filters are zeros and never stored).
//   RB = plan[5] output rows per tile, in [1, min(OH, 64)].
//   P = plan[2], Q = plan[3]: the paper's piece counts; division 1 requires P = ceil(OH / RB)
//        and Q = 1, division 2 requires P = 1 and Q = ceil(M / MB) (derived, not free).
//   prefetch = plan[6] in {0, 1}: 1 -> persistent grid of min(#tiles, 2 x #SMs) blocks (the
//        paper's N_block = 2 N_sm; __launch_bounds__(256, 2)), block b taking tiles
//        [b T / grid, (b+1) T / grid); 0 -> volume method, one block per tile.
//        plan[6] + 2 (5x5 kernels only): the same tiles with row-Winograd F(4, 5) products
//        (single_channel_f45_kernel below, winograd_f45.cuh); their output offsets within a
//        tile must fit 32 bits (f45_offsets_fit).
//   threads = plan[7]: a multiple of 32 in [64, 256].
//   CB (column tile) follows from RB: CB = OW (whole rows, as in the paper) when the input
//        patch of one buffer, (RB + KH - 1) x SW(OW) floats, fits in 48 KB (SC_IN_KB), with
//        SW(cb) = roundup4(cb + KW - 1 + 8); otherwise CB = min(OW, max(128, roundDown4(
//        12288 / (RB + KH - 1) - KW - 9))) and the patch must then fit (else: not valid).
//   Shared memory = (prefetch ? 2 : 1) x ((RB + KH - 1) x SW(CB) + KH x KW x MB) x 4 bytes,
//        which must fit the device's opt-in limit.
//   single_channel_launch_config() reports the launch a ConvParams resolves to (the driver
//   compares it with the plan).
// Defensive path, for plans outside these ranges only (hand-written or absurd ones, e.g. the
// driver's random plans; the planner never emits them): the old resolution with clamping:
//   division not 1/2 -> chosen here: division 2, MB = min(M, 64), volume method;
//   division 1: MB = plan[4] (<= 0: ceil(M / #SMs)), RB = ceil(OH / P) if P >= 1 else plan[5];
//   division 2: RB = plan[5] (<= 0: ceil(OH / P) if P >= 1), MB = ceil(M / Q) if Q >= 1 else
//   plan[4] else min(M, 64); MB rounded up to a multiple of 8 and clamped to [8, 128]; RB
//   unset -> about 4096 work items per tile (<= 16 rows), halved until >= 3 tiles per SM;
//   RB clamped to [1, min(OH, 64)] and to the input buffer; shared memory fitted by fewer
//   filters, then volume, then fewer rows; threads rounded to a warp in [64, 256] and cut to
//   the work items of a tile; prefetch grid from the occupancy API.
//   Returns cudaErrorInvalidValue for C != 1, stride != 1 (but division 4), KH/KW < 1,
//   KH*KW > 4096.

// Register tile: each thread computes TM = 8 filters x TP = 4 consecutive output columns of
// one row (TM = 4 where pick_tm says so: NHWC-like outputs, 5x5 or small 3x3; and then TP = 8
// where pick_tp says so: NHWC-like 5x5 on large maps or with >= 64 filters a tile). Templates on
// (KH, KW) in {1x1, 3x3, 5x5, 7x7} keep the tap loops unrolled and the register arrays
// constant-indexed; any other kernel size uses the generic runtime-K path.
// Two thread-to-work orders, picked from the output strides:
//   LAYOUT 0 (y_sw == 1, e.g. NCHW): lanes run along ow; each thread stores a 16-byte float4
//     per filter (8-byte or scalar stores when a row start is not 16-byte aligned; a
//     lane-shifted float4 variant for such rows measured 2-7 % slower and was removed).
//     Where rows are back to back and OW = 2 mod 4 (every VALID 3x3 layer of an even map),
//     the chunks run over the tile's flattened rows instead (flat chunks, compute_tile_flat),
//     so every float4 lands aligned: 0.74-0.97x the time of the general path on the paper's
//     NCHW K = 3 layers (H200; benchmarks/notes/single_channel.md, round 9); and where planes
//     start mid-sector (OH x OW = 4 mod 8), in sector pairs (flat_pairs): 0.90-0.97x (round 32).
//   LAYOUT 1 (y_sc == 1, e.g. NHWC): lanes run along m; a thread's 8 filters are two runs of
//     4 (g*4 and g*4 + MB/2) so that the lanes of one pixel store contiguous float4s.
//   Any other strides are written with scalar stores (correct, slower).
// Filters are staged into shared memory as [filter group][kh][kw][8] whatever their layout
// (OIHW, HWIO), so the compute reads a thread's 8 weights of a tap with two 16-byte
// (broadcast) loads at compile-time offsets. Work indices (tiles, items) are decoded with
// multiply-high divisions by launch constants (fast_divide.h): the decode ran ~2x the FFMA
// count on small tiles with runtime 64-/32-bit divisions.
// ---------------------------------------------------------------------------------------
#include <cstdint>
#include <algorithm>

#include "cp_async.cuh"
#include "fast_divide.h"
#include "kernels.h"
#include "launch_util.h"
#include "register_tile.cuh"
#include "winograd_f45.cuh"

namespace fastconv {
namespace {

constexpr int kTM = 8;  // filters per thread (the planner's unit: MB is a multiple of it)
constexpr int kTM4 = 4;  // filters per thread of the 4-filter instances (see pick_tm)
constexpr int kTP = 4;  // output columns per thread (the general instances)
constexpr int kTP8 = 8;  // output columns per thread of the 8-column instances (see pick_tp)
constexpr int kMaxThreads = 256;
#ifndef SC_MIN_BLOCKS
#define SC_MIN_BLOCKS 2
#endif
#ifndef SC_IN_KB
#define SC_IN_KB 48
#endif

struct SCArgs {
  int RB, CB, MB;            // tile: rows, cols, filters
  int n_rb, n_cb, n_g;       // tile counts along rows, cols, filter groups
  int N;                     // batch
  long long ntiles;
  int order;                 // 1: (g, n, rb, cb); 2: (n, rb, cb, g)
  int SW;                    // shared input row stride (floats, multiple of 4)
  int in_rows;               // RB + KH - 1
  int in_floats, w_floats;   // one buffer each
  int prefetch;
  int vec;                   // vector stores allowed for this layout
  int vec16;                 // every full 4-wide store of this launch is 16-byte aligned
  int KH, KW;
  int tm;                    // filters per thread: kTM, or kTM4 (pick_tm)
  int GM;                    // MB / tm: filter groups of a thread per tile
  int cpr;                   // column chunks (tp wide) per tile row: ceil(CB / tp)
  int items;                 // work items per tile: GM x RB x cpr (edge tiles skip some)
  int tiles32;               // ntiles < 2^31: tile decode by FastDiv
  int in_vec;                // input rows staged in 16-byte copies (launch: see stage_input)
  int w_vec;                 // filters staged in 16-byte copies (launch: see stage_filters)
  int flat;                  // LAYOUT 0 chunks over the tile's flattened pixels (flat_chunks)
  int OWc, dsw;              // flat: output width, SW - OW (the next row's shift in the patch)
  int items_flat;            // flat: GM x RB x OW / 4
  FastDiv fd_cpr, fd_rb, fd_gm, fd_ncb, fd_nrb, fd_n, fd_ng;
  FastDiv fd_kk, fd_kw, fd_sw4;  // staging decode: taps, kernel width, 16-byte chunks per line
  FastDiv fd_nq, fd_ow;          // flat: chunks per tile (RB x OW / 4), output width
  int tp;                        // output columns per thread: kTP, or kTP8 (pick_tp); last in
                                 // the struct: the 4-column instances' code stays as it was
  // Row-Winograd products (plan[6] & 2, 5x5 only; f45_* below): nc chunks of 4 output columns
  // per tile row, transformed rows of DW = 8 nc floats, a thread's chunks q and q + Qh of the
  // tile's RB x nc.
  int wino, nc, DW, Qh;
  FastDiv fd_nc;
  // Sector pairs (flat only; flat_pairs): a chunk's 32-byte sector partner is stored by the same
  // warp instruction. fstep: filters of a thread's run lie fstep apart (2: one parity per
  // thread, where planes alternate 32-byte phase); w_run = fstep x w_so, the run's source step.
  int pairs, fstep;
  long long w_run;
};

struct Tile {
  int g, n, rb, cb;
};

__device__ __forceinline__ Tile decode(const SCArgs& a, long long t) {
  Tile r;
  if (a.tiles32) {  // the common case: multiply-high divisions (a 64-bit division is ~100 instr.)
    uint32_t u = uint32_t(t);
    if (a.order == 1) {
      u = a.fd_ncb.divmod(u, &r.cb);
      u = a.fd_nrb.divmod(u, &r.rb);
      r.g = int(a.fd_n.divmod(u, &r.n));
    } else {
      u = a.fd_ng.divmod(u, &r.g);
      u = a.fd_ncb.divmod(u, &r.cb);
      r.n = int(a.fd_nrb.divmod(u, &r.rb));
    }
    return r;
  }
  if (a.order == 1) {
    r.cb = int(t % a.n_cb); t /= a.n_cb;
    r.rb = int(t % a.n_rb); t /= a.n_rb;
    r.n = int(t % a.N);
    r.g = int(t / a.N);
  } else {
    r.g = int(t % a.n_g); t /= a.n_g;
    r.cb = int(t % a.n_cb); t /= a.n_cb;
    r.rb = int(t % a.n_rb); t /= a.n_rb;
    r.n = int(t);
  }
  return r;
}

// Input patch of tile (n, rb, cb): rows oh0 - pad_top + r, cols ow0 - pad_left + c, c < SW.
// With in_vec (rows contiguous and 16-byte aligned: x_sw == 1, x_sh and x_sn multiples of 4,
// an aligned base) and a patch that starts on a multiple of 4 columns, whole 16-byte chunks
// are copied (zero-filled outside the map) and the lanes run over all lines x chunks at once:
// the 4-byte copies of one warp per line were ~10% of the instructions of small tiles (ncu,
// b32 28x28 M512 K5, H200).
__device__ __forceinline__ void stage_input(const ConvParams& p, const SCArgs& a, const Tile& t,
                                            const float* __restrict__ x, float* s) {
  const long long ih0 = (long long)t.rb * a.RB - p.pad_top;
  const long long iw0 = (long long)t.cb * a.CB - p.pad_left;
  const float* xn = x + t.n * p.x_sn;
  if (a.in_vec && (iw0 & 3) == 0) {
    const int total = a.in_rows * (a.SW >> 2);
    for (int e = threadIdx.x; e < total; e += blockDim.x) {
      int c4;
      const int r = int(a.fd_sw4.divmod(uint32_t(e), &c4));
      const long long ih = ih0 + r, iw = iw0 + 4 * c4;
      float* dst = s + r * a.SW + 4 * c4;
      const bool row_ok = ih >= 0 && ih < p.H;
      const float* src = xn + (row_ok ? ih : 0) * p.x_sh + iw;
      if (row_ok && iw >= 0 && iw + 4 <= p.W) {
        cp_async16(dst, src, true);
      } else if (!row_ok || iw + 4 <= 0 || iw >= p.W) {
        cp_async16(dst, x, false);  // wholly padding: zeros
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const bool ok = iw + q >= 0 && iw + q < p.W;
          cp_async4(dst + q, ok ? src + q : x, ok);
        }
      }
    }
    return;
  }
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
  for (int r = warp; r < a.in_rows; r += nwarps) {
    const long long ih = ih0 + r;
    const bool row_ok = ih >= 0 && ih < p.H;
    const float* xr = xn + (row_ok ? ih : 0) * p.x_sh;
    float* sr = s + r * a.SW;
    for (int c = lane; c < a.SW; c += 32) {
      const long long iw = iw0 + c;
      const bool ok = row_ok && iw >= 0 && iw < p.W;
      cp_async4(sr + c, ok ? xr + iw * p.x_sw : x, ok);
    }
  }
}

// The first filter of thread group gl's run 0 within its tile's MB: runs of 4 consecutive
// filters (gl * 4), or with fstep 2 (flat_pairs) filters 8j + {0, 2, 4, 6} for gl = 2j and
// 8j + {1, 3, 5, 7} for gl = 2j + 1, so that a thread's planes share one 32-byte phase.
__device__ __forceinline__ int run_base(const SCArgs& a, int gl) {
  return a.fstep == 2 ? ((gl >> 1) << 3) + (gl & 1) : gl * 4;
}

// Run e of stage_filters' fill, decoded: its 4 filters m + q x fstep (q < 4; m returned)
// go to s + *slot and come from w + *src (tap kh, kw). m0 = g * MB, half = MB / (TM / 4). The
// decode divides by launch constants: two runtime divisions per element were 16% of the
// instructions of small tiles (ncu, b32 28x28 M512 K5, H200).
template <int TM>
__device__ __forceinline__ int filter_run(const ConvParams& p, const SCArgs& a, int m0, int half,
                                          int e, int* slot, int* src) {
  constexpr int kNH = TM / 4;  // runs of 4 filters per thread (fstep apart)
  const int t = e / kNH, h = e % kNH;  // t = gl * KK + tap
  int k, kw;
  const int gl = int(a.fd_kk.divmod(uint32_t(t), &k));
  const int kh = int(a.fd_kw.divmod(uint32_t(k), &kw));
  const int m = m0 + run_base(a, gl) + h * half;
  *slot = t * TM + 4 * h;
  *src = m * p.w_so + kh * p.w_sh + kw * p.w_sw;
  return m;
}

// Filters of group g as [gl][kh][kw][8]: the kTM = 8 filters a thread of filter group gl
// uses (local m = gl*4 + 0..3 and MB/2 + gl*4 + 0..3, see compute_tile; run_base with fstep 2)
// lie together for every tap, so the compute reads them at compile-time offsets; zeros past
// M. Filled by runs of 4 slots (gl, tap, half h) = 4 filters: one 16-byte copy with w_vec
// (filter-contiguous filters, HWIO, with 16-byte aligned taps), else four 4-byte copies; the
// runs from e0 on (stage_first_tile loads the first blockDim into registers).
template <int TM>
__device__ __forceinline__ void stage_filters(const ConvParams& p, const SCArgs& a, int g,
                                              const float* __restrict__ w, float* s,
                                              int e0 = 0) {
  const int runs = a.GM * a.KH * a.KW * (TM / 4);
  const int m0 = g * a.MB, half = a.MB / (TM / 4);
  for (int e = e0 + threadIdx.x; e < runs; e += blockDim.x) {
    int slot, off;
    const int m = filter_run<TM>(p, a, m0, half, e, &slot, &off);
    float* dst = s + slot;
    const float* src = w + off;
    if (a.w_vec && m + 4 <= p.M) {
      cp_async16<true>(dst, src, true);  // every block reads them: through L1 (cp_async.cuh)
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const bool ok = m + q * a.fstep < p.M;
        cp_async4(dst + q, ok ? src + q * a.w_run : w, ok);
      }
    }
  }
}

// One 16-byte global store (ptr 16-byte aligned). Written as PTX because nvcc merged the
// tails of the aligned and the scalar store paths and split half of these into 4-byte stores
// (NHWC batch 32 ran 2.4x slower that way). Streaming (.cs: evict-first in L2): the output is
// written once and is most of the traffic, so it should not push out of L2 what the next
// launch reads again (code, parameters, filters): 0.98x the time over the 42 paper-single
// layers with a floor >= 8 us (0.93-1.00x; H100, benchmarks/notes/single_channel.md round 12).
__device__ __forceinline__ void st4(float* ptr, const float (&v)[4]) {
#ifdef SC_NO_STORES  // driver experiments: the compute alone (a store that never happens)
  if (v[0] != -1.2345e-38f) return;
#endif
  asm volatile(
      "{\n .reg .u64 g;\n cvta.to.global.u64 g, %0;\n"
      " st.global.cs.v4.f32 [g], {%1, %2, %3, %4};\n}\n" ::"l"(ptr),
      "f"(v[0]), "f"(v[1]), "f"(v[2]), "f"(v[3]));
}

// acc[i][j] = sum over taps of filter i (this thread's TM) x input column j (its TP): srow is
// the thread's first input in the patch, swg its filter group's [tap][TM] weights.
template <int KH_T, int KW_T, int TM, int TP>
__device__ __forceinline__ void compute_item(const SCArgs& a, const float* __restrict__ srow,
                                             const float* __restrict__ swg,
                                             float (&acc)[TM][TP]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TP; ++j) acc[i][j] = 0.f;

  if constexpr (KH_T > 0 && KW_T > 0) {
    // The row window: TP + KW - 1 inputs, read as float4s (TP = 4: rounded up to whole
    // float4s, as measured) or, for TP = 8, float4s and a float2 tail, so that the reads stay
    // inside SW = sw_for(CB, KW) for every 3x3 / 7x7 tile width.
    constexpr int NW = TP + KW_T - 1;
    constexpr int N4 = TP == kTP ? (NW + 3) / 4 : NW / 4;
    constexpr int N2 = TP == kTP ? 0 : (NW - 4 * N4 + 1) / 2;
    constexpr int NV = 4 * N4 + 2 * N2;
#pragma unroll
    for (int kh = 0; kh < KH_T; ++kh) {
      float v[NV];
      const float4* s4 = reinterpret_cast<const float4*>(srow + kh * a.SW);
#pragma unroll
      for (int q = 0; q < N4; ++q) {
        const float4 f = s4[q];
        v[4 * q] = f.x; v[4 * q + 1] = f.y; v[4 * q + 2] = f.z; v[4 * q + 3] = f.w;
      }
#pragma unroll
      for (int q = 0; q < N2; ++q) {
        const float2 f = reinterpret_cast<const float2*>(srow + kh * a.SW + 4 * N4)[q];
        v[4 * N4 + 2 * q] = f.x; v[4 * N4 + 2 * q + 1] = f.y;
      }
#pragma unroll
      for (int kw = 0; kw < KW_T; ++kw) {
        float wv[TM];
        load_weights<TM>(swg + (kh * KW_T + kw) * TM, wv);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TP; ++j) acc[i][j] = fmaf(wv[i], v[j + kw], acc[i][j]);
      }
    }
  } else {
    const int KH = a.KH, KW = a.KW;
#pragma unroll 1
    for (int kh = 0; kh < KH; ++kh) {
#pragma unroll 1
      for (int kw = 0; kw < KW; ++kw) {
        const float* sp = srow + kh * a.SW + kw;
        float v[TP];
#pragma unroll
        for (int j = 0; j < TP; ++j) v[j] = sp[j];
        float wv[TM];
        load_weights<TM>(swg + (kh * KW + kw) * TM, wv);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TP; ++j) acc[i][j] = fmaf(wv[i], v[j], acc[i][j]);
      }
    }
  }
}

// Flat chunks (LAYOUT 0, rows of the output contiguous, OW = 2 mod 4): the thread's 4 outputs
// are 4 consecutive pixels of the tile's flattened rows, so every chunk starts 16-byte aligned
// in the output plane; its first `split` outputs lie in row r (srow = its first input there),
// the rest (WRAP, split < 4) at the start of row r + 1, whose inputs sit dsw = SW - OW floats
// further in the patch. Windows are read as float2 (c is even, not always a multiple of 4).
template <int KH_T, int KW_T, bool WRAP>
__device__ __forceinline__ void compute_item_flat(const SCArgs& a, const float* __restrict__ srow,
                                                  int split, const float* __restrict__ swg,
                                                  float (&acc)[kTM][kTP]) {
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTP; ++j) acc[i][j] = 0.f;
  constexpr int NV = (kTP + KW_T - 1 + 1) / 2 * 2;
#pragma unroll
  for (int kh = 0; kh < KH_T; ++kh) {
    float v[NV], u[NV];
    const float2* s2 = reinterpret_cast<const float2*>(srow + kh * a.SW);
#pragma unroll
    for (int q = 0; q < NV / 2; ++q) {
      const float2 f = s2[q];
      v[2 * q] = f.x; v[2 * q + 1] = f.y;
    }
    if (WRAP) {
      const float2* t2 = reinterpret_cast<const float2*>(srow + kh * a.SW + a.dsw);
#pragma unroll
      for (int q = 0; q < NV / 2; ++q) {
        const float2 f = t2[q];
        u[2 * q] = f.x; u[2 * q + 1] = f.y;
      }
    }
#pragma unroll
    for (int kw = 0; kw < KW_T; ++kw) {
      float wv[kTM];
      load_weights<kTM>(swg + (kh * KW_T + kw) * kTM, wv);
      float xv[kTP];
#pragma unroll
      for (int j = 0; j < kTP; ++j) xv[j] = (WRAP && j >= split) ? u[j + kw] : v[j + kw];
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTP; ++j) acc[i][j] = fmaf(wv[i], xv[j], acc[i][j]);
    }
  }
}

// Items of a tile: (gl, r, c) = filter group, output row, TP-column chunk, enumerated over the
// full RB x cpr so that the decode divides by launch constants; items past the edge of the
// map (last row band / column tile) are skipped.
//   LAYOUT 0: c fastest, then r, then gl: lanes run along ow (16-byte stores per filter row).
//   LAYOUT 1: gl fastest, then c, then r: lanes of one pixel hold consecutive filter groups.
template <int KH_T, int KW_T, int LAYOUT, int TM, int TP>
__device__ __forceinline__ void compute_tile(const ConvParams& p, const SCArgs& a, const Tile& t,
                                             const float* __restrict__ sin,
                                             const float* __restrict__ sw,
                                             float* __restrict__ y) {
  const int oh0 = t.rb * a.RB, ow0 = t.cb * a.CB, m0g = t.g * a.MB;
  const int RBt = min(a.RB, int(p.OH) - oh0);
  const int CBt = min(a.CB, int(p.OW) - ow0);
  constexpr int kNH = TM / 4;  // runs of 4 consecutive filters per thread
  static_assert(LAYOUT == 1 || TP == kTP, "8 columns per thread: LAYOUT 1 only (pick_tp)");
  const int half = a.MB / kNH;  // multiple of 4
  const int KK = (KH_T > 0 && KW_T > 0) ? KH_T * KW_T : a.KH * a.KW;
  float* yt = y + t.n * p.y_sn + (long long)m0g * p.y_sc + (long long)oh0 * p.y_sh +
              (long long)ow0 * p.y_sw;
  for (int it = threadIdx.x; it < a.items; it += blockDim.x) {
    int gl, r, c;
    if (LAYOUT == 0) {
      gl = int(a.fd_rb.divmod(a.fd_cpr.divmod(it, &c), &r));
    } else {
      r = int(a.fd_cpr.divmod(a.fd_gm.divmod(it, &gl), &c));
    }
    const int crem = CBt - c * TP;  // columns left in this tile row
    if (r >= RBt || crem <= 0) continue;
    float acc[TM][TP];
    // thread's filters: local m = gl*4 + h*half + (0..3), h < TM / 4 (acc rows 4h..4h+3), so
    // that in LAYOUT 1 the lanes of one pixel write contiguous 16-byte pieces (full sectors).
    compute_item<KH_T, KW_T, TM, TP>(a, sin + r * a.SW + c * TP, sw + gl * KK * TM, acc);

    float* yrc = yt + (long long)r * p.y_sh + (long long)(c * TP) * p.y_sw;
    const int mrem1 = int(p.M) - (m0g + gl * 4 + (kNH - 1) * half);  // filters left from the last run
    if (a.vec16 && mrem1 >= 4 && crem >= TP) {
      // interior item, aligned layout: TM x TP / 4 unconditional 16-byte stores
#pragma unroll
      for (int h = 0; h < kNH; ++h) {
        float* yb = yrc + (long long)(gl * 4 + h * half) * p.y_sc;
        if constexpr (LAYOUT == 0) {
#pragma unroll
          for (int i = 0; i < 4; ++i) st4(yb + i * p.y_sc, acc[4 * h + i]);
        } else {
#pragma unroll
          for (int j = 0; j < TP; ++j) {
            const float v[4] = {acc[4 * h][j], acc[4 * h + 1][j], acc[4 * h + 2][j], acc[4 * h + 3][j]};
            st4(yb + j * p.y_sw, v);
          }
        }
      }
      continue;
    }
#pragma unroll
    for (int h = 0; h < kNH; ++h) {
      const int mlh = gl * 4 + h * half;         // first local filter of this half
      const int mrem = int(p.M) - (m0g + mlh);   // filters left in the problem
      float* yb = yrc + (long long)mlh * p.y_sc;
      if constexpr (LAYOUT == 0) {
        const bool full = a.vec && crem >= kTP;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          if (i < mrem) {
            float* ym = yb + i * p.y_sc;
            const uintptr_t addr = reinterpret_cast<uintptr_t>(ym);
            if (full && (addr & 15) == 0) {
              st4(ym, acc[4 * h + i]);
            } else if (full && (addr & 7) == 0) {
              __stcs(reinterpret_cast<float2*>(ym), make_float2(acc[4 * h + i][0], acc[4 * h + i][1]));
              __stcs(reinterpret_cast<float2*>(ym + 2), make_float2(acc[4 * h + i][2], acc[4 * h + i][3]));
            } else {
#pragma unroll
              for (int j = 0; j < kTP; ++j)
                if (j < crem) __stcs(ym + j * p.y_sw, acc[4 * h + i][j]);
            }
          }
        }
      } else {
        const bool full = a.vec && mrem >= 4;
#pragma unroll
        for (int j = 0; j < TP; ++j) {
          if (j < crem) {
            float* yp = yb + j * p.y_sw;
            const uintptr_t addr = reinterpret_cast<uintptr_t>(yp);
            if (full && (addr & 15) == 0) {
              const float v[4] = {acc[4 * h][j], acc[4 * h + 1][j], acc[4 * h + 2][j], acc[4 * h + 3][j]};
              st4(yp, v);
            } else {
#pragma unroll
              for (int i = 0; i < 4; ++i)
                if (i < mrem) __stcs(yp + i * p.y_sc, acc[4 * h + i][j]);
            }
          }
        }
      }
    }
  }
}

// The items of a tile in flat chunks (compute_item_flat; launch: flat_chunks): (gl, q) = filter
// group, 4-pixel chunk of the tile's flattened rows, chunk fastest; chunks past the tile skipped.
// With a.pairs (flat_pairs) a group has an even count of items and item q holds chunk q - s,
// s = 1 where the thread's planes put chunk 0 in the second half of a 32-byte sector: every
// warp then writes whole sectors but at a tile's or plane's ends. A sector half-written by a
// warp and completed later (or never) costs far more than its bytes (single_channel.md round 32).
template <int KH_T, int KW_T>
__device__ __forceinline__ void compute_tile_flat(const ConvParams& p, const SCArgs& a,
                                                  const Tile& t, const float* __restrict__ sin,
                                                  const float* __restrict__ sw,
                                                  float* __restrict__ y) {
  const int oh0 = t.rb * a.RB, m0g = t.g * a.MB;
  const int RBt = min(a.RB, int(p.OH) - oh0);
  constexpr int kNH = kTM / 4;
  const int half = a.MB / kNH;
  constexpr int KK = KH_T * KW_T;
  // rows back to back: output (oh0 + r, c) of filter m is yt[m * y_sc + r * OW + c]
  float* yt = y + t.n * p.y_sn + (long long)m0g * p.y_sc + (long long)oh0 * p.y_sh;
  const int nvalid = RBt * a.OWc;
  for (int it = threadIdx.x; it < a.items_flat; it += blockDim.x) {
    int q;
    const int gl = int(a.fd_nq.divmod(uint32_t(it), &q));
    const int mb = run_base(a, gl);  // the thread's first local filter
    if (a.pairs) q -= int((reinterpret_cast<uintptr_t>(yt + (long long)mb * p.y_sc) >> 4) & 1);
    const int p0 = 4 * q;
    if (p0 < 0 || p0 >= nvalid) continue;
    int c;
    const int r = int(a.fd_ow.divmod(uint32_t(p0), &c));
    const int split = a.OWc - c;
    float acc[kTM][kTP];
    const float* srow = sin + r * a.SW + c;
    const float* swg = sw + gl * KK * kTM;
    if (__any_sync(__activemask(), split < kTP))
      compute_item_flat<KH_T, KW_T, true>(a, srow, split, swg, acc);
    else
      compute_item_flat<KH_T, KW_T, false>(a, srow, kTP, swg, acc);
    const int nout = min(kTP, nvalid - p0);
    float* yp = yt + p0;  // rows contiguous: (oh0 + r) * OW + c = oh0 * OW + p0
#pragma unroll
    for (int h = 0; h < kNH; ++h)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int ml = mb + h * half + i * a.fstep;
        if (m0g + ml >= p.M) continue;
        float* ym = yp + (long long)ml * p.y_sc;
        if (nout == kTP) {
          st4(ym, acc[4 * h + i]);
        } else {
#pragma unroll
          for (int j = 0; j < kTP; ++j)
            if (j < nout) __stcs(ym + j, acc[4 * h + i][j]);
        }
      }
  }
}

// This block's tiles [t0, t1): a contiguous range of the persistent grid's (prefetch), or tile
// blockIdx.x (volume). False when the range is empty.
__device__ __forceinline__ bool block_tiles(const SCArgs& a, long long* t0, long long* t1) {
  if (a.prefetch) {
    *t0 = (long long)blockIdx.x * a.ntiles / gridDim.x;
    *t1 = (long long)(blockIdx.x + 1) * a.ntiles / gridDim.x;
  } else {
    *t0 = blockIdx.x;
    *t1 = *t0 + 1;
  }
  return *t0 < *t1;
}

// A block's first tile t0, decoded and staged (input patch into in_buf, filters into w_buf),
// its copies landed for the whole block. With kRegFilters the filters' loads leave first (one
// run a thread, into registers; the rest by cp.async), ahead of the input patch's copies:
// behind them, a cold first tile under XLA waited for both (b1 NHWC FFMA 0.2-0.3 us of 4-12
// us; single_channel.md round 31). The row-Winograd kernel keeps the copies in the old order
// (at its 128-register cap the loads spilled it).
template <int TM, bool kRegFilters = true>
__device__ __forceinline__ Tile stage_first_tile(const ConvParams& p, const SCArgs& a, long long t0,
                                                 const float* __restrict__ x,
                                                 const float* __restrict__ w, float* in_buf,
                                                 float* w_buf) {
  const Tile cur = decode(a, t0);
  if constexpr (kRegFilters) {
    // filter_run's run threadIdx.x, loaded as stage_filters copies it
    int slot = -1, off = 0;  // slot -1: no run for this thread
    float4 v{};
    if (int(threadIdx.x) < a.GM * a.KH * a.KW * (TM / 4)) {
      const int m = filter_run<TM>(p, a, cur.g * a.MB, a.MB / (TM / 4), threadIdx.x, &slot, &off);
      const float* src = w + off;
      if (a.w_vec && m + 4 <= p.M) {
        v = __ldg(reinterpret_cast<const float4*>(src));
      } else {
        v.x = m < p.M ? __ldg(src) : 0.f;
        v.y = m + a.fstep < p.M ? __ldg(src + a.w_run) : 0.f;
        v.z = m + 2 * a.fstep < p.M ? __ldg(src + 2 * a.w_run) : 0.f;
        v.w = m + 3 * a.fstep < p.M ? __ldg(src + 3 * a.w_run) : 0.f;
      }
    }
    stage_input(p, a, cur, x, in_buf);
    stage_filters<TM>(p, a, cur.g, w, w_buf, blockDim.x);
    if (slot >= 0) *reinterpret_cast<float4*>(w_buf + slot) = v;
  } else {
    stage_input(p, a, cur, x, in_buf);
    stage_filters<TM>(p, a, cur.g, w, w_buf);
  }
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  return cur;
}

// The next tile t of a block's range, decoded, with copies of what it does not share with cur
// started and committed: its input patch into in_base + in_sel x in_floats, its filter group
// into w_base + w_sel x w_floats (the double buffers' other half, or the one buffer that the
// row-Winograd kernel transforms from). Both kernels' tile loops stage their next tile here.
template <int TM>
__device__ __forceinline__ Tile stage_next_tile(const ConvParams& p, const SCArgs& a,
                                                const Tile& cur, long long t,
                                                const float* __restrict__ x,
                                                const float* __restrict__ w, float* in_base,
                                                int in_sel, float* w_base, int w_sel,
                                                bool* new_in, bool* new_w) {
  const Tile nxt = decode(a, t);
  *new_in = nxt.n != cur.n || nxt.rb != cur.rb || nxt.cb != cur.cb;
  *new_w = nxt.g != cur.g;
  if (*new_in) stage_input(p, a, nxt, x, in_base + in_sel * a.in_floats);
  if (*new_w) stage_filters<TM>(p, a, nxt.g, w, w_base + w_sel * a.w_floats);
  cp_async_commit();
  return nxt;
}

// 3 blocks of 256 for the 4 x 4 register tile (78-80 registers), 2 for 8 x 4 and 4 x 8.
template <int TM, int TP>
constexpr int min_blocks() { return TM == kTM4 && TP == kTP ? 3 : SC_MIN_BLOCKS; }

template <int KH_T, int KW_T, int LAYOUT, bool FLAT, int TM, int TP>
__global__ void __launch_bounds__(kMaxThreads, min_blocks<TM, TP>())
    single_channel_kernel(const ConvParams p, const SCArgs a, const float* __restrict__ x,
                          const float* __restrict__ w, float* __restrict__ y) {
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const int nbuf = a.prefetch ? 2 : 1;
  float* sin0 = smem;
  float* sw0 = smem + nbuf * a.in_floats;

  long long t0, t1;
  if (!block_tiles(a, &t0, &t1)) return;

  Tile cur = stage_first_tile<TM>(p, a, t0, x, w, sin0, sw0);

  int ic = 0, wc = 0;
  for (long long t = t0; t < t1; ++t) {
    const bool has_next = t + 1 < t1;
    Tile nxt = cur;
    bool new_in = false, new_w = false;
    if (has_next)
      nxt = stage_next_tile<TM>(p, a, cur, t + 1, x, w, sin0, ic ^ 1, sw0, wc ^ 1, &new_in, &new_w);
    if constexpr (FLAT)
      compute_tile_flat<KH_T, KW_T>(p, a, cur, sin0 + ic * a.in_floats, sw0 + wc * a.w_floats, y);
    else
      compute_tile<KH_T, KW_T, LAYOUT, TM, TP>(p, a, cur, sin0 + ic * a.in_floats,
                                               sw0 + wc * a.w_floats, y);
    if (has_next) {
      cp_async_wait<0>();
      __syncthreads();
      ic ^= int(new_in);
      wc ^= int(new_w);
      cur = nxt;
    }
  }
}

// ---- Row-Winograd products (plan[6] & 2; 5x5 kernels): F(4, 5) along each row -------------
// A thread's item is 4 filters (group gl) x 2 chunks of 4 output columns (chunks q and q + Qh of
// the tile's RB x nc); per filter row kh it reads its 2 chunks' 8 transformed inputs and its 4
// filters' 8 transformed taps and does 64 FMAs where the direct sum does 160 (20 per filter and
// chunk), then transforms back once per filter and chunk. Lanes: NHWC-like outputs (LAYOUT 1)
// run gl fastest (the 8 groups of a pixel store 128 contiguous bytes, and read 128 contiguous
// bytes of filters); NCHW-like ones 8 consecutive chunks x 4 groups (each filter's 8 chunks
// store 128 contiguous bytes; a warp's 4 groups read 64 bytes of filters, its 8 chunks 128
// contiguous bytes of inputs: one shared wavefront each). Each tile's staged rows and each new
// filter group are transformed once, after they land (f45_transform_*), into single buffers the
// items read; the raw copies of the next tile are then already in flight.
constexpr int kF45Taps = 5 * 8;                // transformed taps of a filter (KH x 8)
constexpr int kF45Group = 4 * kF45Taps + 4;    // floats per filter group; +4: 8 groups' reads
                                               // fall in distinct banks
// Transformed inputs and taps are products' operands only while within +-kF45Max: then every
// sum of products and its A^T transform stays finite (< 20 x 5 x 1e36), and so does the direct
// sum. A tile with any other value (inf, NaN, or huge) is computed by direct sums instead
// (f45_direct_chunk), so that inf and NaN inputs give the direct convolution's infs and NaNs.
constexpr float kF45Max = 1e18f;
__device__ __forceinline__ bool f45_out_of_range(const float (&v)[8]) {
  bool bad = false;
#pragma unroll
  for (int e = 0; e < 8; ++e) bad |= !(fabsf(v[e]) <= kF45Max);  // NaN compares false
  return bad;
}

// Chunk c of staged row r (columns 4c .. 4c + 7) -> dt[r * DW + 4 nc h + 4c + e], e < 4, for
// its transformed values 4h + e: consecutive chunks' halves are contiguous, so that 8 lanes on
// 8 consecutive chunks read 128 contiguous bytes. Returns whether this thread wrote a value out
// of kF45Max's range.
__device__ __forceinline__ bool f45_transform_input(const SCArgs& a, const float* __restrict__ raw,
                                                    float* __restrict__ dt) {
  bool bad = false;
  const int total = a.in_rows * a.nc;
  for (int i = threadIdx.x; i < total; i += blockDim.x) {
    int c;
    const int r = int(a.fd_nc.divmod(uint32_t(i), &c));
    const float4* s4 = reinterpret_cast<const float4*>(raw + r * a.SW + 4 * c);
    const float4 lo = s4[0], hi = s4[1];
    const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    float d[8];
    f45_input(v, d);
    bad |= f45_out_of_range(d);
    float* o = dt + r * a.DW + 4 * c;
    *reinterpret_cast<float4*>(o) = make_float4(d[0], d[1], d[2], d[3]);
    *reinterpret_cast<float4*>(o + 4 * a.nc) = make_float4(d[4], d[5], d[6], d[7]);
  }
  return bad;
}

// Filter rows staged as stage_filters<kTM4> leaves them ([gl][kh][kw][4]) -> gt[gl * kF45Group +
// (kh * 8 + e) * 4 + q] for filter gl * 4 + q. Returns whether this thread wrote a value out of
// kF45Max's range.
__device__ __forceinline__ bool f45_transform_filters(const SCArgs& a, const float* __restrict__ raw,
                                                      float* __restrict__ gt) {
  bool bad = false;
  const int total = a.GM * 5 * 4;
  for (int i = threadIdx.x; i < total; i += blockDim.x) {
    const int q = i & 3, t = i >> 2, gl = t / 5, kh = t - 5 * gl;
    float wr[5], g[8];
#pragma unroll
    for (int k = 0; k < 5; ++k) wr[k] = raw[(gl * 25 + kh * 5 + k) * 4 + q];
    f45_filter(wr, g);
    bad |= f45_out_of_range(g);
#pragma unroll
    for (int k = 0; k < 8; ++k) gt[gl * kF45Group + (kh * 8 + k) * 4 + q] = g[k];
  }
  return bad;
}

// The direct sums of one chunk of 4 filters x 4 columns (the FFMA kernel's order), written to y:
// for the tiles whose transforms left kF45Max's range.
__device__ __forceinline__ void f45_direct_chunk(const ConvParams& p, const Tile& t, int oh,
                                                 int ow0, int ncol, int m0,
                                                 const float* __restrict__ x,
                                                 const float* __restrict__ w, float* __restrict__ y) {
  const float* xn = x + t.n * p.x_sn;
#pragma unroll 1
  for (int j = 0; j < ncol; ++j) {
    const int ow = ow0 + j;
#pragma unroll 1
    for (int m = m0; m < min(m0 + 4, int(p.M)); ++m) {
      float acc = 0.f;
#pragma unroll 1
      for (int kh = 0; kh < 5; ++kh) {
        const long long ih = oh + kh - p.pad_top;
#pragma unroll 1
        for (int kw = 0; kw < 5; ++kw) {
          const long long iw = ow + kw - p.pad_left;
          const bool ok = ih >= 0 && ih < p.H && iw >= 0 && iw < p.W;
          const float xv = ok ? xn[ih * p.x_sh + iw * p.x_sw] : 0.f;
          acc = fmaf(w[m * p.w_so + kh * p.w_sh + kw * p.w_sw], xv, acc);
        }
      }
      __stcs(y + t.n * p.y_sn + (long long)m * p.y_sc + (long long)oh * p.y_sh +
                 (long long)ow * p.y_sw, acc);
    }
  }
}

// The items of a tile (see above). LAYOUT 0: y_sw == 1 (16-byte stores along ow per filter);
// 1: y_sc == 1 (16-byte stores of a pixel's 4 filters); a.vec16 == 0: scalar stores.
template <int LAYOUT>
__device__ __forceinline__ void f45_compute_tile(const ConvParams& p, const SCArgs& a, const Tile& t,
                                                 const float* __restrict__ dt,
                                                 const float* __restrict__ gt,
                                                 const float* __restrict__ x,
                                                 const float* __restrict__ w,
                                                 float* __restrict__ y, bool direct) {
  const int oh0 = t.rb * a.RB, ow0 = t.cb * a.CB, m0g = t.g * a.MB;
  const int RBt = min(a.RB, int(p.OH) - oh0);
  const int CBt = min(a.CB, int(p.OW) - ow0);
  const int nq = a.RB * a.nc;  // chunks of the full tile; edge tiles skip those past the map
  // offsets inside a tile fit 32 bits (f45_offsets_fit): no 64-bit address math per store
  const int ysc = int(p.y_sc), ysh = int(p.y_sh), ysw = int(p.y_sw);
  float* yt = y + t.n * p.y_sn + (long long)m0g * p.y_sc + (long long)oh0 * p.y_sh +
              (long long)ow0 * p.y_sw;
  for (int it = threadIdx.x; it < a.items; it += blockDim.x) {
    int gl, q;
    if (LAYOUT == 0) {  // 8 consecutive chunks x 4 filter groups per warp
      const int qh = int(a.fd_gm.divmod(uint32_t(it) >> 3, &gl));
      q = 8 * qh + (it & 7);
    } else {            // filter groups fastest
      q = int(a.fd_gm.divmod(uint32_t(it), &gl));
    }
    if (q >= a.Qh) continue;
    int r[2], c[2];
    r[0] = int(a.fd_nc.divmod(uint32_t(q), &c[0]));
    r[1] = int(a.fd_nc.divmod(uint32_t(q + a.Qh), &c[1]));
    bool ok[2];
    ok[0] = r[0] < RBt && 4 * c[0] < CBt;
    ok[1] = q + a.Qh < nq && r[1] < RBt && 4 * c[1] < CBt;
    if (!ok[0] && !ok[1]) continue;
    const int m0 = m0g + gl * 4, mrem = int(p.M) - m0;
    if (direct) {
#pragma unroll
      for (int k = 0; k < 2; ++k)
        if (ok[k])
          f45_direct_chunk(p, t, oh0 + r[k], ow0 + 4 * c[k], min(CBt - 4 * c[k], 4), m0, x, w, y);
      continue;
    }
    float acc[2][4][8];
#pragma unroll
    for (int k = 0; k < 2; ++k)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[k][i][e] = 0.f;
    // a chunk past the tile reads chunk 0's row 0 (in the buffer) and is never stored
    const float* d0 = dt + (ok[0] ? r[0] * a.DW + 4 * c[0] : 0);
    const float* d1 = dt + (ok[1] ? r[1] * a.DW + 4 * c[1] : 0);
    const int hoff = 4 * a.nc;
    const float* g = gt + gl * kF45Group;
#pragma unroll
    for (int kh = 0; kh < 5; ++kh) {
      float v[2][8];
      const float4 a0 = *reinterpret_cast<const float4*>(d0 + kh * a.DW);
      const float4 a1 = *reinterpret_cast<const float4*>(d0 + kh * a.DW + hoff);
      const float4 b0 = *reinterpret_cast<const float4*>(d1 + kh * a.DW);
      const float4 b1 = *reinterpret_cast<const float4*>(d1 + kh * a.DW + hoff);
      v[0][0] = a0.x; v[0][1] = a0.y; v[0][2] = a0.z; v[0][3] = a0.w;
      v[0][4] = a1.x; v[0][5] = a1.y; v[0][6] = a1.z; v[0][7] = a1.w;
      v[1][0] = b0.x; v[1][1] = b0.y; v[1][2] = b0.z; v[1][3] = b0.w;
      v[1][4] = b1.x; v[1][5] = b1.y; v[1][6] = b1.z; v[1][7] = b1.w;
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        float wv[4];
        load_weights<4>(g + (kh * 8 + e) * 4, wv);
#pragma unroll
        for (int k = 0; k < 2; ++k)
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[k][i][e] = fmaf(wv[i], v[k][e], acc[k][i][e]);
      }
    }
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      if (!ok[k]) continue;
      float o[4][4];
#pragma unroll
      for (int i = 0; i < 4; ++i) f45_output(acc[k][i], o[i]);
      const int col = 4 * c[k], crem = CBt - col;
      float* yb = yt + (r[k] * ysh + col * ysw + gl * 4 * ysc);
      if (LAYOUT == 0 && a.vec16 && crem >= 4) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (i < mrem) st4(yb + i * ysc, o[i]);
      } else if (LAYOUT == 1 && a.vec16 && mrem >= 4) {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (j < crem) {
            const float v[4] = {o[0][j], o[1][j], o[2][j], o[3][j]};
            st4(yb + j * ysw, v);
          }
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j)
            if (i < mrem && j < crem) __stcs(yb + i * ysc + j * ysw, o[i][j]);
      }
    }
  }
}

// The tile loop of single_channel_kernel with the transforms between a tile's copies landing
// and its items: shared = raw input patch | transformed rows | raw filters | transformed filters.
template <int LAYOUT>
__global__ void __launch_bounds__(kMaxThreads, 2)
    single_channel_f45_kernel(const ConvParams p, const SCArgs a, const float* __restrict__ x,
                              const float* __restrict__ w, float* __restrict__ y) {
  extern __shared__ float4 smem4[];
  float* raw_in = reinterpret_cast<float*>(smem4);
  float* dt = raw_in + a.in_floats;
  float* raw_w = dt + a.in_rows * a.DW;
  float* gt = raw_w + a.w_floats;

  long long t0, t1;
  if (!block_tiles(a, &t0, &t1)) return;

  Tile cur = stage_first_tile<kTM4, false>(p, a, t0, x, w, raw_in, raw_w);
  // whether the transformed patch / filters left kF45Max's range (block-uniform)
  bool bad_in = __syncthreads_or(f45_transform_input(a, raw_in, dt));
  bool bad_w = __syncthreads_or(f45_transform_filters(a, raw_w, gt));

  for (long long t = t0; t < t1; ++t) {
    const bool has_next = t + 1 < t1;
    Tile nxt = cur;
    bool new_in = false, new_w = false;
    if (has_next)  // the raw buffers were consumed by the transforms before the last barrier
      nxt = stage_next_tile<kTM4>(p, a, cur, t + 1, x, w, raw_in, 0, raw_w, 0, &new_in, &new_w);
    f45_compute_tile<LAYOUT>(p, a, cur, dt, gt, x, w, y, bad_in || bad_w);
    if (has_next) {
      cp_async_wait<0>();
      __syncthreads();
      if (new_in) bad_in = __syncthreads_or(f45_transform_input(a, raw_in, dt));
      if (new_w) bad_w = __syncthreads_or(f45_transform_filters(a, raw_w, gt));
      if (!new_in && !new_w) __syncthreads();
      cur = nxt;
    }
  }
}

long long cdiv(long long a, long long b) { return (a + b - 1) / b; }

// Whether plan[1..7] are exactly [division, 1, 1, 0, 0, 0, 256]: the attributes of the kernels
// without tiles (division 3: pointwise, 4: strided), which choose their work order themselves.
bool untiled_plan(const ConvParams& p, int64_t division) {
  const int64_t* a = p.plan;
  return a[1] == division && a[2] == 1 && a[3] == 1 && a[4] == 0 && a[5] == 0 && a[6] == 0 &&
         a[7] == 256;
}

// A plan for the pointwise 1x1 kernel (division 3) on a layer it runs.
bool pointwise_plan(const ConvParams& p) {
  return untiled_plan(p, 3) && single_channel_pointwise_supported(p);
}

// A plan for the strided kernel (division 4) on a layer it runs.
bool strided_plan(const ConvParams& p) {
  return untiled_plan(p, 4) && single_channel_strided_supported(p);
}

// A plan for the tensor-core kernel (division 5: [1, 5, 1, 1, MB, RB, 0, 256]) whose layer and
// tile single_channel_mma.cu runs.
bool mma_plan(const ConvParams& p) {
  const int64_t* a = p.plan;
  return a[1] == 5 && a[2] == 1 && a[3] == 1 && a[6] == 0 && a[7] == 256 &&
         single_channel_mma_supported(p);
}

#ifdef FASTCONV_HAVE_WGMMA
// A plan for the wgmma kernel (division 6: [1, 6, 1, 1, 32, SPT, stagger + 2 RS, 128 NWG]) on
// a layer it runs (builds whose architectures include 90 only).
bool wgmma_plan(const ConvParams& p) {
  return p.plan[1] == 6 && single_channel_wgmma_supported(p);
}
#endif

// single_channel_launch_config's answer for a kernel without tiles: its division, 256
// threads, no tiles or grid to report, layout -1 (the kernel picks its store order).
cudaError_t untiled_launch_config(int64_t division, long long out[10]) {
  const long long v[10] = {1, division, 0, 0, 0, 0, 256, 0, 0, -1};
  for (int i = 0; i < 10; ++i) out[i] = v[i];
  return cudaSuccess;
}

// The launch one ConvParams resolves to (host side, no CUDA calls past the device query).
struct Resolved {
  SCArgs a{};
  int threads = 0;
  int layout = 0;
  long long grid = 0;     // 0: from the occupancy API (defensive path only)
  size_t smem = 0;
  bool exact = false;     // the plan was valid and runs as given
};

constexpr long long kInBudget = SC_IN_KB * 1024 / 4;  // floats per input buffer
constexpr long long kNVextra = 4 + 4;                 // float4 over-read past the last chunk
long long sw_for(long long cb, long long KW) { return cdiv(cb + KW - 1 + kNVextra, 4) * 4; }
// column tile for rows_in input lines: whole rows when they fit, else cut (>= 128 columns)
long long cb_for(long long rows_in, long long OW, long long KW) {
  if (rows_in * sw_for(OW, KW) <= kInBudget) return OW;
  long long cb = kInBudget / rows_in - KW - 1 - kNVextra;
  cb = std::max<long long>(128, cb / kTP * kTP);
  return std::min(cb, OW);
}

// The register tile (tm filters x tp columns per thread) and what the item decode derives from
// it: filter groups, column chunks, items per tile (<= 64 x 3072 x 32: CB <= the 48 KB input
// buffer). Needs RB, CB and MB set.
void set_register_tile(int tm, int tp, SCArgs* a) {
  a->tm = tm;
  a->tp = tp;
  a->GM = a->MB / tm;
  a->cpr = int(cdiv(a->CB, tp));
  a->items = a->RB * a->cpr * a->GM;
  a->fd_gm = FastDiv(uint32_t(a->GM));
  a->fd_cpr = FastDiv(uint32_t(a->cpr));
}

void fill_args(const ConvParams& p, long long division, long long RB, long long CB, long long MB,
               long long prefetch, SCArgs* a) {
  a->RB = int(RB);
  a->CB = int(CB);
  a->MB = int(MB);
  a->n_rb = int(cdiv(p.OH, RB));
  a->n_cb = int(cdiv(p.OW, CB));
  a->n_g = int(cdiv(p.M, MB));
  a->N = int(p.N);
  a->ntiles = p.N * a->n_rb * (long long)a->n_cb * a->n_g;
  a->order = int(division);
  a->SW = int(sw_for(CB, p.KW));
  a->in_rows = int(RB + p.KH - 1);
  a->in_floats = a->in_rows * a->SW;
  a->w_floats = int(p.KH * p.KW * MB);
  a->prefetch = int(prefetch);
  a->KH = int(p.KH);
  a->KW = int(p.KW);
  set_register_tile(kTM, kTP, a);  // resolve() sets the one pick_tm / pick_tp choose
  a->tiles32 = a->ntiles < (1LL << 31);
  a->fd_rb = FastDiv(uint32_t(RB));
  a->fd_ncb = FastDiv(uint32_t(a->n_cb));
  a->fd_nrb = FastDiv(uint32_t(a->n_rb));
  a->fd_n = FastDiv(uint32_t(a->N));
  a->fd_ng = FastDiv(uint32_t(a->n_g));
  a->fd_kk = FastDiv(uint32_t(p.KH * p.KW));
  a->fd_kw = FastDiv(uint32_t(p.KW));
  a->fd_sw4 = FastDiv(uint32_t(a->SW / 4));
  a->in_vec = a->w_vec = 0;  // set at launch, from the buffers' alignment (staging_vectors)
  a->flat = 0;               // set at launch (flat_chunks)
  a->OWc = int(p.OW);
  a->dsw = int(a->SW - p.OW);
  a->items_flat = int(RB * p.OW / 4 * a->GM);
  a->fd_nq = FastDiv(uint32_t(std::max<long long>(1, RB * p.OW / 4)));
  a->pairs = 0;              // set at launch (flat_pairs)
  a->fstep = 1;
  a->w_run = p.w_so;
  a->fd_ow = FastDiv(uint32_t(std::max<long long>(1, p.OW)));
}

// Whether every output offset inside a row-Winograd tile (up to RB rows, MB filters and a whole
// output row) fits 32 bits (f45_compute_tile's store addresses).
bool f45_offsets_fit(const ConvParams& p, long long RB, long long MB) {
  const long long lim = (1LL << 31) - 1;
  if (std::abs(p.y_sc) > lim || std::abs(p.y_sh) > lim || std::abs(p.y_sw) > lim) return false;
  return (MB - 1) * std::abs(p.y_sc) + (RB - 1) * std::abs(p.y_sh) + (p.OW + 3) * std::abs(p.y_sw) < lim;
}

// The planner's plan, taken exactly when every value is in the kernel's supported ranges
// (see the header comment); false otherwise.
bool resolve_exact(const ConvParams& p, const DeviceInfo& dev, Resolved* r) {
  const long long division = p.plan[1], P = p.plan[2], Q = p.plan[3], MB = p.plan[4],
                  RB = p.plan[5], pref = p.plan[6], thr = p.plan[7];
  if (division != 1 && division != 2) return false;
  if (MB < kTM || MB > 128 || MB % kTM != 0) return false;
  if (RB < 1 || RB > std::min<long long>(p.OH, 64)) return false;
  if (pref < 0 || pref > 3) return false;
  const bool wino = pref & 2;  // row-Winograd products (f45_*): 5x5 kernels only
  if (wino && (p.KH != 5 || p.KW != 5 || !f45_offsets_fit(p, RB, MB))) return false;
  if (thr < 64 || thr > kMaxThreads || thr % 32 != 0) return false;
  if (division == 1 && (P != cdiv(p.OH, RB) || Q != 1)) return false;
  if (division == 2 && (P != 1 || Q != cdiv(p.M, MB))) return false;
  const long long rows_in = RB + p.KH - 1;
  const long long CB = cb_for(rows_in, p.OW, p.KW);
  if (rows_in * sw_for(CB, p.KW) > kInBudget) return false;
  fill_args(p, division, RB, CB, MB, pref & 1, &r->a);
  if (wino) {  // single buffers: raw patch, its transform, raw filters, their transform
    SCArgs& a = r->a;
    set_register_tile(kTM4, kTP8, &a);  // GM = MB / 4 filter groups (items: resolve, by layout)
    a.wino = 1;
    a.nc = int(cdiv(CB, 4));
    a.DW = 8 * a.nc;
    a.Qh = int(cdiv(RB * a.nc, 2));
    a.fd_nc = FastDiv(uint32_t(a.nc));
    r->smem = size_t(a.in_floats + a.in_rows * a.DW + a.w_floats + a.GM * kF45Group) * sizeof(float);
  } else {
    r->smem = size_t(pref ? 2 : 1) * (r->a.in_floats + r->a.w_floats) * sizeof(float);
  }
  if (r->smem > size_t(dev.smem_optin)) return false;
  r->threads = int(thr);
  r->grid = (pref & 1) ? std::min<long long>(r->a.ntiles, 2LL * std::max(1, dev.sms)) : r->a.ntiles;
  r->exact = true;
  return true;
}

// Defensive resolution of plans outside the supported ranges (never emitted by the planner).
cudaError_t resolve_defensive(const ConvParams& p, const DeviceInfo& dev, Resolved* r) {
  const int nsm = std::max(1, dev.sms);
  const long long M = p.M, OH = p.OH, OW = p.OW, N = p.N;
  long long division = p.plan[1], P = p.plan[2], Q = p.plan[3], fpb = p.plan[4],
            rpb = p.plan[5], pref = p.plan[6], thr = p.plan[7];
  long long MB = 0, RB = 0;
  const bool auto_plan = division != 1 && division != 2;
  if (auto_plan) {  // chosen here: rows across blocks, <= 64 filters per tile, volume method
    division = 2;
    P = Q = fpb = rpb = 0;
    pref = 0;
  }
  if (division == 1) {
    MB = fpb > 0 ? fpb : cdiv(M, nsm);
    if (P >= 1) RB = cdiv(OH, std::min(P, OH));
    else if (rpb > 0) RB = rpb;
  } else {
    if (Q >= 1) MB = cdiv(M, std::min(Q, M));
    else if (fpb > 0) MB = fpb;
    else MB = std::min<long long>(M, 64);
    if (auto_plan) MB = std::min<long long>(M, 64);
    if (rpb > 0) RB = rpb;
    else if (P >= 1) RB = cdiv(OH, std::min(P, OH));
  }
  MB = std::min<long long>(std::max<long long>(MB, 1), M);
  MB = cdiv(MB, kTM) * kTM;
  MB = std::min<long long>(std::max<long long>(MB, kTM), 128);
  const long long KH = p.KH, KW = p.KW;
  long long prefetch = (pref == 0) ? 0 : 1;
  const long long CB =
      cb_for(std::min<long long>(std::max<long long>(RB, 1), OH) + KH - 1, OW, KW);
  const long long n_cb = cdiv(OW, CB);
  if (RB <= 0) {
    const long long cpr = cdiv(std::min(CB, OW), kTP);
    RB = std::max<long long>(1, std::min<long long>(16, 4096 / std::max<long long>(1, cpr * (MB / kTM))));
    auto tiles = [&](long long rb, long long mb) { return N * cdiv(OH, rb) * cdiv(M, mb) * n_cb; };
    while (RB > 1 && tiles(RB, MB) < 3LL * nsm) RB = (RB + 1) / 2;
    if (auto_plan)
      while (MB > kTM && tiles(RB, MB) < 2LL * nsm) MB = std::max<long long>(kTM, (MB / 2) / kTM * kTM);
  }
  RB = std::max<long long>(1, std::min<long long>(RB, std::min<long long>(OH, 64)));
  while (RB > 1 && (RB + KH - 1) * sw_for(CB, KW) > kInBudget) --RB;
  auto smem_of = [&](long long mb, long long pf, long long rb) {
    return (pf ? 2 : 1) * ((rb + KH - 1) * sw_for(CB, KW) + KH * KW * mb) * 4;
  };
  while (smem_of(MB, prefetch, RB) > dev.smem_optin && MB > kTM) MB -= kTM;
  if (smem_of(MB, prefetch, RB) > dev.smem_optin) prefetch = 0;
  while (smem_of(MB, prefetch, RB) > dev.smem_optin && RB > 1) --RB;
  fill_args(p, division, RB, CB, MB, prefetch, &r->a);
  r->smem = size_t(r->a.prefetch ? 2 : 1) * (r->a.in_floats + r->a.w_floats) * sizeof(float);
  if (r->smem > size_t(dev.smem_optin)) return cudaErrorInvalidConfiguration;
  int threads = (thr >= 32 && thr <= 4096) ? int(thr) : 256;
  threads = std::min(kMaxThreads, std::max(64, threads / 32 * 32));
  r->threads = int(std::min<long long>(threads, std::max<long long>(64, cdiv(r->a.items, 32) * 32)));
  r->grid = prefetch ? 0 : r->a.ntiles;  // prefetch: occupancy API at launch
  r->exact = false;
  return cudaSuccess;
}

// Filters per thread: 4 (kTM4; __launch_bounds__(256, 3), 78-80 registers, 3 blocks of 256
// per SM) instead of 8 (106-112 registers, 2 blocks) where that measured faster on the H200,
// all with filters contiguous in the output (LAYOUT 1, e.g. NHWC), where a warp's float4s then
// also cover whole 128-byte lines of a pixel: a 5x5 kernel, whose compute phases were short of
// eligible warps (ncu, b32 28x28 M512: 41% of cycles with none; batch-32 paper layers
// 0.90-0.96x the time, batch 1 0.95-1.04x), and a 3x3 kernel on outputs under 2^24 elements
// (b32 28x28 M512 0.83x, b1 56x56-224x224 0.95-0.97x; from 24M elements up 1.00-1.05x, so
// not there). The NCHW (LAYOUT 0) layers were mixed or slower with it
// (benchmarks/notes/single_channel.md, round 9).
int pick_tm(const ConvParams& p, int layout, int vec) {
  if (layout != 1 || !vec) return kTM;
  if (p.KH == 5 && p.KW == 5) return kTM4;
  if (p.KH == 3 && p.KW == 3 && p.N * p.OH * p.OW * p.M < (1LL << 24)) return kTM4;
  return kTM;
}

// Output columns per thread: 8 (kTP8) with the 4 filters of pick_tm (114 registers, 2 blocks of
// 256 per SM) for NHWC-like 5x5 layers on maps of >= 2^15 output pixels: a third fewer shared
// loads per FMA (a tap's 4 weights feed 32 FMAs instead of 16) and half the items per tile;
// b1 224^2-1024^2 0.94-0.96x the time, b32 224^2-1024^2 0.94-0.99x. Smaller maps were
// 1.00-1.04x slower, 3x3 layers 1.00-1.16x, and NCHW 1.1-1.5x (a lane's two float4 stores
// land 32 bytes apart) (H200; benchmarks/notes/single_channel.md, round 10). Also on smaller
// maps where a tile holds >= 64 filters (MB): every such launch of b32 28^2-112^2 K5 NHWC measured
// 0.91-0.99x the 4-column time (whole-map bands MB 128 at 28^2 0.92x, MB 64 at 112^2 0.95x);
// with MB <= 32 1.02-1.22x slower at 28^2 and 56^2, 0.95-1.15x at 112^2 (round 11).
int pick_tp(const ConvParams& p, int layout, int tm, int MB) {
  if (layout == 1 && tm == kTM4 && p.KH == 5 && p.KW == 5 &&
      (p.OH * p.OW >= (1LL << 15) || MB >= 64))
    return kTP8;
  return kTP;
}

cudaError_t resolve(const ConvParams& p, const DeviceInfo& dev, Resolved* r) {
  cudaError_t e = cudaSuccess;
  if (!resolve_exact(p, dev, r)) {
    *r = Resolved{};
    e = resolve_defensive(p, dev, r);
    if (e != cudaSuccess) return e;
  }
  // ---- layout: which stride the vector stores follow ----
  SCArgs& a = r->a;
  if (p.y_sw == 1 && !(p.y_sc == 1 && p.OW < 4)) { r->layout = 0; a.vec = 1; }
  else if (p.y_sc == 1) { r->layout = 1; a.vec = 1; }
  else { r->layout = 0; a.vec = 0; }
  if (a.wino) {  // 4 filters x 2 chunks (resolve_exact); the lane order follows the layout
    a.items = r->layout == 1 ? a.GM * a.Qh : a.GM * 8 * int(cdiv(a.Qh, 8));
    return cudaSuccess;
  }
  const int tm = pick_tm(p, r->layout, a.vec);
  set_register_tile(tm, pick_tp(p, r->layout, tm, a.MB), &a);
  return cudaSuccess;
}

// The FFMA kernels' launch for `p` on the current device (launch_config and launch share it).
cudaError_t resolve_on_current(const ConvParams& p, DeviceInfo* dev, Resolved* r) {
  const cudaError_t err = current_device_info(dev);
  return err != cudaSuccess ? err : resolve(p, *dev, r);
}

// Whether every full 4-wide store of this launch lands 16-byte aligned: the output base and
// the strides of the axes a store does not run along are multiples of 4 floats (tile
// origins, filter groups and column chunks are multiples of 4 by construction).
bool stores_aligned16(const ConvParams& p, const Resolved& r, const float* y) {
  if (!r.a.vec || !aligned16(y)) return false;
  const bool rest = p.y_sn % 4 == 0 && p.y_sh % 4 == 0;
  return r.layout == 0 ? rest && p.y_sc % 4 == 0 && (r.a.n_cb == 1 || r.a.CB % 4 == 0)
                       : rest && p.y_sw % 4 == 0;
}

// 16-byte staging copies: input lines contiguous with 16-byte aligned starts (the per-tile
// patch origin is checked in the kernel), filters contiguous along m (HWIO) with 16-byte
// aligned taps.
void staging_vectors(const ConvParams& p, const float* x, const float* w, SCArgs* a) {
  a->in_vec = aligned16(x) && p.x_sw == 1 && p.x_sh % 4 == 0 && p.x_sn % 4 == 0;
  a->w_vec = aligned16(w) && p.w_so == 1 && p.w_sh % 4 == 0 && p.w_sw % 4 == 0 &&
             a->fstep == 1;
}

// Flat chunks (compute_tile_flat) where rows of OW = 2 mod 4 outputs would otherwise make every
// other row's stores 8-byte aligned (the general path ran these NCHW layers at ~half the speed
// of the same stores into aligned rows): LAYOUT 0 with rows back to back (y_sh == OW), whole
// rows per tile, tiles of a multiple of 4 pixels (RB x OW), 16-byte aligned planes, a
// compile-time kernel size.
bool flat_chunks(const ConvParams& p, const Resolved& r, const float* y) {
  const SCArgs& a = r.a;
  return r.layout == 0 && a.vec && p.y_sw == 1 && p.y_sh == p.OW && p.OW % 4 == 2 &&
         a.n_cb == 1 && (a.RB * p.OW) % 4 == 0 && p.y_sc % 4 == 0 && p.y_sn % 4 == 0 &&
         aligned16(y) && p.KH == p.KW && (p.KH == 1 || p.KH == 3 || p.KH == 5 || p.KH == 7);
}

// Sector pairs for flat chunks (compute_tile_flat), where some plane or tile starts in the
// second half of a 32-byte sector (odd planes of an OW = 2 mod 4 map: OH x OW = 4 mod 8): each
// filter group gets an even count of items (chunks shifted by one where its planes start
// there), so no warp boundary splits a sector. Where planes alternate phase (y_sc / 4 odd) a
// thread's filters take one parity (fstep 2), which needs whole pairs of groups (GM even).
// NCHW K3 layers, H200 driver: planes padded to 32 bytes ran 0.92-0.98x the time (round 32).
void flat_pairs(const ConvParams& p, const float* y, SCArgs* a) {
  const long long nq = (long long)a->RB * p.OW / 4;  // chunks per tile (flat: a multiple of 4 pixels)
  const bool aligned = p.y_sc % 8 == 0 && p.y_sn % 8 == 0 && nq % 2 == 0 &&
                       (reinterpret_cast<uintptr_t>(y) & 31) == 0;
  const bool odd_planes = (p.y_sc / 4) % 2 != 0;
  if (!a->flat || aligned || (odd_planes && a->GM % 2 != 0)) return;
  const long long count = (nq + 2) / 2 * 2;  // >= nq + 1, even
  a->pairs = 1;
  a->fstep = odd_planes ? 2 : 1;
  a->w_run = a->fstep * p.w_so;
  a->items_flat = int(count * a->GM);
  a->fd_nq = FastDiv(uint32_t(count));
}

// What the launch decides from the operands' addresses, in the order these decisions depend on
// each other: the sector pairs read the flat chunks' decision, and the filter staging's 16-byte
// copies the pairs' filter step (fstep 2 turns them off).
void pointer_args(const ConvParams& p, const float* x, const float* w, const float* y, Resolved* r) {
  r->a.vec16 = stores_aligned16(p, *r, y);
#ifndef SC_NO_FLAT
  r->a.flat = flat_chunks(p, *r, y) && !r->a.wino;  // the row-Winograd kernel has its own order
#endif
#ifndef SC_NO_PAIRS
  flat_pairs(p, y, &r->a);
#endif
  staging_vectors(p, x, w, &r->a);
}

cudaError_t check_params(const ConvParams& p) {
  if (p.C != 1 || p.stride_h != 1 || p.stride_w != 1) return cudaErrorInvalidValue;
  if (p.KH < 1 || p.KW < 1 || p.N < 0 || p.M < 0 || p.OH < 0 || p.OW < 0)
    return cudaErrorInvalidValue;
  if (p.OH > (1 << 30) || p.OW > (1 << 30) || p.M > (1 << 30) || p.N > (1 << 30))
    return cudaErrorInvalidValue;
  if (p.KH * p.KW > 4096) return cudaErrorInvalidValue;  // shared filter buffer bound
  return cudaSuccess;
}

template <typename Kernel>
cudaError_t launch_kernel(Kernel kern, const ConvParams& p, const Resolved& r,
                          const DeviceInfo& dev, const float* x, const float* w, float* y,
                          cudaStream_t stream) {
  cudaError_t e = raise_func_attribute_once(reinterpret_cast<const void*>(kern), dev.device,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            int(r.smem));
  if (e != cudaSuccess) return e;
  long long grid = r.grid;
  if (grid == 0) {  // defensive prefetch path only
    int occ = 0;
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, r.threads, r.smem);
    if (e != cudaSuccess) return e;
    if (occ < 1) occ = 1;
    grid = std::min<long long>(r.a.ntiles, (long long)std::max(1, dev.sms) * occ);
  }
  if (grid > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  return launch_ex(kern, dim3(unsigned(grid)), dim3(unsigned(r.threads)), r.smem, stream, p, r.a,
                   x, w, y);
}

template <int KH_T, int KW_T, int LAYOUT, bool FLAT = false, int TM = kTM, int TP = kTP>
cudaError_t launch_t(const ConvParams& p, const Resolved& r, const DeviceInfo& dev,
                     const float* x, const float* w, float* y, cudaStream_t stream) {
  return launch_kernel(single_channel_kernel<KH_T, KW_T, LAYOUT, FLAT, TM, TP>, p, r, dev, x, w,
                       y, stream);
}

// The instance of kernel size K (1, 3, 5 or 7) for the work order resolve() and the launch chose:
// flat chunks (LAYOUT 0, flat_chunks), 4 filters (LAYOUT 1, 3x3 / 5x5, pick_tm) and then 8
// columns (LAYOUT 1, 5x5, pick_tp), else the 8 x 4 tile.
template <int K, int LAYOUT>
cudaError_t dispatch_tile(const ConvParams& p, const Resolved& r, const DeviceInfo& dev,
                          const float* x, const float* w, float* y, cudaStream_t s) {
  if constexpr (LAYOUT == 0) {
    if (r.a.flat) return launch_t<K, K, 0, true>(p, r, dev, x, w, y, s);
  } else if constexpr (K == 3 || K == 5) {
    if constexpr (K == 5)
      if (r.a.tm == kTM4 && r.a.tp == kTP8)
        return launch_t<5, 5, 1, false, kTM4, kTP8>(p, r, dev, x, w, y, s);
    if (r.a.tm == kTM4) return launch_t<K, K, 1, false, kTM4>(p, r, dev, x, w, y, s);
  }
  return launch_t<K, K, LAYOUT>(p, r, dev, x, w, y, s);
}

template <int LAYOUT>
cudaError_t dispatch_k(const ConvParams& p, const Resolved& r, const DeviceInfo& dev,
                       const float* x, const float* w, float* y, cudaStream_t s) {
  if (p.KH == 1 && p.KW == 1) return dispatch_tile<1, LAYOUT>(p, r, dev, x, w, y, s);
  if (p.KH == 3 && p.KW == 3) return dispatch_tile<3, LAYOUT>(p, r, dev, x, w, y, s);
  if (p.KH == 5 && p.KW == 5) return dispatch_tile<5, LAYOUT>(p, r, dev, x, w, y, s);
  if (p.KH == 7 && p.KW == 7) return dispatch_tile<7, LAYOUT>(p, r, dev, x, w, y, s);
  return launch_t<0, 0, LAYOUT>(p, r, dev, x, w, y, s);
}

}  // namespace

// The launch `p` resolves to, without launching (for the driver and tests): out[0..9] =
// {exact (1: the plan ran as given), division, RB, CB, MB, prefetch, threads, grid (0: from
// the occupancy API), shared bytes, layout}.
cudaError_t single_channel_launch_config(const ConvParams& p, long long out[10]) {
  if (strided_plan(p)) return untiled_launch_config(4, out);
  cudaError_t err = check_params(p);
  if (err != cudaSuccess) return err;
  if (pointwise_plan(p)) return untiled_launch_config(3, out);
  if (mma_plan(p)) {
    long long c[6];
    err = single_channel_mma_config(p, nullptr, c);
    if (err != cudaSuccess) return err;
    const long long v[10] = {1, 5, c[0], p.OW, c[1], 0, 256, c[2], c[3], -1};
    for (int i = 0; i < 10; ++i) out[i] = v[i];
    return cudaSuccess;
  }
#ifdef FASTCONV_HAVE_WGMMA
  if (wgmma_plan(p)) {
    long long c[2];
    err = single_channel_wgmma_config(p, c);
    if (err != cudaSuccess) return err;
    const long long v[10] = {1, 6, p.plan[5], p.OW, 32, p.plan[6], p.plan[7], c[0], c[1], 1};
    for (int i = 0; i < 10; ++i) out[i] = v[i];
    return cudaSuccess;
  }
#endif
  DeviceInfo dev;
  Resolved r;
  err = resolve_on_current(p, &dev, &r);
  if (err != cudaSuccess) return err;
  const long long v[10] = {r.exact, r.a.order, r.a.RB, r.a.CB, r.a.MB,
                           r.a.prefetch | (r.a.wino << 1), r.threads,
                           r.grid, (long long)r.smem, r.layout};
  for (int i = 0; i < 10; ++i) out[i] = v[i];
  return cudaSuccess;
}

cudaError_t launch_single_channel(const ConvParams& p, const float* x, const float* w, float* y,
                                  cudaStream_t stream) {
  if (strided_plan(p)) return launch_single_channel_strided(p, x, w, y, stream);
  cudaError_t err = check_params(p);
  if (err != cudaSuccess) return err;
  if (p.out_elems() == 0) return cudaSuccess;
  if (pointwise_plan(p)) return launch_single_channel_pointwise(p, x, w, y, stream);
  if (mma_plan(p)) return launch_single_channel_mma(p, x, w, y, stream);
#ifdef FASTCONV_HAVE_WGMMA
  if (wgmma_plan(p)) return launch_single_channel_wgmma(p, x, w, y, stream);
#endif
  DeviceInfo dev;
  Resolved r;
  err = resolve_on_current(p, &dev, &r);
  if (err != cudaSuccess) return err;
  pointer_args(p, x, w, y, &r);
  if (r.a.wino) {
    return r.layout == 1 ? launch_kernel(single_channel_f45_kernel<1>, p, r, dev, x, w, y, stream)
                         : launch_kernel(single_channel_f45_kernel<0>, p, r, dev, x, w, y, stream);
  }
  // flat chunks (flat_chunks: LAYOUT 0, KH == KW in {1, 3, 5, 7}) are dispatched with the rest
  if (r.layout == 0) return dispatch_k<0>(p, r, dev, x, w, y, stream);
  return dispatch_k<1>(p, r, dev, x, w, y, stream);
}

}  // namespace fastconv
