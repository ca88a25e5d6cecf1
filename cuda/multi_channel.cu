// Multi-channel direct convolution (C > 1, any stride): the paper's section 3.2 "stride-fixed
// block", realised as a register-blocked implicit-GEMM direct convolution on sm_90.
//
// ---------------------------------------------------------------------------------------------
// The paper's symbols and where they live here
//   S    : elements of ch per segment (plan[1]); BK below.  One pipeline stage holds, for ONE
//          filter tap (kh,kw), S consecutive channels c0..c0+S-1 of
//            * M' filters      -> Bs[S][M'+4]   (the "S bytes of each of M' filters")
//            * W'x out pixels  -> As[W'x][S+4]  (the input pixels those outputs need at this tap;
//                                 channel-contiguous input, NHWC) or As[S][W'x+4] (pixel-
//                                 contiguous input, NCHW: v5, see "Loaders" below)
//          The reduction runs over (c-segment, kh, kw), tap innermost, so the K*K consecutive
//          stages of one segment re-read the same input lines (the paper's W'y = K lines of the
//          map per output line) from L1, and one full segment of every filter (S x K x K) streams
//          through the block.  (Departure: the paper's W'y = ceil(S/(4K)) mixes bytes and taps;
//          here a stage is one tap of an S-channel segment, which keeps every global access a
//          run of S contiguous channels (NHWC) or W'x contiguous pixels (NCHW).)
//   M'   : filters per block (plan[2]); BN below.
//   W'x  : output pixels per block (plan[3]); BM below.  Pixels are the flattened (n, oh, ow)
//          index, so a tile may span lines and images: small maps at batch N still fill tiles.
//   W'y  : plan[4]: not a free parameter here (implied by the kernel height, see above); ignored.
//   double buffering: STAGES-deep cp.async ring (STAGES >= 2; 2 is exactly the paper's double
//          buffer, 3-4 hides Hopper's longer latency): segment s+STAGES-1 is in flight while
//          segment s is computed.  Its copies are issued right after the stage barrier, or, in
//          the 8x8 tiles with NHWC input, spread over segment s's k-pairs (SPREAD, measured).
//   register blocking: each thread keeps a TM x TN (8x8 or 4x4) tile of outputs (pixels x
//          filters) in registers; the inner loop is 2x float4 LDS of A + 2x float4 LDS of B per
//          TM*TN FFMAs (plain fp32 FFMA), or, where plan[7] & 4 asks for it (the M' = 64 tiles,
//          3x3 and larger kernels), 3xTF32 mma.sync on the tensor cores (see "Tensor cores").
//   c_split (beyond the paper, plan[5]): when (N*OH*OW / W'x) * (M / M') tiles cannot fill the
//          SMs (batch 1, small maps) the (segment, tap) reduction is split over CS blocks of one
//          thread-block CLUSTER (gridDim.z = CS, cluster dims (1,1,CS), CS <= 8, 16 for 32x64).  Each block
//          parks its partial tile in its own shared memory; after cluster.sync() block r sums
//          slice r of the tile over ranks 0..CS-1 in fixed order through distributed shared
//          memory and writes it.  No scratch memory, one pass, deterministic (same bits every run).
//          Or, where plan[7] & 8 asks (tensor-core tiles, any CS <= 64), through global memory:
//          the CS ranks run without a cluster (no co-scheduling on one GPC, any count), each
//          writes its partial tile to the call's workspace, and mc_split_sum adds them in rank
//          order (deterministic too).  Measured on the H200 where the grid model's advantage is
//          clear (b32 7x7x512 K5: 32x64 x 16 in a cluster 128 us, 64x64 x 16 ranks 106 us).
//
// Plan -> launch mapping (launch_multi_channel).  The plan determines the launch; the
// planner (jax_fastconv/planner.py _multi_channel, MC_CONFIGS) plans over exactly this menu:
//   plan[1] S       : <= 8 -> BK = 8 (32-byte segments), > 8 -> BK = 16 (64-byte segments);
//                     the 128x128 tile exists only with BK = 8.
//   plan[2] M'      : BN; plan[3] W'x: BM.  (W'x, M') = (128,128) if M' >= 96 and W'x >= 91, else
//                     BN = 64 and BM = the nearest of {128, 64, 32} (geometric midpoints 90, 45).
//                     Tiles: 128x128 (256 thr, 8x8/thread, 3 stages), 128x64 (128 thr, 8x8,
//                     3 stages), 64x64 (128 thr, 8x4, 4 stages), 32x64 (128 thr, 4x4, 4 stages).
//   plan[4] W'y     : ignored (= KH in the plan, see above).
//   plan[5] c_split : cluster size CS, clamped to the device (1 below sm_90; 8; 16 for the
//                     32x64 tile where the device co-schedules a non-portable cluster of 16) and
//                     to the number of reduction iterations; <= 0 -> the split auto_config
//                     would give this tile.  With plan[7] & 8 (kSplitGlobal) the ranks of a
//                     tensor-core tile run without a cluster (CS <= 64) when the workspace holds
//                     their partial outputs (multi_channel_workspace_elems); else a cluster.
//   plan[6] threads : ignored (implied by the tile).
//   Only if plan[0] != 2 or any of plan[1..3] <= 0 or > 4096 is the whole configuration chosen
//   by auto_config (the planner's grid rule with the device's SM count).
// Loaders (chosen at launch, not planned): A 16-byte cp.async (one pixel x 4 channels) when the
// input is channel-contiguous, C % 4 == 0 and offsets are 16-byte aligned, else 4-byte
// (channel-fast for x_sc == 1, pixel-fast otherwise); B 16-byte (4 filters) when filter-
// contiguous (HWIO), M % 4 == 0 and aligned, else 4-byte.  The A-tile layout is a template
// choice by input layout (the kernel's AM parameter): channel-contiguous input gets a pixel-
// major tile (row pitch BK+4, BK+2 for the 4-byte loader; the inner loop reads 2 channels of a
// pixel, LDS.64, per A row and 2 x float4 of B per k-pair); pixel-contiguous input (NCHW) gets a
// channel-major tile (pitch W'x+4) filled by the pixel-fast 4-byte loader (one pixel per thread,
// its bounds once per stage) and read as float4 runs of 4 pixels per k.  Shared memory is
// allocated at the pixel-major size for both, so the planner's residency is layout-free.
// Any layout: element strides of every logical axis are honoured; the A-tile loader picks the
// coalesced mapping at launch (channel-fast when x_sc == 1, i.e. NHWC; pixel-fast otherwise,
// e.g. NCHW); the filter loader likewise (HWIO: filter-fast; OIHW: channel-fast).  Padding
// (negative too) is applied in the loader (cp.async zero-fill); any C, M, N, KH, KW.
// The output tile is staged through shared memory and written with the coalesced mapping of the
// output layout (filter-fast for NHWC, pixel-fast for NCHW); it is parked in the same order
// (pixel-major / filter-major), so the epilogue's reads, local or through distributed shared
// memory in the cluster split, are consecutive too.
// Filter staging (plan[7] & 2, cuda/filter_staging.cuh): dense OIHW filters may first be copied
// to HWIO in the call's workspace, where the planner measured the 4-byte OIHW gather to cost
// more than the copy.
// OIHW order (plan[7] & 32, AM = 3; tensor-core tiles, pixel-contiguous input): instead of that
// copy the reduction runs in the filters' own order r = c*KH*KW + tap, so each filter's stage is
// one 16-byte-loadable run of S consecutive r and the A tile is gathered per (r, pixel); the
// gather costs ~5% on large layers, so the planner takes it where the copy weighs more.
// Tensor cores (plan[7] & 4, cuda/mma_3xtf32.cuh): the BM x 64 tiles' FFMAs replaced by 3xTF32
// mma.sync, 2 x 2 warps of BM/2 pixels x 32 filters (BM/32 x 4 m16n8 tiles per warp: the same
// TM x TN accumulators per thread), the stage's products summed in a fresh fragment and added
// with FADD; loaders and ring unchanged; the output straight from the fragment layout (no split,
// aligned filter- or pixel-contiguous output, every accumulator finite), else through the
// shared-memory park (the park cost 1.2-1.3x the kernel time on 1x1 layers at C = 64).  Only with
// the 16-byte filter loader and the 16-byte loader of channel-contiguous input (AM = 2) or the
// channel-major tile of pixel-contiguous input (AM = 0); the planner asks for it where it
// measured faster (planner.py MC_TENSOR_CORES).
// Strides: any (beyond the paper's stride-fixed block): a pixel's window starts at (stride *
// oh, stride * ow) in the input, which is all the loaders need (apix); the rest of the kernel
// works on output pixels.  Restrictions: the filter tensor must have fewer than 2^31 elements
// (32-bit filter offsets) and stride * (OH - 1) < 16384 (packed coordinates); else
// cudaErrorInvalidValue.
// ---------------------------------------------------------------------------------------------

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>
#include <cstdio>

#include "kernels.h"
#include "launch_util.h"
#include "cp_async.cuh"
#include "fast_divide.h"
#include "filter_staging.cuh"
#include "grid_model.h"
#include "mma_3xtf32.cuh"

namespace cg = cooperative_groups;

namespace fastconv {
namespace mc {

// plan[7] bit of a multi-channel plan (with filter_staging.cuh's kStageFiltersHWIO = 2).
constexpr int64_t kTensorCores = 4;  // 3xTF32 mma.sync instead of FFMA (the BM x 64 tiles)
constexpr int64_t kSplitGlobal = 8;  // c_split ranks without a cluster: partials + a sum pass
constexpr int64_t kPointwise = 16;   // 1x1, C = 32/64: the streamed kernel (multi_channel_pointwise.cu)
constexpr int64_t kOihwOrder = 32;   // tensor cores on OIHW filters in place (AM = 3), no staging

struct KArgs {
  const float* __restrict__ x;
  const float* __restrict__ w;
  float* __restrict__ y;
  int C, H, W, M, KH, KW, OH, OW;
  int pad_top, pad_left;
  int stride_h, stride_w;
  long long P;  // N * OH * OW output pixels
  int x_sn, x_sc, x_sh, x_sw;  // 32-bit: the launcher splits N so x spans < 2^31 elements
  int w_so, w_si, w_sh, w_sw;
  long long y_sn, y_sc, y_sh, y_sw;
  int T;        // reduction iterations = ceil(C / BK) * KH * KW
  int b_mfast;  // filter loader: filter-fast (HWIO) or channel-fast (OIHW)
  int y_mfast;  // output writer: filter-fast (NHWC) or pixel-fast (NCHW)
  int y_vec;    // stores straight from registers (no split; FFMA 16-byte): 1 filter-contiguous
                // output, 2 pixel-contiguous output with whole aligned runs of 4 pixels
  float* part;  // split through global memory (kSplitGlobal): rank z's partial tile goes to
                // part[z * P * M + i], i = p * M + m (filter-contiguous output) or m * P + p;
                // null: the cluster split
  // OIHW reduction order (AM = 3 only): r = c * KK + tap runs over R = C * KK in steps of BK
  FastDiv kk_div;  // r -> (c, tap), KK = KH * KW
  int R;
  int inb;         // every valid output's window lies inside the input: no per-tap bounds test
};

constexpr int kOihwOrderMaxTaps = 64;  // KH*KW the OIHW order's per-tap table holds

template <int BM, int BN, int BK, int TM, int TN, int STAGES>
struct Cfg {
  static constexpr int TX = BN / TN, TY = BM / TM, NT = TX * TY;
  // A tile pixel-major (As[m][k], row pitch BK+4: 16-byte rows for the 16-byte loader, and the
  // 4 consecutive pixel rows a warp reads per LDS.64 fall in distinct banks); B tile k-major.
  static constexpr int LDAK = BK + 4, LDB = BN + 4, LDC = BN + 1;
  static constexpr int A_STAGE = BM * LDAK, B_STAGE = BK * LDB;
  static constexpr int PIPE = STAGES * (A_STAGE + B_STAGE);
  // The output tile is parked pixel-major (pitch LDC) for filter-contiguous output, filter-
  // major (pitch LDP) for pixel-contiguous output: the epilogue then reads consecutive
  // addresses in both cases, which matters for the cluster split's distributed shared memory
  // reads (strided remote reads cost 1.7-2.4x the kernel time at batch 1, H200, notes).
  static constexpr int LDP = BM + 1;
  static constexpr int CTILE = BM * LDC > BN * LDP ? BM * LDC : BN * LDP;
  static constexpr int REGION = PIPE > CTILE ? PIPE : CTILE;  // floats
  static constexpr int REGION_AL = (REGION + 3) & ~3;
  static constexpr size_t SMEM = size_t(REGION_AL) * 4 + size_t(BM) * 16;  // + rowoff, apix
  static constexpr int EA = BM * BK / NT, EB = BN * BK / NT;                // 4-byte loaders
  static constexpr int KV = BK / 4;                                          // 16-byte vectors
  static constexpr int EAV = (BM * KV + NT - 1) / NT, EBV = (BN * KV + NT - 1) / NT;
  static constexpr int MINB = NT >= 256 ? 2 : 3;  // <= 128 (256 thr) or <= 168 (128 thr) regs
  // OIHW reduction order (AM = 3): the B tile filter-major Bs[M'][S+4] (16-byte rows along r;
  // a pitch of 4 mod 8 words keeps the (filter g, r t) fragment reads conflict-free), and a
  // per-tap table (input offset, dh, dw) of up to RO_TAPS taps after the pixel tables.
  // And where every window lies inside the input and a rank's r fit RO_RTAB entries, each r's
  // input offset (tap and channel) in a table after that: no per-r arithmetic in the loader.
  static constexpr int B_STAGE_RO = BN * (BK + 4), RO_TAPS = kOihwOrderMaxTaps,
                       RO_RTAB = BM <= 64 ? 2048 : 0;
  static constexpr int PIPE_RO = STAGES * (A_STAGE + B_STAGE_RO);
  static constexpr int REGION_RO_AL = ((PIPE_RO > CTILE ? PIPE_RO : CTILE) + 3) & ~3;
  static constexpr size_t SMEM_RO =
      size_t(REGION_RO_AL) * 4 + size_t(BM) * 16 + RO_TAPS * 16 + RO_RTAB * 4;
  static_assert(TX % 8 == 0 && TY % 4 == 0, "warp tile is 4 (pixels) x 8 (filters) threads");
  static_assert((BM * BK) % NT == 0 && (BN * BK) % NT == 0, "loader split");
  static_assert(NT % BK == 0 && NT % BM == 0, "loader mappings");
  static_assert(BK % 4 == 0 && BN % 4 == 0, "16-byte vectors");
  static_assert(TM == 4 || TM == 8, "TM");
  static_assert(TN == 4 || TN == 8, "TN");
};

// AM: A (input) loader and A-tile layout, by input layout:
//     0 pixel-contiguous input (|x_sw| < |x_sc|, NCHW): channel-major A tile As[BK][BM+4]
//       (v3's layout), pixel-fast 4-byte loader (a warp copies 32 consecutive pixels of one
//       channel: coalesced, conflict-free stores), inner loop TM/4 LDS.128 of A per k;
//     1 channel-contiguous 4-byte (x_sc == 1, C % 4 != 0 or unaligned): pixel-major A tile;
//     2 channel-contiguous 16-byte (x_sc == 1, C % 4 == 0, 16-byte aligned pixel offsets):
//       pixel-major A tile As[BM][BK+4], inner loop TM LDS.64 of A per k-pair (v4);
//     3 pixel-contiguous input with dense OIHW filters, tensor cores only: the reduction runs
//       in the filters' own order r = c * KH*KW + tap (tap fastest), so a stage is S consecutive
//       r of each of M' filters, one 16-byte run per 4 (B tile filter-major), and the A tile
//       (channel-major, k = r) is gathered pixel-fast: warp w takes r = w*S/4 .. +S/4-1, lane
//       the pixels lane + 32 h.  No HWIO copy of the filters (filter_staging.cuh) is needed.
// BV: B (filter) loader 16-byte, filter-fast (w_so == 1, M % 4 == 0, aligned); else 4-byte.
// Resident blocks the compiler must allow (registers <= 64K / (threads x blocks)): Cfg::MINB,
// except 4 for the 128x64 tile with the channel-major A tile and the 16-byte filter loader
// (NCHW input, HWIO or staged filters), which fits 128 registers without spills.  Measured
// (H200, driver, same plans, 168 -> 128 registers): b32 7x7x512 K3 144.8 -> 124.5 us,
// 14x14x256 K3 179.5 -> 158.5, 14x14x512 K5 1127 -> 1040, 224x224x64 K1 408 -> 398, the other
// 24 NCHW layers of that tile within +-1.1%.  And 4 for the 64x64 tile in the OIHW order
// (AM = 3), which the compiler would give 131 registers (3 blocks; the other 64x64 tensor-core
// instances fit 128 by themselves).  The NHWC instances lose 4-12% at 128 registers
// (the spread loader's live values) and spill without it: they stay at 3 blocks.  And 1 for
// the 128x128 tile with the 4-byte filter loader and a channel-major or 4-byte A tile, which
// spilled 36-40 B at 128 registers (sm_90a) and takes 168 without the cap: no plan names the
// 128x128 tile (the planner prefers M' = 64), only hand-made plans reach it.
template <int BM, int BN, int BK, int TM, int TN, int STAGES, int AM, bool BV, bool MMA, bool GS>
constexpr int min_blocks() {
  return ((BM == 128 && BN == 64 && AM == 0 && BV && !MMA) || (BM == 64 && AM == 3)) ? 4
         : (BM == 128 && BN == 128 && !BV && AM != 2)                              ? 1
                                                    : Cfg<BM, BN, BK, TM, TN, STAGES>::MINB;
}

// GS: the split through global memory (kSplitGlobal; tensor-core tiles only): its own
// instances, so that the epilogue it adds does not change the code of the others (a change of
// the 64x64 tensor-core instance's epilogue cost 2-4% on its cluster-split layers, H200).
template <int BM, int BN, int BK, int TM, int TN, int STAGES, int AM, bool BV, bool MMA = false,
          bool GS = false>
__global__ void __launch_bounds__(Cfg<BM, BN, BK, TM, TN, STAGES>::NT,
                                  (min_blocks<BM, BN, BK, TM, TN, STAGES, AM, BV, MMA, GS>()))
    mc_kernel(const KArgs a) {
  using G = Cfg<BM, BN, BK, TM, TN, STAGES>;
  constexpr int NT = G::NT, LDB = G::LDB, LDC = G::LDC, TY = G::TY;
  // KM: channel-major A tile (pixel-contiguous input).  A row pitch: pixel-major BK+4 (16-byte
  // rows) for the 16-byte loader, BK+2 for the channel-fast 4-byte loader; channel-major BM+4.
  // The A stage is allocated at BM x (BK+4) floats in every case (the largest of the three:
  // BM > BK), so shared memory per block, hence the planner's residency, is layout-independent.
  constexpr bool RO = AM == 3;
  constexpr bool KM = AM == 0 || RO;
  static_assert(!RO || (MMA && NT == 128 && BM % 32 == 0), "OIHW order: tensor-core tiles");
  constexpr int LDAK = AM == 2 ? G::LDAK : BK + 2;
  constexpr int B_STAGE = RO ? G::B_STAGE_RO : G::B_STAGE, LDBK = BK + 4;  // LDBK: RO's B pitch
  // (the tensor-core instances read the channel-major tile by (pixel g, channel t) lanes: a
  // pitch of 8 mod 32 banks keeps those reads conflict-free)
  constexpr int LDAM = (MMA && KM) ? BM + 8 : BM + 4;
  static_assert(!KM || BK * LDAM <= G::A_STAGE, "channel-major A stage fits the allocation");
  constexpr int EA = G::EA, EB = G::EB, KV = G::KV, EAV = G::EAV, EBV = G::EBV;
  extern __shared__ __align__(16) float smem[];
  float* As = smem;
  float* Bs = smem + STAGES * G::A_STAGE;
  long long* rowoff = reinterpret_cast<long long*>(smem + (RO ? G::REGION_RO_AL : G::REGION_AL));
  int2* apix = reinterpret_cast<int2*>(rowoff + BM);  // per tile pixel: x offset, (oh<<16)|ow
  int4* taptab = reinterpret_cast<int4*>(apix + BM);  // RO: per tap input offset, dh, dw
  int* rtab = reinterpret_cast<int*>(taptab + G::RO_TAPS);  // RO: per r of this rank, offset

  const int tid = threadIdx.x;
  const long long p0 = (long long)blockIdx.x * BM;
  const int m0 = blockIdx.y * BN;
  const int CS = gridDim.z, zr = blockIdx.z;
  const int it_begin = (int)(((long long)a.T * zr) / CS);
  const int it_end = (int)(((long long)a.T * (zr + 1)) / CS);
  const int nit = it_end - it_begin;
  const int KK = a.KH * a.KW;

  // Per tile pixel: output offset (epilogue) and the input offset + packed input coordinates
  // (stride * oh, stride * ow) of its window's origin (A loader; a tap adds (kh, kw) - pad).
  for (int m = tid; m < BM; m += NT) {
    long long p = p0 + m;
    long long off = -1;
    int2 ap = make_int2(0, 0x7fff0000);  // oh = 32767: ih >= 16384 >= H for any tap
    if (p < a.P) {
      long long hw = (long long)a.OH * a.OW;
      int n = (int)(p / hw);
      int r = (int)(p - n * hw);
      int oh = r / a.OW, ow = r - (r / a.OW) * a.OW;
      off = n * a.y_sn + oh * a.y_sh + ow * a.y_sw;
      const int ih0 = oh * a.stride_h, iw0 = ow * a.stride_w;  // the window's input origin
      ap.x = (int)(n * a.x_sn + (long long)ih0 * a.x_sh + (long long)iw0 * a.x_sw);
      ap.y = (ih0 << 16) | iw0;
    }
    rowoff[m] = off;
    apix[m] = ap;
  }
  // RO: the r table where every window is inside the input and this rank's r fit (not in the
  // 128x64 tile: at its 168 registers the second loader path spills)
  const bool ro_tab = RO && G::RO_RTAB > 0 && a.inb && nit * BK <= G::RO_RTAB;
  if (RO) {
    for (int t = tid; t < KK; t += NT) {
      const int dh = t / a.KW - a.pad_top, dw = t % a.KW - a.pad_left;
      taptab[t] = make_int4(dh * a.x_sh + dw * a.x_sw, dh, dw, 0);
    }
    if (ro_tab) {
      __syncthreads();  // taptab written (plain divisions per r cost ~2% of a 36-step rank)
      for (int e = tid; e < nit * BK; e += NT) {
        int tap;
        const int c = (int)a.kk_div.divmod((uint32_t)(it_begin * BK + e), &tap);
        rtab[e] = taptab[tap].x + min(c, a.C - 1) * a.x_sc;  // (c clamped: r >= R stays in x)
      }
    }
  }
  __syncthreads();

  // ---- B loader setup: per element (vector) the 32-bit filter offset (tap 0, segment 0)
  constexpr int NB = BV ? EBV : EB;
  int boff[NB];
#pragma unroll
  for (int j = 0; j < NB; ++j) {
    int idx = tid + j * NT;
    if (RO) {  // filter n's 4 consecutive r from k (filter-major B tile)
      int n = idx / KV, k = (idx % KV) * 4;
      boff[j] = (idx < BN * KV && m0 + n < a.M) ? (m0 + n) * a.w_so + k : -1;
    } else if (BV) {
      int n = (idx % (BN / 4)) * 4, k = idx / (BN / 4);
      boff[j] = (idx < BN * KV && m0 + n < a.M) ? (m0 + n) + k * a.w_si : -1;
    } else {
      int n = a.b_mfast ? idx % BN : idx / BK;
      int k = a.b_mfast ? idx / BN : idx % BK;
      boff[j] = (m0 + n < a.M) ? (m0 + n) * a.w_so + k * a.w_si : -1;
    }
  }

  // reduction counters of the next stage to load: segment start c, tap (kh, kw)
  // (RO: l_r, the stage's first r)
  int l_c, l_kh, l_kw, l_r = it_begin * BK;
  {
    int seg = it_begin / KK, tap = it_begin - seg * KK;
    l_c = seg * BK;
    l_kh = tap / a.KW;
    l_kw = tap - l_kh * a.KW;
  }

  // One stage: W'x pixels x S channels of the input and S channels of M' filters at one tap.
  // Loaded whole after the barrier (load_stage), or, in the 8x8-per-thread tiles with the
  // 16-byte pixel-major A loader (NHWC input), in pieces interleaved with the FFMAs of the
  // stage being computed (SPREAD): issued back to back after the barrier, the loader's
  // dependent chains (apix LDS -> bounds -> address -> LDGSTS) stalled every warp of the block
  // at once (ncu, b1 512x512x64 K3 NHWC: 10% of the instructions, 36% of the stall samples;
  // spread: issue slots busy 70.6% -> 78.1%, 503 -> 468 us).  Not spread: the small tiles
  // (registers 93 -> 166 in 32x64) and the channel-major A tile (NCHW: 10-15% slower).  The
  // whole-stage loader is kept as it was rather than built from the pieces: built from them it
  // measured up to 20% slower in the channel-major tiles (b1 7x7x512 K5 NCHW/OIHW, 32x64:
  // 69.5 -> 84.2 us; H200, session 5), an artefact of code generation we did not pin down.
#ifndef MC_SPREAD  // -DMC_SPREAD=0: the whole-stage loader everywhere (A/B timing)
#define MC_SPREAD 1
#endif
  constexpr bool SPREAD = !MMA && MC_SPREAD && TM * TN == 64 && AM == 2;
  // RO: this thread's pixels (lane + 32 h) for the whole launch: input offset, packed origin
  constexpr int KR = BK / 4, HP = RO ? BM / 32 : 1;  // r per warp, pixels per lane
  int ro_px[HP], ro_py[HP];
  const float* ro_xb[HP];  // a.x + the pixel's offset (out-of-range pixels: a.x); HP <= 2 only
                           // (the 128x64 tile has no registers for them: it would spill)
#pragma unroll
  for (int h = 0; h < HP; ++h) {
    const int2 ap = RO ? apix[(tid & 31) + 32 * h] : make_int2(0, 0);
    ro_px[h] = ap.x;
    ro_py[h] = ap.y;
    ro_xb[h] = a.x + ap.x;
  }
  auto load_stage_ro = [&](int buf) {
    const int w4 = (tid >> 5) * KR;
    float* as = As + buf * G::A_STAGE + w4 * LDAM + (tid & 31);
    float* bs = Bs + buf * B_STAGE;
    int r = l_r + w4, tap = 0, c = 0;
    // every window inside the input: r's pixels at offset roff, only out-of-range pixels (their
    // sentinel) and r >= R zero-fill
    auto gather_inside = [&](int kk, int roff, bool vr) {
#pragma unroll
      for (int h = 0; h < HP; ++h) {
        const bool v = vr && ro_py[h] != 0x7fff0000;
        cp_async4(as + kk * LDAM + 32 * h,
                  HP <= 2 ? ro_xb[h] + roff : (v ? a.x + (ro_px[h] + roff) : a.x), v);
      }
    };
    if (ro_tab) {  // the offsets from the r table
      const int* rt = rtab + (l_r - it_begin * BK) + w4;
#pragma unroll
      for (int kk = 0; kk < KR; ++kk, ++r) gather_inside(kk, rt[kk], r < a.R);
    } else if (a.inb) {
      c = (int)a.kk_div.divmod((uint32_t)r, &tap);  // then stepped: r, tap, c
#pragma unroll
      for (int kk = 0; kk < KR; ++kk, ++r) {
        // (c clamped: every address stays inside the input, so no select of a safe one)
        gather_inside(kk, taptab[tap].x + (HP <= 2 ? min(c, a.C - 1) : c) * a.x_sc, r < a.R);
        if (++tap == KK) tap = 0, ++c;
      }
    } else {
      c = (int)a.kk_div.divmod((uint32_t)r, &tap);
#pragma unroll
      for (int kk = 0; kk < KR; ++kk, ++r) {
        const bool vr = r < a.R;
        const int4 tt = taptab[tap];
        const int roff = tt.x + c * a.x_sc;
#pragma unroll
        for (int h = 0; h < HP; ++h) {
          const int ih = (ro_py[h] >> 16) + tt.y, iw = (ro_py[h] & 0xffff) + tt.z;
          const bool v = vr && (unsigned)ih < (unsigned)a.H && (unsigned)iw < (unsigned)a.W;
          cp_async4(as + kk * LDAM + 32 * h, v ? a.x + (ro_px[h] + roff) : a.x, v);
        }
        if (++tap == KK) tap = 0, ++c;
      }
    }
#pragma unroll
    for (int j = 0; j < EBV; ++j) {
      const int idx = tid + j * NT;
      if (EBV * NT == BN * KV || idx < BN * KV) {
        const int n = idx / KV, k = (idx % KV) * 4;
        const bool v = boff[j] >= 0 && l_r + k < a.R;  // (R % 4 == 0: whole runs)
        const float* src = v ? a.w + (boff[j] + l_r) : a.w;
        cp_async16(bs + n * LDBK + k, src, v);
      }
    }
    l_r += BK;
  };
  auto load_stage = [&](int buf) {
    if constexpr (RO) {
      load_stage_ro(buf);
      return;
    }
    float* as = As + buf * G::A_STAGE;
    float* bs = Bs + buf * B_STAGE;
    const int dh = l_kh - a.pad_top, dw = l_kw - a.pad_left;
    const int tapoff = dh * a.x_sh + dw * a.x_sw;
    // A: W'x pixels x S channels of the input shifted by this tap (pixel-major in shared)
    if (AM == 2) {
#pragma unroll
      for (int j = 0; j < EAV; ++j) {
        const int idx = tid + j * NT;
        if (EAV * NT == BM * KV || idx < BM * KV) {
          const int m = idx / KV, k = (idx % KV) * 4;
          const int c = l_c + k;
          const int2 ap = apix[m];
          const int ih = (ap.y >> 16) + dh, iw = (ap.y & 0xffff) + dw;
          const bool v = (unsigned)ih < (unsigned)a.H && (unsigned)iw < (unsigned)a.W && c < a.C;
          const float* src = v ? a.x + (ap.x + tapoff + c) : a.x;
          cp_async16(as + m * LDAK + k, src, v);
        }
      }
    } else if (KM) {
      // pixel-fast: this thread's one pixel (tid % BM), channels tid / BM + j * (NT / BM);
      // the pixel's bounds test and offset once per stage, a channel stride per element
      const int m = tid % BM, k0 = tid / BM;
      const int2 ap = apix[m];
      const int ih = (ap.y >> 16) + dh, iw = (ap.y & 0xffff) + dw;
      const bool vp = (unsigned)ih < (unsigned)a.H && (unsigned)iw < (unsigned)a.W;
      const int base = ap.x + tapoff + (l_c + k0) * a.x_sc;
#pragma unroll
      for (int j = 0; j < EA; ++j) {
        const int k = k0 + j * (NT / BM);
        const bool v = vp && l_c + k < a.C;
        const float* src = v ? a.x + (base + j * (NT / BM) * a.x_sc) : a.x;
        cp_async4(as + k * LDAM + m, src, v);
      }
    } else {
#pragma unroll
      for (int j = 0; j < EA; ++j) {
        const int idx = tid + j * NT;
        const int m = idx / BK;
        const int k = idx % BK;
        const int c = l_c + k;
        const int2 ap = apix[m];
        const int ih = (ap.y >> 16) + dh, iw = (ap.y & 0xffff) + dw;
        const bool v = (unsigned)ih < (unsigned)a.H && (unsigned)iw < (unsigned)a.W && c < a.C;
        const float* src = v ? a.x + (ap.x + tapoff + c * a.x_sc) : a.x;
        cp_async4(as + m * LDAK + k, src, v);
      }
    }
    // B: S channels of M' filters at this tap
    const int woff = l_c * a.w_si + l_kh * a.w_sh + l_kw * a.w_sw;
    if (BV) {
#pragma unroll
      for (int j = 0; j < EBV; ++j) {
        const int idx = tid + j * NT;
        if (EBV * NT == BN * KV || idx < BN * KV) {
          const int n = (idx % (BN / 4)) * 4, k = idx / (BN / 4);
          const bool v = boff[j] >= 0 && l_c + k < a.C;
          const float* src = v ? a.w + (boff[j] + woff) : a.w;
          cp_async16(bs + k * LDB + n, src, v);
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < EB; ++j) {
        const int idx = tid + j * NT;
        const int n = a.b_mfast ? idx % BN : idx / BK;
        const int k = a.b_mfast ? idx / BN : idx % BK;
        const bool v = boff[j] >= 0 && l_c + k < a.C;
        const float* src = v ? a.w + (boff[j] + woff) : a.w;
        cp_async4(bs + k * LDB + n, src, v);
      }
    }
    // advance: tap innermost, then the next S-channel segment
    if (++l_kw == a.KW) {
      l_kw = 0;
      if (++l_kh == a.KH) {
        l_kh = 0;
        l_c += BK;
      }
    }
  };

  constexpr int NPA = EAV, NPB = BV ? EBV : EB;  // pieces of a spread stage
  struct Tap { int dh, dw, tapoff, woff; };       // the stage's tap: shifts and offsets
  auto tap_of = [&]() {
    Tap t;
    t.dh = l_kh - a.pad_top;
    t.dw = l_kw - a.pad_left;
    t.tapoff = t.dh * a.x_sh + t.dw * a.x_sw;
    t.woff = l_c * a.w_si + l_kh * a.w_sh + l_kw * a.w_sw;
    return t;
  };
  // piece p < NPA: 4 channels of one pixel (A); else 4 filters (16-byte) or one filter
  // element (4-byte) of B.  `live` false: no copy.
  auto load_piece = [&](int buf, int p, const Tap& t, bool live) {
    if (p < NPA) {
      float* as = As + buf * G::A_STAGE;
      const int idx = tid + p * NT;
      if (EAV * NT == BM * KV || idx < BM * KV) {
        const int m = idx / KV, k = (idx % KV) * 4;
        const int c = l_c + k;
        const int2 ap = apix[m];
        const int ih = (ap.y >> 16) + t.dh, iw = (ap.y & 0xffff) + t.dw;
        const bool v = live && (unsigned)ih < (unsigned)a.H && (unsigned)iw < (unsigned)a.W && c < a.C;
        const float* src = v ? a.x + (ap.x + t.tapoff + c) : a.x;
        cp_async16(as + m * LDAK + k, src, v);
      }
      return;
    }
    float* bs = Bs + buf * B_STAGE;
    const int j = p - NPA, idx = tid + j * NT;
    if (BV) {
      if (EBV * NT == BN * KV || idx < BN * KV) {
        const int n = (idx % (BN / 4)) * 4, k = idx / (BN / 4);
        const bool v = live && boff[j] >= 0 && l_c + k < a.C;
        const float* src = v ? a.w + (boff[j] + t.woff) : a.w;
        cp_async16(bs + k * LDB + n, src, v);
      }
    } else {
      const int n = a.b_mfast ? idx % BN : idx / BK;
      const int k = a.b_mfast ? idx / BN : idx % BK;
      const bool v = live && boff[j] >= 0 && l_c + k < a.C;
      const float* src = v ? a.w + (boff[j] + t.woff) : a.w;
      cp_async4(bs + k * LDB + n, src, v);
    }
  };
  auto advance = [&]() {  // as load_stage does: tap innermost, then the next segment
    if (++l_kw == a.KW) {
      l_kw = 0;
      if (++l_kh == a.KH) {
        l_kh = 0;
        l_c += BK;
      }
    }
  };

  // thread position: warps tile the block, each warp is 4 (pixel rows) x 8 (filter cols);
  // a thread owns filter columns tx*4+j, BN/2+tx*4+j and pixel rows prow(i), i < TM:
  // pixel-major A: ty + i*TY; channel-major A: ty*4 + i, BM/2 + ty*4 + (i-4) (float4 reads).
  const int warp = tid >> 5, lane = tid & 31;
  constexpr int WX = G::TX / 8;
  const int ty = (warp / WX) * 4 + (lane >> 3);
  const int tx = (warp % WX) * 8 + (lane & 7);

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  // prologue: STAGES-1 segments in flight
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nit) load_stage(s);
    cp_async_commit();
  }
  int rbuf = 0, wbuf = STAGES - 1;
  for (int i = 0; i < nit; ++i) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // stage i visible to all; buffer (i-1)%STAGES free for reuse
    // stage i + STAGES - 1 goes to buffer wbuf: at once before the FFMAs, or SPREAD in pieces
    // over this stage's k-pairs (then committed after them)
    const bool live = i + STAGES - 1 < nit;
    const Tap t = tap_of();  // SPREAD only (dead otherwise)
    if (!SPREAD) {
      if (live) load_stage(wbuf);
      cp_async_commit();
      wbuf = (wbuf + 1 == STAGES) ? 0 : wbuf + 1;
    }

    if constexpr (MMA) {
      static_assert((AM == 2 || KM) && BV && BN == 64 && NT == 128 && BM % 32 == 0 && BK % 8 == 0 &&
                    TN % 4 == 0 && TM * TN * 32 == BM * 16, "tensor-core tiles");
      // warp (warp / 2, warp % 2) owns pixels (warp / 2) * BM/2 .. + BM/2 - 1 and filters
      // (warp % 2) * 32 .. + 31: MT m16 tiles x 4 n8 tiles; the stage's B fragments are split
      // once, then per m16 tile its A fragments, and per n8 tile a fresh fragment sums the
      // stage's K8 k-steps (3 products each) before one FADD per accumulator
      constexpr int MT = BM / 32, K8 = BK / 8;
      const int g = lane >> 2, t4 = lane & 3, mw = (warp >> 1) * (BM / 2), nw = (warp & 1) * 32;
      const float* as = As + rbuf * G::A_STAGE;
      const float* bs = Bs + rbuf * B_STAGE;
      uint32_t bh[K8][4][2], bl[K8][4][2];
#pragma unroll
      for (int q = 0; q < K8; ++q)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int k = q * 8 + t4 + 4 * h, n = nw + nt * 8 + g;
            const float b = RO ? bs[n * LDBK + k] : bs[k * LDB + n];
            if constexpr (MT <= 2) split_tf32_trunc(b, bh[q][nt][h], bl[q][nt][h]);
            else split_tf32(b, bh[q][nt][h], bl[q][nt][h]);  // (128x64: trunc spills)
          }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        uint32_t ah[K8][4], al[K8][4];
#pragma unroll
        for (int q = 0; q < K8; ++q)
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            const int m = mw + mt * 16 + g + 8 * (r & 1), k = q * 8 + t4 + 4 * (r >> 1);
            split_tf32_trunc(KM ? as[k * LDAM + m] : as[m * LDAK + k], ah[q][r], al[q][r]);
          }
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const int i0 = (mt * 4 + nt) * 4;  // accumulator of fragment element 0 (tile_row)
          float* d = &acc[i0 / TN][i0 % TN];
          float f[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
          for (int q = 0; q < K8; ++q) {
            mma_tf32(f, al[q], bh[q][nt]);
            mma_tf32(f, ah[q], bl[q][nt]);
            mma_tf32(f, ah[q], bh[q][nt]);
          }
#pragma unroll
          for (int e = 0; e < 4; ++e) d[e] += f[e];
        }
      }
      rbuf = (rbuf + 1 == STAGES) ? 0 : rbuf + 1;
      continue;
    }
    if constexpr (KM) {
      const float* as = As + rbuf * G::A_STAGE + ty * 4;
      const float* bs = Bs + rbuf * G::B_STAGE + tx * 4;
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        float ra[TM], rb[TN];
#pragma unroll
        for (int h = 0; h < TM / 4; ++h) {
          float4 v = *reinterpret_cast<const float4*>(as + k * LDAM + h * (BM / 2));
          ra[h * 4 + 0] = v.x; ra[h * 4 + 1] = v.y; ra[h * 4 + 2] = v.z; ra[h * 4 + 3] = v.w;
        }
#pragma unroll
        for (int h = 0; h < TN / 4; ++h) {
          float4 v = *reinterpret_cast<const float4*>(bs + k * LDB + h * (BN / 2));
          rb[h * 4 + 0] = v.x; rb[h * 4 + 1] = v.y; rb[h * 4 + 2] = v.z; rb[h * 4 + 3] = v.w;
        }
#pragma unroll
        for (int ii = 0; ii < TM; ++ii)
#pragma unroll
          for (int jj = 0; jj < TN; ++jj) acc[ii][jj] = fmaf(ra[ii], rb[jj], acc[ii][jj]);
      }
      rbuf = (rbuf + 1 == STAGES) ? 0 : rbuf + 1;
      continue;
    }
    const float* as = As + rbuf * G::A_STAGE + ty * LDAK;
    const float* bs = Bs + rbuf * G::B_STAGE + tx * 4;
#pragma unroll
    for (int k = 0; k < BK; k += 2) {
      float2 ra[TM];
      float rb0[TN], rb1[TN];
#pragma unroll
      for (int ii = 0; ii < TM; ++ii)
        ra[ii] = *reinterpret_cast<const float2*>(as + ii * TY * LDAK + k);
#pragma unroll
      for (int h = 0; h < TN / 4; ++h) {
        float4 v = *reinterpret_cast<const float4*>(bs + k * LDB + h * (BN / 2));
        float4 u = *reinterpret_cast<const float4*>(bs + (k + 1) * LDB + h * (BN / 2));
        rb0[h * 4 + 0] = v.x; rb0[h * 4 + 1] = v.y; rb0[h * 4 + 2] = v.z; rb0[h * 4 + 3] = v.w;
        rb1[h * 4 + 0] = u.x; rb1[h * 4 + 1] = u.y; rb1[h * 4 + 2] = u.z; rb1[h * 4 + 3] = u.w;
      }
#pragma unroll
      for (int ii = 0; ii < TM; ++ii)
#pragma unroll
        for (int jj = 0; jj < TN; ++jj) acc[ii][jj] = fmaf(ra[ii].x, rb0[jj], acc[ii][jj]);
#pragma unroll
      for (int ii = 0; ii < TM; ++ii)
#pragma unroll
        for (int jj = 0; jj < TN; ++jj) acc[ii][jj] = fmaf(ra[ii].y, rb1[jj], acc[ii][jj]);
      constexpr int NS = BK / 2;  // k-pair steps
#pragma unroll
      for (int p = (k / 2) * (NPA + NPB) / NS; SPREAD && p < (k / 2 + 1) * (NPA + NPB) / NS; ++p)
        load_piece(wbuf, p, t, live);
    }
    if (SPREAD) {
      if (live) advance();
      cp_async_commit();
      wbuf = (wbuf + 1 == STAGES) ? 0 : wbuf + 1;
    }
    rbuf = (rbuf + 1 == STAGES) ? 0 : rbuf + 1;
  }
  cp_async_wait<0>();
  // Where accumulator (ii, jj) of this thread sits in the tile: pixel row, filter column.
  auto prow = [=](int ii) {
    return KM ? (ii < 4 ? ty * 4 + ii : BM / 2 + ty * 4 + (ii - 4)) : ty + ii * TY;
  };
  auto fcol = [=](int jj) { return (jj < 4) ? tx * 4 + jj : BN / 2 + tx * 4 + (jj - 4); };
  // Tensor cores: accumulator i = ii * TN + jj is element e = i % 4 of the warp's m16n8 tile
  // (mt, nt) = (i / 16, i / 4 % 4): row g + 8 (e / 2), column 2 t + e % 2 of that tile.
  auto tile_row = [=](int ii, int jj) {
    const int i = ii * TN + jj;
    return MMA ? (warp >> 1) * (BM / 2) + (i >> 4) * 16 + (lane >> 2) + 8 * ((i & 3) >> 1) : prow(ii);
  };
  auto tile_col = [=](int ii, int jj) {
    const int i = ii * TN + jj;
    return MMA ? (warp & 1) * 32 + ((i >> 2) & 3) * 8 + 2 * (lane & 3) + (i & 1) : fcol(jj);
  };
  // Any non-finite accumulator in this thread (the tensor cores' inf x 0 = NaN; see below).
  auto any_non_finite = [&]() {
    bool bad = false;
#pragma unroll
    for (int ii = 0; ii < TM; ++ii)
#pragma unroll
      for (int jj = 0; jj < TN; ++jj) bad |= !(fabsf(acc[ii][jj]) <= FLT_MAX);
    return bad;
  };
  // Filter-contiguous output, no split: each thread's 4-filter runs are whole float4s of one
  // output pixel, and the 8 lanes of a warp row cover 128 contiguous bytes, so the tile goes
  // straight from registers to global memory (no park, no barrier, 1/4 the stores).  Not in
  // the 128x128 tile (256 threads, 128 registers: it would spill; not planned on sm_90).
  if constexpr (KM && NT < 256 && (!MMA || BM == 32)) {  // (MMA && BM == 32: see below)
    // Pixel-contiguous output from the channel-major tile: a thread's rows ty*4 .. ty*4+3 (and
    // BM/2 + ...) are 4 consecutive pixels, a float4 per filter when OH*OW % 4 == 0 (runs never
    // straddle images and stay 16-byte aligned); the 4 ty lanes of a warp write 64 contiguous
    // bytes per filter.
    if (a.y_vec == 2 && CS == 1) {
#pragma unroll
      for (int h = 0; h < TM / 4; ++h) {
        const long long ro = rowoff[prow(h * 4)];
        if (ro < 0) continue;  // P % 4 == 0 here: a run is wholly inside or outside
#pragma unroll
        for (int jj = 0; jj < TN; ++jj) {
          const int col = fcol(jj);
          if (m0 + col < a.M)
            *reinterpret_cast<float4*>(a.y + ro + (long long)(m0 + col) * a.y_sc) =
                make_float4(acc[h * 4][jj], acc[h * 4 + 1][jj], acc[h * 4 + 2][jj],
                            acc[h * 4 + 3][jj]);
        }
      }
      return;
    }
  }
  if (!MMA && NT < 256 && a.y_vec == 1 && CS == 1) {
#pragma unroll
    for (int ii = 0; ii < TM; ++ii) {
      const long long ro = rowoff[prow(ii)];
      if (ro < 0) continue;
#pragma unroll
      for (int h = 0; h < TN / 4; ++h) {
        const int col = fcol(h * 4);
        if (m0 + col < a.M)
          *reinterpret_cast<float4*>(a.y + ro + m0 + col) =
              make_float4(acc[ii][h * 4], acc[ii][h * 4 + 1], acc[ii][h * 4 + 2], acc[ii][h * 4 + 3]);
      }
    }
    return;
  }
  // Tensor cores, no split: straight from the fragment layout when every accumulator is finite
  // (else the park below and its FFMA recompute).  A quad of lanes holds 8 consecutive filters
  // of one pixel (float2 each: 32 contiguous bytes, filter-contiguous output) and the 8 groups
  // 8 consecutive pixels (32 bytes per filter, pixel-contiguous output): whole sectors either
  // way, no barrier, no shared-memory round trip.
  // Not in the 32x64 channel-major instance (NCHW input): compiled with this epilogue it ran
  // 3-8% slower even where the park is taken (H200, driver, b1 7x7..28x28 K3/K5 cs16 and b32
  // 7x7x512 K1/K5; code generation), so it keeps its former code exactly (PTX identical, the
  // FFMA writer above included: the launch gives it y_vec = 0, so that never runs).
  if constexpr (MMA && !(KM && BM == 32)) {
    if (a.y_vec != 0 && CS == 1) {
      if (!__syncthreads_or(any_non_finite())) {
#pragma unroll
        for (int i0 = 0; i0 < TM * TN; i0 += 2) {  // accumulators i0, i0 + 1: one pixel, 2 filters
          const int ii = i0 / TN, jj = i0 % TN;
          const long long ro = rowoff[tile_row(ii, jj)];
          const int f = m0 + tile_col(ii, jj);
          if (ro < 0 || f >= a.M) continue;  // y_vec: M even, so f + 1 < M too
          if (a.y_vec == 1)
            *reinterpret_cast<float2*>(a.y + ro + f) = make_float2(acc[ii][jj], acc[ii][jj + 1]);
          else {
            a.y[ro + (long long)f * a.y_sc] = acc[ii][jj];
            a.y[ro + (long long)(f + 1) * a.y_sc] = acc[ii][jj + 1];
          }
        }
        return;
      }
    }
  }
  __syncthreads();  // pipeline buffers dead: reuse as the output tile

  // ---- epilogue: park the tile in shared memory, laid out as the output is written
  // (pixel-major for filter-contiguous output, filter-major for pixel-contiguous output)
  float* Cs = smem;
  constexpr int LDP = G::LDP;
  const int ym = a.y_mfast;
  // tile element e -> its pixel row p, filter column n and slot ci in the park
  auto park_slot = [=](int e, int& p, int& n, int& ci) {
    if (ym) { p = e / BN; n = e - p * BN; ci = p * LDC + n; }
    else { n = e / BM; p = e - n * BM; ci = n * LDP + p; }
  };
#pragma unroll
  for (int ii = 0; ii < TM; ++ii) {
#pragma unroll
    for (int jj = 0; jj < TN; ++jj) {
      const int row = tile_row(ii, jj), col = tile_col(ii, jj);
      Cs[ym ? row * LDC + col : col * LDP + row] = acc[ii][jj];
    }
  }
  constexpr int TILE = BM * BN;
  if constexpr (MMA) {
    // 3xTF32 turns inf x 0 into NaN where float32 FMAs keep inf (mma_3xtf32.cuh): a tile with
    // any non-finite partial sum (a non-finite input, or an overflow) is recomputed with FFMAs
    // over this block's share of the reduction, straight from global memory (slow, exact
    // float32 semantics; finite data never takes this path)
    if (__syncthreads_or(any_non_finite())) {
      for (int e = tid; e < TILE; e += NT) {
        int p, n, ci;
        park_slot(e, p, n, ci);
        const int2 ap = apix[p];  // out-of-range pixels: oh = 32767, every tap outside the map
        float s = 0.f;
        // RO: this rank's r = it_begin * BK .. it_end * BK - 1 in order
        for (int r = it_begin * BK; RO && m0 + n < a.M && r < it_end * BK && r < a.R; ++r) {
          const int c = r / KK, tap = r - c * KK;
          const int4 tt = taptab[tap];  // (input offset, kh - pad_top, kw - pad_left)
          const int ih = (ap.y >> 16) + tt.y, iw = (ap.y & 0xffff) + tt.z;
          if ((unsigned)ih >= (unsigned)a.H || (unsigned)iw >= (unsigned)a.W) continue;
          s = fmaf(a.x[ap.x + tt.x + c * a.x_sc], a.w[(m0 + n) * a.w_so + r], s);
        }
        for (int it = it_begin; !RO && m0 + n < a.M && it < it_end; ++it) {
          const int seg = it / KK, tap = it - seg * KK, kh = tap / a.KW, kw = tap - kh * a.KW;
          const int dh = kh - a.pad_top, dw = kw - a.pad_left;
          const int ih = (ap.y >> 16) + dh, iw = (ap.y & 0xffff) + dw;
          if ((unsigned)ih >= (unsigned)a.H || (unsigned)iw >= (unsigned)a.W) continue;
          const float* xp = a.x + (ap.x + dh * a.x_sh + dw * a.x_sw);
          const float* wp = a.w + ((m0 + n) * a.w_so + kh * a.w_sh + kw * a.w_sw);
          const int c_end = min(seg * BK + BK, a.C);
          for (int c = seg * BK; c < c_end; ++c) s = fmaf(xp[c * a.x_sc], wp[c * a.w_si], s);
        }
        Cs[ci] = s;
      }
    }
  }
  if (CS > 1 && !GS) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    __trap();  // unreachable: the launcher uses clusters only on sm_90+ (max_cluster)
#else
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every rank's partial tile is parked
    const int rank = (int)cluster.block_rank();
    const int per = (TILE + CS - 1) / CS;
    const int e_beg = rank * per;
    const int e_end = min(TILE, e_beg + per);
    for (int e = e_beg + tid; e < e_end; e += NT) {
      int p, n, ci;
      park_slot(e, p, n, ci);
      const long long ro = rowoff[p];
      if (ro >= 0 && m0 + n < a.M) {
        float s = 0.f;
        for (int q = 0; q < CS; ++q) {  // fixed order: deterministic
          const float* rc = cluster.map_shared_rank(Cs, q);
          s += rc[ci];
        }
        a.y[ro + (long long)(m0 + n) * a.y_sc] = s;
      }
    }
    cluster.sync();  // keep every rank's shared memory alive until all have read it
#endif
  } else {
    // the tile, or (split through global memory) this rank's partial tile, written in the
    // park's order: part[z][p][m] for filter-contiguous output, part[z][m][p] else
    // (mc_split_sum adds the ranks in fixed order)
    __syncthreads();
    if constexpr (GS) {  // (block coordinates re-read: fewer live values over the main loop)
      const long long pb = (long long)blockIdx.x * BM, mb = blockIdx.y * BN;
      float* part = a.part + (long long)blockIdx.z * a.P * a.M;
      for (int e = threadIdx.x; e < TILE; e += NT) {
        int p, n, ci;
        park_slot(e, p, n, ci);
        if (pb + p < a.P && mb + n < a.M)
          part[ym ? (pb + p) * a.M + (mb + n) : (mb + n) * a.P + (pb + p)] = Cs[ci];
      }
    } else {
      for (int e = tid; e < TILE; e += NT) {
        int p, n, ci;
        park_slot(e, p, n, ci);
        const long long ro = rowoff[p];
        if (ro >= 0 && m0 + n < a.M) a.y[ro + (long long)(m0 + n) * a.y_sc] = Cs[ci];
      }
    }
  }
}

// Second pass of the split through global memory: y = sum of the S ranks' partial tiles, in
// rank order (deterministic, the same order as the cluster split's sum).  Element i of a
// partial is pixel p, filter m: i = p * M + m (ym, filter-contiguous output) or m * P + p, so
// consecutive threads read consecutive partials and write along the output's contiguous axis.
// Four elements per thread (16-byte loads when P * M % 4 == 0), their (n, oh, ow, m) decoded
// once and stepped: the first version divided in 64 bits per element and took ~8 us for b32
// 7x7x512 K5 (16 ranks x 590 KB), 7% of the layer.
__global__ void __launch_bounds__(256) mc_split_sum(const float* __restrict__ part, int S,
                                                    long long P, int M, float* __restrict__ y,
                                                    long long y_sn, long long y_sc, long long y_sh,
                                                    long long y_sw, int OH, int OW, int ym) {
  const long long PM = P * M;
  const long long i0 = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (i0 >= PM) return;
  float s[4] = {0.f, 0.f, 0.f, 0.f};
  if (PM % 4 == 0) {
    const float4* src = reinterpret_cast<const float4*>(part + i0);
    const long long step = PM / 4;
    int z = 0;
    for (; z + 8 <= S; z += 8) {  // 8 loads in flight, then added in rank order
      float4 v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = __ldg(src + (z + j) * step);
#pragma unroll
      for (int j = 0; j < 8; ++j) { s[0] += v[j].x; s[1] += v[j].y; s[2] += v[j].z; s[3] += v[j].w; }
    }
    for (; z < S; ++z) {
      const float4 v = __ldg(src + z * step);
      s[0] += v.x; s[1] += v.y; s[2] += v.z; s[3] += v.w;
    }
  } else {
    for (int z = 0; z < S; ++z)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (i0 + j < PM) s[j] += part[z * PM + i0 + j];
  }
  long long p = ym ? i0 / M : i0 % P, m = ym ? i0 % M : i0 / P;
  const long long hw = (long long)OH * OW;
  long long n = p / hw;
  int r = (int)(p - n * hw), oh = r / OW, ow = r - oh * OW;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (i0 + j >= PM) break;
    y[n * y_sn + oh * y_sh + ow * y_sw + m * y_sc] = s[j];
    // the next element: the next filter (ym), else the next pixel (ow, oh, n), wrapping into
    // the next pixel / filter
    if (ym) {
      if (++m == M) { m = 0; if (++ow == OW) { ow = 0; if (++oh == OH) { oh = 0; ++n; } } }
    } else {
      ++p;
      if (++ow == OW) { ow = 0; if (++oh == OH) { oh = 0; ++n; } }
      if (p == P) { p = 0; ++m; n = 0; oh = 0; ow = 0; }
    }
  }
}

// ------------------------------------------------------------------------------- host side
using KernelFn = void (*)(const KArgs);

struct Choice {
  int tile;     // 0: 128x128, 1: 128x64, 2: 64x64, 3: 32x64
  int bk;       // 8 or 16
  int cs;       // split of the reduction (ranks)
  bool global;  // ranks without a cluster: partials in the workspace + mc_split_sum
};

// kTileBM / kTileBN (the tiles by index) and cdiv: cuda/grid_model.h

template <int BM, int BN, int BK, int TM, int TN, int ST>
struct Inst {
  using G = Cfg<BM, BN, BK, TM, TN, ST>;
  static KernelFn fn(int am, bool bv, bool mma, bool gs) {
    if constexpr (BN == 64) {  // the tensor-core instances (gs: split through global memory)
      if (mma && am == 2 && bv)
        return gs ? mc_kernel<BM, BN, BK, TM, TN, ST, 2, true, true, true>
                  : mc_kernel<BM, BN, BK, TM, TN, ST, 2, true, true>;
      if (mma && am == 0 && bv)
        return gs ? mc_kernel<BM, BN, BK, TM, TN, ST, 0, true, true, true>
                  : mc_kernel<BM, BN, BK, TM, TN, ST, 0, true, true>;
      if (mma && am == 3 && bv)
        return gs ? mc_kernel<BM, BN, BK, TM, TN, ST, 3, true, true, true>
                  : mc_kernel<BM, BN, BK, TM, TN, ST, 3, true, true>;
    }
    if (am == 3) return nullptr;  // (the OIHW order runs on the tensor cores only)
    if (am == 2)
      return bv ? mc_kernel<BM, BN, BK, TM, TN, ST, 2, true> : mc_kernel<BM, BN, BK, TM, TN, ST, 2, false>;
    // am 0: channel-major A tile (pixel-contiguous input); am 1: pixel-major, 4-byte
    if (am == 0)
      return bv ? mc_kernel<BM, BN, BK, TM, TN, ST, 0, true> : mc_kernel<BM, BN, BK, TM, TN, ST, 0, false>;
    return mc_kernel<BM, BN, BK, TM, TN, ST, 1, false>;
  }
};

// The menu (keep jax_fastconv/planner.py MC_CONFIGS in sync: tile, BK, threads, STAGES).
static void kernel_for(const Choice& ch, int am, bool bv, bool mma, KernelFn* fn, int* nt,
                       size_t* smem) {
#define MC_CASE(T, BK_, BM, BN, TM, TN, ST)              \
  if (ch.tile == T && ch.bk == BK_) {                     \
    using I = Inst<BM, BN, BK_, TM, TN, ST>;              \
    *fn = I::fn(am, bv, mma, ch.global);                  \
    *nt = I::G::NT;                                       \
    *smem = am == 3 ? I::G::SMEM_RO : I::G::SMEM;         \
    return;                                               \
  }
  MC_CASE(0, 8, 128, 128, 8, 8, 3)
  MC_CASE(1, 8, 128, 64, 8, 8, 3)
  MC_CASE(1, 16, 128, 64, 8, 8, 3)
  MC_CASE(2, 8, 64, 64, 8, 4, 4)
  MC_CASE(2, 16, 64, 64, 8, 4, 4)
  MC_CASE(3, 8, 32, 64, 4, 4, 4)
  MC_CASE(3, 16, 32, 64, 4, 4, 4)
#undef MC_CASE
  *fn = nullptr;
}

// Largest cluster (split) the launch may use for a tile: 8 (portable), 16 for the 32x64 tile
// where the device can co-schedule a non-portable cluster of 16 (queried once per process).
static int max_cluster(int tile) {
  // Thread-block clusters need sm_90: no split (cluster of 1) on older devices.
  DeviceInfo dev;
  if (current_device_info(&dev) != cudaSuccess || dev.cc_major < 9) return 1;
  if (tile != 3) return 8;
  static int cached = 0;
  if (cached) return cached;
  int res = 8;
  KernelFn fn = nullptr;
  int nt = 0;
  size_t smem = 0;
  kernel_for(Choice{3, 16, 16}, 2, true, false, &fn, &nt, &smem);
  if (fn && cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(1, 1, 16);
    cfg.blockDim = dim3(nt, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 1;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 16;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int nclusters = 0;
    if (cudaOccupancyMaxActiveClusters(&nclusters, fn, &cfg) == cudaSuccess && nclusters >= 4)
      res = 16;
  }
  cudaGetLastError();  // clear anything the probe left
  cached = res;
  return res;
}

static int iterations(const ConvParams& p, int bk) { return (int)(cdiv(p.C, bk) * p.KH * p.KW); }

// Fallback configuration for plans with absurd values (and the split for plan[5] <= 0): the
// planner's grid model (cuda/grid_model.h) over the tiles and splits this device allows, S = 64 B
// when C >= 32 and C % 16 == 0.
static Choice grid_choice(const ConvParams& p, int sms, int only_tile, int bk) {
  const int max_split[4] = {1, max_cluster(1), max_cluster(2), max_cluster(3)};
  const bool tc = (p.plan[7] & kTensorCores) && p.KH * p.KW >= kGridTensorCoreMinTaps;
  const GridPick g =
      grid_pick(p.N * p.OH * p.OW, p.M, iterations(p, bk), sms, max_split, only_tile, tc);
  return Choice{g.tile, bk, g.cs};
}
static Choice auto_config(const ConvParams& p, int sms) {
  return grid_choice(p, sms, -1, (p.C >= 32 && p.C % 16 == 0) ? 16 : 8);
}

// The plan determines the launch (see the header): tile = (W'x, M') on the menu, BK = S,
// cluster = c_split (clamped to what the device allows and to the reduction length).
static Choice plan_config(const ConvParams& p, int sms) {
  const int64_t S = p.plan[1], Mp = p.plan[2], Wx = p.plan[3], split = p.plan[5];
  const bool valid = p.plan[0] == kMultiChannel && S > 0 && Mp > 0 && Wx > 0 && S <= 4096 &&
                     Mp <= 4096 && Wx <= 4096;
  Choice ch{};
  if (!valid) {
    ch = auto_config(p, sms);
  } else {
    ch.bk = S <= 8 ? 8 : 16;
    if (Mp >= 96 && Wx >= 91) {
      ch.tile = 0;
    } else {
      // nearest of {128, 64, 32} (geometric midpoints 90, 45)
      ch.tile = Wx >= 91 ? 1 : (Wx >= 46 ? 2 : 3);
    }
    ch.global = (p.plan[7] & kSplitGlobal) && split > 1;
    if (split > 0) {
      ch.cs = (int)(split > 64 ? 64 : split);
    } else if (ch.tile == 0) {
      ch.cs = 1;  // 128x128: not on the grid model's menu
    } else {
      ch.cs = grid_choice(p, sms, ch.tile, ch.bk).cs;  // no split given: the model's for this tile
    }
  }
  if (ch.tile == 0) ch.bk = 8;  // 128x128 with 64-byte segments would spill (not instantiated)
  const int T = iterations(p, ch.bk);
  if (ch.cs > T) ch.cs = T > 0 ? T : 1;
  if (!ch.global && ch.cs > max_cluster(ch.tile)) ch.cs = max_cluster(ch.tile);
  if (ch.cs < 1) ch.cs = 1;
  if (ch.cs == 1) ch.global = false;
  return ch;
}

// Workspace elements the split through global memory needs after the staged filters: one
// partial output per rank.  Independent of the device (the plan names the split).
static int64_t split_partial_elems(const ConvParams& p) {
  if (!(p.plan[7] & kSplitGlobal) || p.plan[5] <= 1) return 0;
  const Choice ch = plan_config(p, 1);  // valid global plans never consult the SM count
  return ch.global ? int64_t(ch.cs) * p.N * p.OH * p.OW * p.M : 0;
}

static int g_vector = 1;        // drivers may turn the 16-byte loaders off (A/B timing)
static int g_direct_store = 1;  // ... and the register-to-global output stores
static int g_tensor_cores = -1;  // ... and force the tensor cores off (0) or on (1; -1: plan)
static int g_pointwise = 1;      // ... and the streamed 1x1 kernel off (plan[7] & 16 ignored)
static int g_oihw_order = -1;    // ... and the OIHW order never (0) or wherever it can run (1)

// 16-byte loaders: A when the input is channel-contiguous (x_sc == 1), C % 4 == 0 and every
// pixel offset is a multiple of 4 elements on a 16-byte aligned base; B when the filters are
// filter-contiguous (w_so == 1), M % 4 == 0 and every (c, kh, kw) offset is a multiple of 4,
// with the 16-byte A loader or the channel-major A tile (NCHW input; HWIO filters, or OIHW
// ones staged to HWIO).
static void loader_modes(const ConvParams& p, const float* x, const float* w, int* am, bool* bv) {
  const bool acf = llabs(p.x_sc) <= llabs(p.x_sw);
  const bool avec = g_vector && p.x_sc == 1 && p.C % 4 == 0 && p.x_sw % 4 == 0 &&
                    p.x_sh % 4 == 0 && p.x_sn % 4 == 0 && aligned16(x);
  *am = avec ? 2 : (acf ? 1 : 0);
  *bv = (avec || *am == 0) && g_vector && p.w_so == 1 && p.M % 4 == 0 && p.w_si % 4 == 0 && p.w_sh % 4 == 0 &&
        p.w_sw % 4 == 0 && aligned16(w);
}

// The 3xTF32 tensor-core instances (plan[7] & kTensorCores): the M' = 64 tiles with the 16-byte
// filter loader and the 16-byte (AM = 2) or channel-major (AM = 0) input tile.
static bool tensor_cores_asked(const ConvParams& p) {
  return g_tensor_cores < 0 ? (p.plan[7] & kTensorCores) != 0 : g_tensor_cores > 0;
}
static bool tensor_cores(const ConvParams& p, const Choice& ch, int am, bool bv) {
  return tensor_cores_asked(p) && ch.tile >= 1 && (am == 2 || am == 0 || am == 3) && bv;
}

// The OIHW reduction order (plan[7] & kOihwOrder, AM = 3) replaces the channel-major A tile and
// the HWIO copy of the filters (filter_staging.cuh) for a tensor-core tile: pixel-contiguous
// input (am == 0), dense OIHW filters whose rows (C*KH*KW) are whole 16-byte runs from an
// aligned base, <= kOihwOrderMaxTaps taps.  Where it is asked but cannot run, a staging flag in the same
// plan still applies.
static bool oihw_order(const ConvParams& p, const Choice& ch, int am, const float* w) {
  const int64_t KK = p.KH * p.KW;
  const bool asked = g_oihw_order < 0 ? (p.plan[7] & kOihwOrder) != 0 : g_oihw_order > 0;
  return asked && g_vector && am == 0 && tensor_cores_asked(p) && ch.tile >= 1 &&
         dense_oihw_strides(p) && (p.C * KK) % 4 == 0 && KK <= kOihwOrderMaxTaps && aligned16(w);
}

// The streamed 1x1 kernel (multi_channel_pointwise.cu) where the plan asks for it and it runs;
// the launcher and multi_channel_describe both ask here (from ecb9024 to 1c4fd0d the launcher
// had lost this test and ran the general kernel on those plans while describe named this one).
static bool runs_pointwise(const ConvParams& p, const void* x, const void* w, const void* y) {
  return (p.plan[7] & kPointwise) && g_pointwise && mc_pointwise_supported(p, x, w, y);
}

// The split through global memory runs only in the tensor-core instances (the GS ones) and only
// with the partials' workspace; else the plan's ranks go back to the cluster this tile allows.
static void settle_split(Choice* ch, bool tc, bool have_partials) {
  if (ch->global && !(tc && have_partials)) {
    ch->global = false;
    if (ch->cs > max_cluster(ch->tile)) ch->cs = max_cluster(ch->tile);
  }
}

}  // namespace mc

void multi_channel_set_vector(int on) { mc::g_vector = on; }
void multi_channel_set_tensor_cores(int mode) { mc::g_tensor_cores = mode; }
void multi_channel_set_direct_store(int on) { mc::g_direct_store = on; }
void multi_channel_set_pointwise(int on) { mc::g_pointwise = on; }
void multi_channel_set_oihw_order(int on) { mc::g_oihw_order = on; }

// Describes the launch a ConvParams gets (for drivers/benchmarks; not part of kernels.h).
int multi_channel_describe(const ConvParams& p, char* buf, int len) {
  DeviceInfo dev;
  if (current_device_info(&dev) != cudaSuccess) return 0;
  const float* aligned = reinterpret_cast<const float*>(uintptr_t(256));  // buffers are aligned
  if (mc::runs_pointwise(p, aligned, aligned, aligned))
    return snprintf(buf, len, "pw64x64/S%d+tc", (int)p.C);  // the streamed 1x1 kernel
  mc::Choice ch = mc::plan_config(p, dev.sms);
  int am = 0;
  bool bv = false;
  mc::loader_modes(p, aligned, aligned, &am, &bv);
  const bool ro = mc::oihw_order(p, ch, am, aligned);
  ConvParams q = p;  // the filter strides the kernel sees (HWIO when staged)
  const bool staged = staged_filter_elems(p) && !ro;
  if (staged) set_hwio_filter_strides(&q);
  mc::loader_modes(q, aligned, aligned, &am, &bv);
  if (ro) am = 3, bv = true;
  const bool tc = mc::tensor_cores(q, ch, am, bv);
  mc::settle_split(&ch, tc, true);  // (with the workspace the planner sizes)
  return snprintf(buf, len, "%dx%d/S%d/cs%d%s%s%s%s", mc::kTileBM[ch.tile], mc::kTileBN[ch.tile],
                  ch.bk, ch.cs, ch.global ? "g" : "",  // "g": split via workspace
                  staged ? "+w" : "",                   // "+w": staged as HWIO
                  ro ? "+ro" : "",                      // "+ro": OIHW reduction order
                  tc ? "+tc" : "");                     // "+tc": 3xTF32 MMA
}

int64_t multi_channel_workspace_elems(const ConvParams& p) {
  return staged_filter_elems(p) + mc::split_partial_elems(p);
}

namespace mc {
static cudaError_t launch_native(const ConvParams& p, const float* x, const float* w, float* y,
                                 float* part, cudaStream_t stream);
// Whether launch_native runs p in the OIHW order (then no staging copy is made).
static bool runs_oihw_order(const ConvParams& p, const float* w) {
  DeviceInfo dev;
  if (current_device_info(&dev) != cudaSuccess) return false;
  int am = 0;
  bool bv = false;
  loader_modes(p, nullptr, w, &am, &bv);
  return oihw_order(p, plan_config(p, dev.sms), am, w);
}
}

// Workspace: [staged HWIO filters (staged_filter_elems, a multiple of 4)][the split's partials
// (split_partial_elems)].  Each part is used only when the workspace holds it (and is 16-byte
// aligned): else the filters are read in place, the split goes back to a cluster.
cudaError_t launch_multi_channel(const ConvParams& p, const float* x, const float* w, float* y,
                                 float* workspace, int64_t workspace_elems,
                                 cudaStream_t stream) {
  if (mc::runs_pointwise(p, x, w, y))
    return launch_mc_pointwise(p, x, w, y, stream);  // (its filters are read once per block)
  const int64_t need = staged_filter_elems(p), need_part = mc::split_partial_elems(p);
  const bool ws_ok = workspace != nullptr && aligned16(workspace);
  float* part = ws_ok && need_part && workspace_elems >= need + need_part ? workspace + need : nullptr;
  if (need == 0 || !ws_ok || workspace_elems < need || mc::runs_oihw_order(p, w))
    return mc::launch_native(p, x, w, y, part, stream);
  ConvParams q = p;
  const cudaError_t err = stage_filters(&q, &w, workspace, stream);
  if (err != cudaSuccess) return err;
  return mc::launch_native(q, x, w, y, part, stream);
}

namespace mc {
// part: the split's partials (split_partial_elems of them), or null where the workspace
// cannot hold them.
static cudaError_t launch_native(const ConvParams& p, const float* x, const float* w, float* y,
                                 float* part, cudaStream_t stream) {
  if (p.stride_h < 1 || p.stride_w < 1) return cudaErrorInvalidValue;
  if (p.N < 0 || p.C < 0 || p.M < 0 || p.KH < 1 || p.KW < 1 || p.OH < 0 || p.OW < 0)
    return cudaErrorInvalidValue;
  const long long P = p.N * p.OH * p.OW;
  if (P == 0 || p.M == 0) return cudaSuccess;  // nothing to write
  // 32-bit filter offsets: largest offset must fit
  const long long wmax = (p.M - 1) * llabs(p.w_so) + (p.C - 1 + 16) * llabs(p.w_si) +
                         (p.KH - 1) * llabs(p.w_sh) + (p.KW - 1) * llabs(p.w_sw);
  if (wmax >= (1LL << 31) || p.w_so < 0 || p.w_si < 0 || p.w_sh < 0 || p.w_sw < 0)
    return cudaErrorInvalidValue;
  // packed input coordinates (stride * oh << 16 | stride * ow) and the out-of-range sentinel
  // need these
  if (p.H > 16384 || p.W > 16384 || p.OH > 16384 || p.OW > 16384 || p.pad_top > 16383 ||
      p.pad_left > 16383 || p.pad_top < -16384 || p.pad_left < -16384 ||
      (p.OH - 1) * p.stride_h > 16383 || (p.OW - 1) * p.stride_w > 16383)
    return cudaErrorInvalidValue;
  if (p.x_sn < 0 || p.x_sc < 0 || p.x_sh < 0 || p.x_sw < 0) return cudaErrorInvalidValue;
  // 32-bit input offsets: launch over chunks of images whose x span is < 2^31 elements
  const long long img_span = (p.C - 1) * p.x_sc + (p.H - 1) * p.x_sh + (p.W - 1) * p.x_sw + 1;
  if (img_span >= (1LL << 31)) return cudaErrorInvalidValue;
  long long nchunk = p.N;
  if (p.x_sn > 0 && (p.N - 1) * p.x_sn + img_span >= (1LL << 31))
    nchunk = ((1LL << 31) - img_span) / p.x_sn;  // conservative: (nchunk-1)*x_sn + img_span < 2^31
  if (nchunk < 1) nchunk = 1;

  DeviceInfo dev;
  cudaError_t err = current_device_info(&dev);
  if (err != cudaSuccess) return err;
  mc::Choice ch = mc::plan_config(p, dev.sms);

  mc::KArgs a;
  a.w = w;
  a.C = (int)p.C; a.H = (int)p.H; a.W = (int)p.W; a.M = (int)p.M;
  a.KH = (int)p.KH; a.KW = (int)p.KW; a.OH = (int)p.OH; a.OW = (int)p.OW;
  a.pad_top = (int)p.pad_top; a.pad_left = (int)p.pad_left;
  a.stride_h = (int)p.stride_h; a.stride_w = (int)p.stride_w;
  a.x_sn = (int)p.x_sn; a.x_sc = (int)p.x_sc; a.x_sh = (int)p.x_sh; a.x_sw = (int)p.x_sw;
  a.w_so = (int)p.w_so; a.w_si = (int)p.w_si; a.w_sh = (int)p.w_sh; a.w_sw = (int)p.w_sw;
  a.y_sn = p.y_sn; a.y_sc = p.y_sc; a.y_sh = p.y_sh; a.y_sw = p.y_sw;
  a.T = mc::iterations(p, ch.bk);
  // loader/writer mappings: whichever logical axis is contiguous (smaller stride) runs fastest
  int am = 0;
  bool bv = false;
  mc::loader_modes(p, x, w, &am, &bv);
  a.R = (int)(p.C * p.KH * p.KW);
  a.kk_div = FastDiv((uint32_t)(p.KH * p.KW));
  a.inb = p.pad_top <= 0 && p.pad_left <= 0 &&
          (p.OH - 1) * p.stride_h + p.KH - 1 - p.pad_top < p.H &&
          (p.OW - 1) * p.stride_w + p.KW - 1 - p.pad_left < p.W;
  if (mc::oihw_order(p, ch, am, w)) {
    am = 3;
    bv = true;
    a.T = (int)mc::cdiv(a.R, ch.bk);
  }
  a.b_mfast = llabs(p.w_so) <= llabs(p.w_si) ? 1 : 0;
  a.y_mfast = llabs(p.y_sc) <= llabs(p.y_sw) ? 1 : 0;
  const bool tc = mc::tensor_cores(p, ch, am, bv);
  mc::settle_split(&ch, tc, part != nullptr);
  a.part = ch.global ? part : nullptr;  // (every chunk's partials: the chunks run in stream order)
  // (the 32x64 channel-major tensor-core instance keeps the park: see mc_kernel)
  // (the tensor cores' direct stores write filter pairs: M even.  The HWIO and staged filter
  // loaders imply M % 4 == 0; the OIHW order does not, so its odd M goes through the park)
  const bool km = am == 0 || am == 3;  // the channel-major A tile (mc_kernel's KM)
  const bool y_al = g_direct_store && ch.cs == 1 && aligned16(y) && !(tc && ch.tile == 3 && km) &&
                    !(tc && p.M % 2);
  a.y_vec = (y_al && p.y_sc == 1 && p.M % 4 == 0 && p.y_sw % 4 == 0 && p.y_sh % 4 == 0 &&
             p.y_sn % 4 == 0) ? 1
          : (y_al && km && p.y_sw == 1 && p.y_sh == p.OW && (p.OH * p.OW) % 4 == 0 &&
             p.y_sc % 4 == 0 && p.y_sn % 4 == 0) ? 2 : 0;

  mc::KernelFn fn = nullptr;
  int nt = 0;
  size_t smem = 0;
  mc::kernel_for(ch, am, bv, tc, &fn, &nt, &smem);
  if (!fn) return cudaErrorInvalidValue;
  const void* fn_id = reinterpret_cast<const void*>(fn);
  if (smem > 48 * 1024) {
    err = raise_func_attribute_once(fn_id, dev.device,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (err != cudaSuccess) return err;
  }
  if (ch.cs > 8 && !ch.global) {
    err = raise_func_attribute_once(fn_id, dev.device,
                                    cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (err != cudaSuccess) return err;
  }
  const long long gy = mc::cdiv(p.M, mc::kTileBN[ch.tile]);
  if (gy > 65535) return cudaErrorInvalidValue;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 1;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = (unsigned)ch.cs;
  for (long long n0 = 0; n0 < p.N; n0 += nchunk) {
    const long long nn = (p.N - n0) < nchunk ? (p.N - n0) : nchunk;
    a.x = x + n0 * p.x_sn;
    a.y = y + n0 * p.y_sn;
    a.P = nn * p.OH * p.OW;
    const long long gx = mc::cdiv(a.P, mc::kTileBM[ch.tile]);
    if (gx > 0x7fffffffLL) return cudaErrorInvalidValue;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)gx, (unsigned)gy, (unsigned)ch.cs);
    cfg.blockDim = dim3(nt, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = ch.cs > 1 && !ch.global ? 1 : 0;
    err = cudaLaunchKernelEx(&cfg, fn, a);
    if (err != cudaSuccess) return err;
    if (ch.global) {
      const long long blocks = mc::cdiv(mc::cdiv(a.P * p.M, 4), 256);
      mc::mc_split_sum<<<(unsigned)blocks, 256, 0, stream>>>(part, ch.cs, a.P, (int)p.M, a.y, p.y_sn,
                                                             p.y_sc, p.y_sh, p.y_sw, (int)p.OH,
                                                             (int)p.OW, a.y_mfast);
      err = cudaGetLastError();
      if (err != cudaSuccess) return err;
    }
  }
  return cudaSuccess;  // cudaLaunchKernelEx returned each launch's error
}

}  // namespace mc

}  // namespace fastconv
