// Single-channel (C == 1) stride-1 convolution on the TF32 tensor cores at float32 accuracy
// (3xTF32, mma_3xtf32.cuh): plan division 5 (jax_fastconv/plan_single_channel.py S9).
//
// Why: on the H200 the FFMA kernel's 5x5 layers have an FMA floor equal to their byte floor
// (b1 512^2 M32 K5: 8.2 us of FFMA at the GEMM ceiling, 8.1 us of bytes), and the FFMA loop
// runs at 60-65% of that peak (benchmarks/notes/single_channel.md, rounds 9-11), so compute and
// stores cannot both fit the 70% roofline target. mma.sync TF32 runs ~316 TFLOP/s there (~105
// as 3xTF32, ~2x the FFMA ceiling): the same layer's products need ~5 us of tensor time at that
// rate. Measured (H100, same SMs and clocks): the kernel's compute alone takes ~12 us there, the
// tensor pipe ~40% busy, held by the work around the MMAs (loads, splits, addresses, stores),
// not by the MMAs' dependences (notes round 17); the autotuner keeps it where it is faster.
//
// The tile as a GEMM: D[pixel][filter] = sum over taps A[pixel][tap] B[tap][filter], taps
// padded to KSTEPS x 8 (padded taps have B = 0 and read tap (0, 0), a finite input).
//   tile   = (image n, band of RB output rows, group of MB filters), MB in {16, 32, 64, 128},
//            both from the plan (plan_single_channel.mma_tiles ranks them, the autotuner times
//            the best three against the FFMA kernel's launches);
//            its input band (RB + KH - 1 rows x OW + KW - 1 columns, zeros outside the map) is
//            copied to shared memory (cp.async), double buffered across a block's tiles.
//   block  = 8 warps, persistent: block b takes tiles [b T / G, (b + 1) T / G).
//   warp item = 32 pixels (the tile's flattened output rows) x 16 filters: 2 x 2 m16n8k8 tiles,
//            KSTEPS x 3 MMAs each; warp w keeps filter group q = w % (MB / 16) for the tile
//            (its B fragments, split hi/lo, loaded once per tile) and takes every (8 / QT)-th
//            pixel item.
//   lane (g, t) = (lane / 4, lane % 4) holds 4 consecutive pixels 4g..4g+3 (m-tile i, row
//            half h <-> pixel 4g + 2i + h) x 4 filters 4t..4t+3 (n-tile j, column e <->
//            filter 4t + 2j + e, a permutation of the B columns), so it writes either one
//            16-byte store per pixel (filters contiguous: NHWC) or one per filter (pixels
//            contiguous: NCHW), whole lines per warp instruction.
// Non-finite results (an inf or NaN input or weight: inf x 0 in the split products; overflow
// near FLT_MAX) are recomputed for that warp item with float32 FMAs, so the answer keeps
// float32 semantics (the multi-channel kernel does the same, multi_channel.cu).
#include <algorithm>
#include <cstdint>

#include "cp_async.cuh"
#include "fast_divide.h"
#include "kernels.h"
#include "launch_util.h"
#include "mma_3xtf32.cuh"

namespace fastconv {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kItemPix = 32;   // pixels per warp item
constexpr int kItemFilt = 16;  // filters per warp item
constexpr int kMaxKSteps = 8;  // taps <= 64

enum MMAStore : int { kStoreScalar = 0, kStorePixels4 = 1, kStoreFilters4 = 2 };

struct MMAArgs {
  long long x_sn, x_sh, x_sw;
  long long w_so, w_sh, w_sw;
  long long y_sn, y_sc, y_sh, y_sw;
  int H, W, M, KH, KW, OH, OW, pad_top, pad_left;
  int RB, MB, QT;        // tile rows, filters, 16-filter groups (MB / 16)
  int n_rb, n_g;         // tiles along rows, filter groups
  int ntiles;
  int BW, SW;            // band columns (OW + KW - 1) and shared row stride
  int band_rows;         // RB + KH - 1
  int band_floats;       // one buffer
  int store;             // MMAStore
  int vec_in;            // 16-byte staging (stage_band)
  int wtab[8 * kMaxKSteps];  // filter offset kh w_sh + kw w_sw of tap kh KW + kw, -1 past the taps
  FastDiv fd_ow, fd_n, fd_rb, fd_kw;
};

__device__ __forceinline__ void st4cs(float* ptr, float a, float b, float c, float d) {
  __stcs(reinterpret_cast<float4*>(ptr), make_float4(a, b, c, d));
}

// One pixel's 4 filters f0..f0+3 (contiguous at yp): a 16-byte store, or those below M.
__device__ __forceinline__ void store_filters(float* yp, const float (&v)[4], int f0, int M) {
  if (f0 + 3 < M) {
    st4cs(yp, v[0], v[1], v[2], v[3]);
  } else {
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (f0 + u < M) __stcs(yp + u, v[u]);
  }
}

// Tile t -> (n, first output row, first filter, output rows in it).
struct Tile {
  int n, oh0, m0, rows;
};
__device__ __forceinline__ Tile decode_tile(const MMAArgs& a, int t) {
  int n, rb;  // t = (g N + n) n_rb + rb
  const uint32_t gn = a.fd_rb.divmod(uint32_t(t), &rb);
  const int g = int(a.fd_n.divmod(gn, &n));
  Tile r;
  r.n = n;
  r.oh0 = rb * a.RB;
  r.m0 = g * a.MB;
  r.rows = min(a.RB, a.OH - r.oh0);
  return r;
}

// The tile's input band into `band`, a warp per band row, zero-filled outside the map: 16-byte
// cp.async where rows and the padding keep 4-float chunks aligned (a.vec_in), else 4 bytes.
__device__ __forceinline__ void stage_band(const MMAArgs& a, const float* __restrict__ x,
                                           const Tile& t, float* band) {
  const int rows = t.rows + a.KH - 1;
  const int lane = threadIdx.x & 31;
  const float* xn = x + (long long)t.n * a.x_sn;
  const int ih0 = t.oh0 - a.pad_top;
  for (int i = threadIdx.x >> 5; i < rows; i += kWarps) {
    const int ih = ih0 + i;
    const bool row_in = ih >= 0 && ih < a.H;
    const float* xr = xn + (long long)(row_in ? ih : 0) * a.x_sh;
    float* br = band + i * a.SW;
    if (a.vec_in) {
      for (int c4 = lane; 4 * c4 < a.BW; c4 += 32) {
        const int iw = 4 * c4 - a.pad_left;  // a multiple of 4: a chunk is wholly left of the map or not
        const int bytes = row_in && iw >= 0 ? 4 * max(0, min(4, a.W - iw)) : 0;
        cp_async16_n(br + 4 * c4, bytes > 0 ? xr + iw : x, bytes);
      }
    } else {
      for (int j = lane; j < a.BW; j += 32) {
        const int iw = j - a.pad_left;
        const bool in = row_in && iw >= 0 && iw < a.W;
        cp_async4(br + j, in ? xr + (long long)iw * a.x_sw : x, in);
      }
    }
  }
}

// One shared float at byte address `addr` (a 32-bit shared-window address: the compiler folds
// constant parts of it into the instruction).
__device__ __forceinline__ float lds(uint32_t addr) {
  float v;
  asm("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr));
  return v;
}

// ROW4: OW % 4 == 0, so a lane's 4 pixels (4g..4g+3 of a 32-pixel item, tiles of whole rows)
// lie in one row: their band and output addresses differ by constants.
template <int KSTEPS, bool ROW4>
__global__ void __launch_bounds__(kThreads, 2)
    single_channel_mma_kernel(const MMAArgs a, const float* __restrict__ x,
                              const float* __restrict__ w, float* __restrict__ y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(16) float smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, tq = lane & 3;
  const int T = a.KH * a.KW;
  const uint32_t smem_addr = uint32_t(__cvta_generic_to_shared(smem));

  // This lane's taps: k-step s, half e -> tap 8 s + tq + 4 e, at band byte offset
  // 4 (kh SW + kw). Padded taps read tap (0, 0) with a zero weight.
  uint32_t toff[KSTEPS][2];
#pragma unroll
  for (int s = 0; s < KSTEPS; ++s)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      int kw;
      const int tap = 8 * s + tq + 4 * e;
      const int kh = int(a.fd_kw.divmod(uint32_t(tap), &kw));
      toff[s][e] = tap < T ? 4u * uint32_t(kh * a.SW + kw) : 0u;
    }

  const int QT = a.QT;
  const int q = warp % QT;           // this warp's 16-filter group within a tile
  const int pstep = kWarps / QT;     // pixel items are taken every pstep-th
  const int p_first = warp / QT;
  // B column n = g -> filter 4 (g / 2) + 2 j + g % 2 of the warp's 16 (see the header)
  const int bfilt = 4 * (g >> 1) + (g & 1);

  const int tile_begin = int((long long)blockIdx.x * a.ntiles / gridDim.x);
  const int tile_end = int((long long)(blockIdx.x + 1) * a.ntiles / gridDim.x);
  if (tile_begin >= tile_end) return;

  Tile cur = decode_tile(a, tile_begin);
  stage_band(a, x, cur, smem);
  cp_async_commit();

  uint32_t bh[KSTEPS][2][2], bl[KSTEPS][2][2];
  int loaded_m0 = -1;
  for (int ti = tile_begin; ti < tile_end; ++ti) {
    const int buf = (ti - tile_begin) & 1;
    Tile nxt{};
    if (ti + 1 < tile_end) {
      nxt = decode_tile(a, ti + 1);
      stage_band(a, x, nxt, smem + (buf ^ 1) * a.band_floats);
    }
    cp_async_commit();

    // B fragments of this warp's 16 filters, split once; tiles in (g, n, rb) order, so a
    // block's consecutive tiles mostly keep their filters
    const int mq = cur.m0 + q * kItemFilt;
    if (cur.m0 != loaded_m0) {
      loaded_m0 = cur.m0;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int f = mq + bfilt + 2 * j;
        const bool fok = f < a.M;
        const float* wf = w + (long long)(fok ? f : 0) * a.w_so;
#pragma unroll
        for (int s = 0; s < KSTEPS; ++s)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int wo = a.wtab[8 * s + tq + 4 * e];
            const float v = (fok && wo >= 0) ? __ldg(wf + wo) : 0.f;
            split_tf32_trunc(v, bh[s][j][e], bl[s][j][e]);
          }
      }
    }

    cp_async_wait<1>();
    __syncthreads();

    const uint32_t band_addr = smem_addr + 4u * uint32_t(buf * a.band_floats);
    const float* band = smem + buf * a.band_floats;
    float* ytile = y + (long long)cur.n * a.y_sn + (long long)cur.oh0 * a.y_sh;
    const int tile_pix = cur.rows * a.OW;
    const int pix_items = (tile_pix + kItemPix - 1) / kItemPix;
    const bool q_live = mq < a.M;
    for (int p = p_first; q_live && p < pix_items; p += pstep) {
      // this lane's 4 pixels (flat in the tile: row r[c], column col[c]) and band addresses
      const int fp0 = p * kItemPix + 4 * g;
      int r[4], col[4];
      uint32_t boff[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        if (ROW4 && c > 0) {
          r[c] = r[0];
          col[c] = col[0] + c;
          boff[c] = boff[0] + 4u * c;
        } else {  // past the tile: a pixel inside it (a whole group of 4 for ROW4)
          r[c] = int(a.fd_ow.divmod(uint32_t(min(fp0 + c, tile_pix - (ROW4 ? 4 : 1))), &col[c]));
          boff[c] = band_addr + 4u * uint32_t(r[c] * a.SW + col[c]);
        }
      }
      float acc[2][2][4];
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
          for (int k = 0; k < 4; ++k) acc[i][j][k] = 0.f;
#pragma unroll
      for (int s = 0; s < KSTEPS; ++s) {
        uint32_t ah[2][4], al[2][4];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          // a0 (row g, k tq), a1 (row g+8, k tq), a2 (row g, k tq+4), a3 (row g+8, k tq+4)
          split_tf32_trunc(lds(boff[2 * i] + toff[s][0]), ah[i][0], al[i][0]);
          split_tf32_trunc(lds(boff[2 * i + 1] + toff[s][0]), ah[i][1], al[i][1]);
          split_tf32_trunc(lds(boff[2 * i] + toff[s][1]), ah[i][2], al[i][2]);
          split_tf32_trunc(lds(boff[2 * i + 1] + toff[s][1]), ah[i][3], al[i][3]);
        }
        // product-major: consecutive MMAs go to different accumulators
#pragma unroll
        for (int prod = 0; prod < 3; ++prod)
#pragma unroll
          for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int j = 0; j < 2; ++j) {
              const uint32_t bhi[2] = {bh[s][j][0], bh[s][j][1]};
              const uint32_t blo[2] = {bl[s][j][0], bl[s][j][1]};
              if (prod == 0) mma_tf32(acc[i][j], al[i], bhi);
              if (prod == 1) mma_tf32(acc[i][j], ah[i], blo);
              if (prod == 2) mma_tf32(acc[i][j], ah[i], bhi);
            }
      }
      // acc[i][j][2h + e] = out(pixel 4g + 2i + h, filter mq + 4tq + 2j + e)
      float v[4][4];  // [pixel c][filter u]
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) v[2 * i + h][2 * j + e] = acc[i][j][2 * h + e];
      float nfc[4] = {0.f, 0.f, 0.f, 0.f};  // NaN if any product or sum went non-finite
#pragma unroll
      for (int c = 0; c < 4; ++c)
#pragma unroll
        for (int u = 0; u < 4; ++u) nfc[u] = fmaf(v[c][u], 0.f, nfc[u]);
      const float nf = (nfc[0] + nfc[1]) + (nfc[2] + nfc[3]);
      if (__any_sync(0xffffffffu, nf != nf)) {
        // float32 FMAs, taps in order (the 3xTF32 products met an inf or NaN)
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int f = mq + 4 * tq + u;
          const float* wf = w + (long long)(f < a.M ? f : 0) * a.w_so;
#pragma unroll
          for (int c = 0; c < 4; ++c) v[c][u] = 0.f;
#pragma unroll 1
          for (int kh = 0; kh < a.KH; ++kh)
#pragma unroll 1
            for (int kw = 0; kw < a.KW; ++kw) {
              const float wv = __ldg(wf + kh * a.w_sh + kw * a.w_sw);
#pragma unroll
              for (int c = 0; c < 4; ++c)
                v[c][u] = fmaf(wv, band[r[c] * a.SW + col[c] + kh * a.SW + kw], v[c][u]);
            }
        }
      }
      // stores (offsets inside the tile's image rows fit 32 bits: single_channel_mma_supported)
      const int f0 = mq + 4 * tq;
      const bool f4 = f0 + 3 < a.M;
      if (ROW4 && a.store != kStoreScalar) {
        // the 4 pixels share a row and are all inside the tile or all past it
        if (fp0 < tile_pix) {
          float* yp = ytile + (r[0] * int(a.y_sh) + col[0] * int(a.y_sw) + f0 * int(a.y_sc));
          if (a.store == kStoreFilters4) {
#pragma unroll
            for (int c = 0; c < 4; ++c) store_filters(yp + c * int(a.y_sw), v[c], f0, a.M);
          } else {
#pragma unroll
            for (int u = 0; u < 4; ++u)
              if (f4 || f0 + u < a.M) st4cs(yp + u * int(a.y_sc), v[0][u], v[1][u], v[2][u], v[3][u]);
          }
        }
      } else if (a.store == kStoreFilters4) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          if (fp0 + c >= tile_pix) continue;
          store_filters(ytile + (r[c] * int(a.y_sh) + col[c] * int(a.y_sw) + f0), v[c], f0, a.M);
        }
      } else if (a.store == kStorePixels4) {
        // the 4 pixels are contiguous in memory (rows back to back)
        float* yp = ytile + (r[0] * int(a.y_sh) + col[0]);
        const bool full = fp0 + 3 < tile_pix;
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          if (f0 + u >= a.M) break;
          float* yf = yp + (f0 + u) * int(a.y_sc);
          if (full) {
            st4cs(yf, v[0][u], v[1][u], v[2][u], v[3][u]);
          } else {
#pragma unroll
            for (int c = 0; c < 4; ++c)
              if (fp0 + c < tile_pix) __stcs(yf + c, v[c][u]);
          }
        }
      } else {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          if (fp0 + c >= tile_pix) continue;
          float* yp = ytile + (r[c] * int(a.y_sh) + col[c] * int(a.y_sw));
#pragma unroll
          for (int u = 0; u < 4; ++u)
            if (f0 + u < a.M) __stcs(yp + (f0 + u) * int(a.y_sc), v[c][u]);
        }
      }
    }
    __syncthreads();  // the band is overwritten by the tile after next
    cur = nxt;
  }
#else
  __trap();  // sm_80+ only: the host never launches it elsewhere
#endif
}

constexpr int kBlocksPerSM = 2;
constexpr long long kSmemBudget = 96 * 1024;  // both band buffers, per block

int ksteps_for(const ConvParams& p) { return int((p.KH * p.KW + 7) / 8); }

// The store order these buffers allow (see the header comment).
int pick_store(const ConvParams& p, int RB, const float* y) {
  const bool y16 = aligned16(y);
  if (y16 && p.y_sc == 1 && p.y_sn % 4 == 0 && p.y_sh % 4 == 0 && p.y_sw % 4 == 0)
    return kStoreFilters4;
  // a lane's 4 pixels 4g..4g+3 of a tile are contiguous: whole rows of OW % 4 == 0, or rows
  // back to back with every tile starting on a multiple of 4
  const bool rows4 = p.OW % 4 == 0 && p.y_sh % 4 == 0;
  const bool flat4 = p.y_sh == p.OW && (RB * p.OW) % 4 == 0;
  if (y16 && p.y_sw == 1 && p.y_sc % 4 == 0 && p.y_sn % 4 == 0 && (rows4 || flat4))
    return kStorePixels4;
  return kStoreScalar;
}

template <int KS>
cudaError_t launch_ks(const MMAArgs& a, const DeviceInfo& dev, size_t smem, const float* x,
                      const float* w, float* y, cudaStream_t stream) {
  auto kern = a.OW % 4 == 0 ? single_channel_mma_kernel<KS, true> : single_channel_mma_kernel<KS, false>;
  cudaError_t err = raise_func_attribute_once(reinterpret_cast<const void*>(kern), dev.device,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              int(smem));
  if (err != cudaSuccess) return err;
  const long long grid = std::min<long long>(a.ntiles, (long long)kBlocksPerSM * dev.sms);
  return launch_ex(kern, dim3(unsigned(grid)), dim3(kThreads), smem, stream, a, x, w, y);
}

// The tile the plan names (MB = plan[4] filters, RB = plan[5] rows); false outside what the
// kernel runs (the planner's mirror: plan_single_channel.mma_attrs_valid).
bool plan_tile(const ConvParams& p, int* RB, int* MB) {
  const long long mb = p.plan[4], rb = p.plan[5];
  if ((mb != 16 && mb != 32 && mb != 64 && mb != 128) || rb < 1 || rb > p.OH) return false;
  if (2 * (rb + p.KH - 1) * ((p.OW + p.KW - 1 + 3) / 4 * 4) * 4 > kSmemBudget) return false;
  *RB = int(rb);
  *MB = int(mb);
  return true;
}

MMAArgs make_args(const ConvParams& p, int RB, int MB, const float* x, const float* y) {
  MMAArgs a{};
  a.x_sn = p.x_sn; a.x_sh = p.x_sh; a.x_sw = p.x_sw;
  a.w_so = p.w_so; a.w_sh = p.w_sh; a.w_sw = p.w_sw;
  a.y_sn = p.y_sn; a.y_sc = p.y_sc; a.y_sh = p.y_sh; a.y_sw = p.y_sw;
  a.H = int(p.H); a.W = int(p.W); a.M = int(p.M); a.KH = int(p.KH); a.KW = int(p.KW);
  a.OH = int(p.OH); a.OW = int(p.OW); a.pad_top = int(p.pad_top); a.pad_left = int(p.pad_left);
  a.RB = RB; a.MB = MB; a.QT = MB / 16;
  a.n_rb = int((p.OH + RB - 1) / RB);
  a.n_g = int((p.M + MB - 1) / MB);
  a.ntiles = int(p.N * a.n_rb * a.n_g);
  a.BW = int(p.OW + p.KW - 1);
  a.SW = (a.BW + 3) / 4 * 4;
  a.vec_in = p.x_sw == 1 && p.x_sh % 4 == 0 && p.x_sn % 4 == 0 && p.pad_left % 4 == 0 &&
             (reinterpret_cast<uintptr_t>(x) & 15) == 0;
  for (int t = 0; t < 8 * kMaxKSteps; ++t)
    a.wtab[t] = t < p.KH * p.KW ? int((t / p.KW) * p.w_sh + (t % p.KW) * p.w_sw) : -1;
  a.band_rows = int(RB + p.KH - 1);
  a.band_floats = (a.band_rows * a.SW + 3) / 4 * 4;
  a.store = pick_store(p, RB, y);
  a.fd_ow = FastDiv(uint32_t(p.OW));
  a.fd_n = FastDiv(uint32_t(p.N));
  a.fd_rb = FastDiv(uint32_t(a.n_rb));
  a.fd_kw = FastDiv(uint32_t(p.KW));
  return a;
}

}  // namespace

bool single_channel_mma_supported(const ConvParams& p) {
  const long long T = p.KH * p.KW;
  if (p.C != 1 || p.stride_h != 1 || p.stride_w != 1 || T < 2 || T > 8 * kMaxKSteps) return false;
  if (p.H >= (1 << 30) || p.W >= (1 << 30) || p.OH >= (1 << 24) || p.OW >= (1 << 24) ||
      p.M >= (1 << 24) || p.N >= (1 << 24))
    return false;
  if (p.pad_top <= -(1 << 24) || p.pad_top >= (1 << 24) || p.pad_left <= -(1 << 24) ||
      p.pad_left >= (1 << 24))
    return false;
  // a filter's taps at non-negative 32-bit offsets (wtab), every tile index in 32 bits, and the
  // plan's tile one the kernel runs
  if (p.w_sh < 0 || p.w_sw < 0 || (p.KH - 1) * p.w_sh + (p.KW - 1) * p.w_sw >= (1LL << 31))
    return false;
  // an output element's offset from its image's first row of a tile, 32 bits (the stores)
  if (p.y_sn < 0 || p.y_sc < 0 || p.y_sh < 0 || p.y_sw < 0 ||
      (p.OH - 1) * p.y_sh + (p.OW - 1) * p.y_sw + (p.M - 1) * p.y_sc >= (1LL << 31))
    return false;
  if (p.N * p.OH * ((p.M + 15) / 16) >= (1LL << 31)) return false;
  int RB = 0, MB = 0;
  return plan_tile(p, &RB, &MB);
}

cudaError_t single_channel_mma_config(const ConvParams& p, const float* y, long long out[6]) {
  if (!single_channel_mma_supported(p)) return cudaErrorInvalidValue;
  DeviceInfo dev;
  cudaError_t err = current_device_info(&dev);
  if (err != cudaSuccess) return err;
  int RB = 0, MB = 0;
  plan_tile(p, &RB, &MB);
  const MMAArgs a = make_args(p, RB, MB, nullptr, y);
  const long long v[6] = {RB, MB, std::min<long long>(a.ntiles, (long long)kBlocksPerSM * dev.sms),
                          2LL * a.band_floats * 4, a.store, ksteps_for(p)};
  for (int i = 0; i < 6; ++i) out[i] = v[i];
  return cudaSuccess;
}

cudaError_t launch_single_channel_mma(const ConvParams& p, const float* x, const float* w,
                                      float* y, cudaStream_t stream) {
  if (!single_channel_mma_supported(p)) return cudaErrorInvalidValue;
  if (p.out_elems() == 0) return cudaSuccess;
  DeviceInfo dev;
  cudaError_t err = current_device_info(&dev);
  if (err != cudaSuccess) return err;
  if (dev.cc_major < 8) return cudaErrorInvalidDevice;
  int RB = 0, MB = 0;
  plan_tile(p, &RB, &MB);
  const MMAArgs a = make_args(p, RB, MB, x, y);
  const size_t smem = size_t(2) * a.band_floats * sizeof(float);
  switch (ksteps_for(p)) {
    case 1: return launch_ks<1>(a, dev, smem, x, w, y, stream);
    case 2: return launch_ks<2>(a, dev, smem, x, w, y, stream);
    case 3: return launch_ks<3>(a, dev, smem, x, w, y, stream);
    case 4: return launch_ks<4>(a, dev, smem, x, w, y, stream);
    case 5: return launch_ks<5>(a, dev, smem, x, w, y, stream);
    case 6: return launch_ks<6>(a, dev, smem, x, w, y, stream);
    case 7: return launch_ks<7>(a, dev, smem, x, w, y, stream);
    default: return launch_ks<8>(a, dev, smem, x, w, y, stream);
  }
}

}  // namespace fastconv
