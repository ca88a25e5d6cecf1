// Single-channel (C == 1) stride-1 convolution as a 3xTF32 wgmma GEMM whose A operand is the
// staged input band itself, read through a Toeplitz view of the shared-memory descriptor
// (sm_90a only): plan division 6 (jax_fastconv/plan_single_channel.py S11). Measured as the
// prototype benchmarks/notes/sc_wgmma_toeplitz.cu (rounds 25 and 26 of
// benchmarks/notes/single_channel.md: its `tz_kernel` with the LEAN store path, launch codes
// 62 / 63); this is that kernel for the package's layouts, with the float32 fallback.
//
// Why: on the H200 a 5x5 layer's FMA floor equals its byte floor, and neither the FFMA kernel
// nor the mma.sync kernel (division 5) leaves room for the stores; wgmma takes its operands
// from shared memory without a load per element by the threads, so the SM's issue slots stay
// for the stores (b32 56^2 K5 NHWC: 29.6 us against 33.0 for the best FFMA launch, prototype).
//
// The GEMM. The padded images are stacked into one tall map (rows of stride Ws floats, Ws % 4
// == 0, Hp = OH + KH - 1 rows per image); a CTA stages tall rows Rb .. Rb + nb - 1 of it as a
// flat band, split into hi / lo TF32 copies (with A from registers: once, unsplit). For flat
// pixel p of the band, filter row kh and tap kw the product reads band[p + kh Ws + kw]. With
// p = 4 r + ph (ph = 0..3):
//   out[4 r + ph][f] = sum_kh sum_k band[4 r + kh Ws + k] * B_kh[k][ph, f],
//   B_kh[k][ph, f] = w[f][kh][k - ph] (zero where k - ph is not a tap), k = 0..7 (KW <= 5),
// a GEMM with A[r][k] = band[4 r + k + kh Ws]: rows 16 bytes apart, k contiguous, which the
// no-swizzle K-major descriptor reads with LBO = 16 bytes (core matrices overlapping the next
// row) and SBO = 128. One wgmma m64n128k8 takes 64 rows r (a 256-pixel segment) x 4 phases x 32
// filters, no im2col copy; 3xTF32 issues 3 per (segment, kh).
//   CTA     = NWG warpgroups (plan[7] = 128 NWG threads), one 32-filter block (blockIdx.x %
//             (M / 32): filter blocks fastest) and SPT consecutive segments (plan[5]);
//             warpgroup w takes segments w, w + NWG, ...; plan[6] & 1: their wgmmas in turn
//             (staggered: every round); plan[6] & 2: A from registers
//             (each lane loads its fragment of the unsplit band and splits it), so wgmma
//             reads only B from shared memory (round 28); plan[6] & 4 (plane outputs
//             only): the aligned line (tz_line); plan[6] & 8 (with A from registers): dense
//             segments, of the output rows' groups of 4 pixels only, each lane loading its
//             rows' fragments from their own band offsets (TzGroup, round 42; decoded
//             once per segment for both the offsets and the stores, round 43).
//   lane    (g, t) of warp wq holds rows r = 16 wq + g + 8 h and filters 4t.. / 16 + 4t.. of
//             each phase (b_filter's column order), so it stores one 16-byte run of 4 filters
//             per pixel where the output's filters are contiguous (NHWC), or (PLANES: NCHW and
//             its kin, OW % 4 == 0) one float4 of 4 pixels per filter, swapping rows with lane
//             t ^ 1 so that each store covers 256 contiguous bytes of 2 filters; whole
//             32-filter blocks.
// Non-finite or huge values (|v| > 1e18: inf x 0 and overflow in the split products) anywhere
// in a CTA's band or filters: that CTA computes its outputs by direct float32 sums from global
// memory instead (tz_direct), so the answer keeps float32 semantics.
#include <algorithm>
#include <cstdint>

#include "kernels.h"
#include "launch_util.h"
#include "toeplitz_wgmma.cuh"  // b_filter, tz_mma, tz_gather, tz_pixel

namespace fastconv {
namespace {

constexpr int kSeg = 256;        // pixels per segment (64 rows r x 4 phases)
constexpr int kMaxK = 5;         // KH, KW <= 5 (8 k per row: KW + 3 phases)
constexpr long long kMaxShared = 227 * 1024;

struct TzArgs {
  long long x_sn, x_sh;          // input strides (x_sw == 1)
  long long w_so, w_sh, w_sw;    // filter strides
  long long y_sn, y_sh, y_so;    // output strides (all % 4 == 0); y_so: the pixel stride y_sw
                                 // (filters contiguous), or the filter stride y_sc (PLANES)
  int N, H, W, KW, pt, pl, OH, OW;
  int Hp;       // rows per image in the tall stack (OH + KH - 1)
  int Ws;       // band row stride, floats: OW + KW - 1 rounded up to 4
  int S;        // segments of the flat tall stack (tall row * Ws + column) through its last output
  int SPT;      // segments per CTA
  int NB;       // band rows a CTA stages (at most)
  int flat_in;  // the band is a flat copy of x (no padding, dense rows of W == Ws or, with the
                // aligned line, W == Ws - 4: flat_pad; aligned)
  int stagger;  // plan[6] & 1: warpgroups take turns at wgmma, every round
  int nfb;      // 32-filter blocks (M / 32), the fastest-varying part of blockIdx.x
  FastDiv ws_div, hp_div, nfb_div;  // by Ws, Hp, nfb (tz_pixel and the CTA's place)
  int flat_pad;  // flat_in with the aligned line Ws == W + 4: a band row is x's and a zero float4
  int G, gpr;   // dense segments (plan[6] & 8): groups of 4 output pixels, gpr a row (TzGroup)
  FastDiv gpr_div, oh_div;  // by gpr, OH
  int rows4;    // a padded band staged in float4 rows (TzBand::store_rows4): lanes a row, 8, 16
                // or 32; 0: in scalar rows
};

// Dense segments (plan[6] & 8, A from registers): group G of the output rows' groups of 4 pixels
// in order (gpr = OW / 4 rounded up a row, a row's last group partial where OW % 4 != 0), so no
// MMA or store is spent on the tall stack's padding rows and columns. Decoded once per segment
// and row: the lane's band offsets and its stores both read it (two FastDivs).
struct TzGroup {
  int G, q, gx, n;  // G = q gpr + gx; q = n OH + oy, the output row of the batch; image n
  __device__ __forceinline__ TzGroup(const TzArgs& a, int G_) : G(G_), q(tz_quot(G_, a.gpr_div)) {
    gx = G - q * a.gpr;
    n = tz_quot(q, a.oh_div);
  }
  __device__ __forceinline__ int tall_row(const TzArgs& a) const { return q + n * (a.Hp - a.OH); }
  // The group's first band float (tall row - Rb, column 4 gx); 0 past the last group (a
  // segment's tail: computed, not stored).
  __device__ __forceinline__ int offset(const TzArgs& a, int Rb) const {
    return G < a.G ? (tall_row(a) - Rb) * a.Ws + 4 * gx : 0;
  }
  // Its phase-0 pixel: image n, output row oy, column ox; false past the last group.
  __device__ __forceinline__ bool place(const TzArgs& a, int& n_, int& oy, int& ox) const {
    n_ = n;
    oy = q - n * a.OH;
    ox = 4 * gx;
    return n < a.N;
  }
};

// Pixel P of the segments -> image n, output row oy, column ox; false where it is no output.
// Flat segments: P indexes the tall stack (tz_pixel); dense: P = 4 G + ph (TzGroup).
template <bool DENSE>
__device__ __forceinline__ bool tz_place(const TzArgs& a, int P, int& n, int& oy, int& ox) {
  if constexpr (DENSE) {
    const bool ok = TzGroup(a, P >> 2).place(a, n, oy, ox);
    ox += P & 3;
    return ok && ox < a.OW;
  } else {
    return tz_pixel(a, P, n, oy, ox);
  }
}

// The phase-0 pixels of a lane's rows r = 16 wq + g + 8 h (h = 0, 1) of segment s: from the
// tall stack (flat), or from the groups the band offsets were decoded from (dense).
struct TzFlatRows {
  int s, wq, g;
  __device__ __forceinline__ bool place(const TzArgs& a, int h, int& n, int& oy, int& ox) const {
    return tz_pixel(a, s * kSeg + 4 * (16 * wq + g + 8 * h), n, oy, ox);
  }
};
struct TzDenseRows {
  TzGroup r0, r1;
  __device__ __forceinline__ bool place(const TzArgs& a, int h, int& n, int& oy, int& ox) const {
    return (h ? r1 : r0).place(a, n, oy, ox);
  }
};
template <bool DENSE>
__device__ __forceinline__ auto tz_rows(const TzArgs& a, int s, int wq, int g) {
  if constexpr (DENSE) {
    const int G = s * (kSeg / 4) + 16 * wq + g;
    return TzDenseRows{TzGroup(a, G), TzGroup(a, G + 8)};
  } else {
    return TzFlatRows{s, wq, g};
  }
}

// Nonzero where v is non-finite or huge (|v| > 1e18: see the note at the top).
__device__ __forceinline__ int tz_bad(float v) { return !(fabsf(v) <= 1e18f); }

// Checks 4 values and stores their hi / lo parts as one 16-byte word each at float offset o.
__device__ __forceinline__ int tz_split4(const float (&e)[4], float* hi, float* lo, int o) {
  int bad = 0;
  uint32_t h[4], l[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    bad |= tz_bad(e[k]);
    split_tf32(e[k], h[k], l[k]);
  }
  *reinterpret_cast<uint4*>(hi + o) = make_uint4(h[0], h[1], h[2], h[3]);
  *reinterpret_cast<uint4*>(lo + o) = make_uint4(l[0], l[1], l[2], l[3]);
  return bad;
}

// A 16-byte streaming store where `on`. Inline asm, so that the compiler keeps a pair of such
// stores with complementary conditions as two instructions (tz_store_planes).
__device__ __forceinline__ void tz_store_if(float* p, const float (&v)[4], bool on) {
  asm volatile(
      "{\n .reg .pred on;\n setp.ne.b32 on, %5, 0;\n"
      " @on st.global.cs.v4.f32 [%0], {%1, %2, %3, %4};\n}\n" ::"l"(p),
      "f"(v[0]), "f"(v[1]), "f"(v[2]), "f"(v[3]), "r"(int(on)) : "memory");
}

// Segment s's outputs from the accumulators: a 16-byte streaming store per pixel and 4 filters
// (the prototype's LEAN path: a small unrolled body for the instruction cache, round 26).
template <typename Rows>  // TzFlatRows or TzDenseRows
__device__ __forceinline__ void tz_store(const float (&d)[64], float* __restrict__ y,
                                         const TzArgs& a, const Rows& rows, int fb, int t) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    int n, oy, ox0;  // of the phase-0 pixel; its 4 share the row (Ws % 4 == 0)
    if (!rows.place(a, h, n, oy, ox0)) continue;
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      float v[4][4];  // v[ph][i]: phase ph, filter fb * 32 + 16 q + 4 t + i
      tz_gather(d, h, q, v);
      float* base = y + n * a.y_sn + oy * a.y_sh + ox0 * a.y_so + (fb * 32 + 16 * q + 4 * t);
#pragma unroll
      for (int ph = 0; ph < 4; ++ph) {
        if (ox0 + ph >= a.OW) break;
        __stcs(reinterpret_cast<float4*>(base + ph * a.y_so),
               make_float4(v[ph][0], v[ph][1], v[ph][2], v[ph][3]));
      }
    }
  }
}

// The same with the output's pixels contiguous (tz_planes: NCHW and its kin, OW % 4 == 0, so a
// phase-0 pixel starts a whole float4 of its row). A lane's 4 phases of a filter are 4
// consecutive pixels (a float4), and a warp holds 16 consecutive float4s (rows r) of each of
// the 32 filters: lane (g, t) rows g and g + 8 of filters 4t.. and 16 + 4t... Lanes t and t ^ 1
// swap halves (shfl.xor 1) so that each keeps one row, r = 16 wq + g + 8 (t & 1), of both
// lanes' filters: 16 lanes then hold one filter's 16 rows, 256 contiguous bytes, where the
// lanes' own float4s wrote 4 x 128 bytes (1.5x NHWC's time, notes round 35). Each store
// instruction writes one filter plane, the lanes t < 2 or t >= 2 (tz_store_if): the memory
// system takes a warp's 256 bytes in one plane faster than 2 x 256 in two planes, although
// that is twice the instructions (b32 28^2 K5 NCHW 0.94x, b32 112^2 0.97x, round 40).
template <typename Rows>
__device__ __forceinline__ void tz_store_planes(const float (&d)[64], float* __restrict__ y,
                                                const TzArgs& a, const Rows& rows, int fb,
                                                int t) {
  const bool even = (t & 1) == 0;
  int n, oy, ox0;
  const bool ok = rows.place(a, t & 1, n, oy, ox0);
  float* row = y + n * a.y_sn + oy * a.y_sh + ox0;
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    float v0[4][4], v1[4][4];  // rows g and g + 8: v[ph][i], filter fb * 32 + 16 q + 4 t + i
    tz_gather(d, 0, q, v0);
    tz_gather(d, 1, q, v1);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float xe[4], xo[4];  // this lane's row of the even lane's filter and of the odd lane's
#pragma unroll
      for (int ph = 0; ph < 4; ++ph) {
        const float recv = __shfl_xor_sync(0xffffffffu, even ? v1[ph][i] : v0[ph][i], 1);
        xe[ph] = even ? v0[ph][i] : recv;
        xo[ph] = even ? recv : v1[ph][i];
      }
      float* fe = row + (fb * 32 + 16 * q + 4 * (t & ~1) + i) * a.y_so;
      // filters 16 q + i, 16 q + 8 + i (lanes t >= 2), then 4 further on (xo)
      tz_store_if(fe, xe, ok && t < 2);
      tz_store_if(fe, xe, ok && t >= 2);
      tz_store_if(fe + 4 * a.y_so, xo, ok && t < 2);
      tz_store_if(fe + 4 * a.y_so, xo, ok && t >= 2);
    }
  }
}

// B_kh[k][n] for n = ph * 32 + c (filter b_filter(c), phase ph), 4 k per 16-byte chunk: chunk
// (kh, k / 4, n) holds w[f][kh][k - ph] for its 4 k (zero where k - ph is not a tap), at float
// kh * 1024 + (k / 4) * 512 + 4 n. Thread (warp kh < KH, lane c) loads one filter row (taps 0..4
// of filter b_filter(c) at row kh, zero past KW) straight from global memory (L2-resident,
// shared by every CTA of the block; no raw copy or barrier, round 27), splits it once, and writes
// the 8 chunks (k / 4, ph) of column c from it: every tap index a constant, and a warp's 32 lanes
// 512 contiguous bytes per store. (Each thread building 4-tap chunks of its own took 20 loads
// and splits and ~350 instructions of the setup, not 5 and ~70: 0.93-0.99x per layer on the
// H200's driver, round 37.)
template <int KH>
struct TzFilters {
  float v[kMaxK];

  __device__ __forceinline__ void load(const float* __restrict__ w, const TzArgs& a, int fb,
                                       int tid) {
    const int kh = tid >> 5;
    if (kh >= KH) return;
    const int o = (fb * 32 + b_filter(tid & 31)) * int(a.w_so) + kh * int(a.w_sh),
              sw = int(a.w_sw);
#pragma unroll
    for (int t = 0; t < kMaxK; ++t) v[t] = t < a.KW ? __ldg(w + (o + t * sw)) : 0.f;
  }

  __device__ __forceinline__ int store(float* bhi, float* blo, int tid) const {
    const int kh = tid >> 5, c = tid & 31;
    if (kh >= KH) return 0;
    int bad = 0;
    uint32_t h[kMaxK], l[kMaxK];
#pragma unroll
    for (int t = 0; t < kMaxK; ++t) {
      bad |= tz_bad(v[t]);
      split_tf32(v[t], h[t], l[t]);
    }
#pragma unroll
    for (int kq = 0; kq < 2; ++kq) {
#pragma unroll
      for (int ph = 0; ph < 4; ++ph) {
        uint32_t ch[4], cl[4];
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
          const int t = 4 * kq + kk - ph;
          ch[kk] = (t >= 0 && t < kMaxK) ? h[t] : 0u;
          cl[kk] = (t >= 0 && t < kMaxK) ? l[t] : 0u;
        }
        const int o = kh * 1024 + kq * 512 + 4 * (ph * 32 + c);
        *reinterpret_cast<uint4*>(bhi + o) = make_uint4(ch[0], ch[1], ch[2], ch[3]);
        *reinterpret_cast<uint4*>(blo + o) = make_uint4(cl[0], cl[1], cl[2], cl[3]);
      }
    }
    return bad;
  }
};

// The CTA's band (tall rows Rb .. Rb + nb - 1, split hi / lo; RAW: unsplit, in ahi only), in
// two steps like TzFilters: load() issues the first round of a flat band's loads, store() waits
// for them, stages them and the rest. The CTA splits B between the two, while the band is on its
// way from DRAM (round 37: the setup before the first MMA is ~2 us of an 11.6 us layer, half of
// it waiting for the loads). store() returns nonzero where a value is non-finite or huge.
template <int NT, bool RAW, bool PAD>  // PAD: launches of the aligned line (flat_pad)
struct TzBand {
  static constexpr int U = 8;  // float4 loads in flight per thread and round (flat band)
  float4 v[U];

  // A flat band's range in float4s: its first in x, x's end, its count. load() and store() each
  // derive it (holding it live across B's split took 2 registers more).
  struct Range {
    long long g0, gend;
    int total;
    __device__ __forceinline__ Range(const TzArgs& a, int Rb, int nb)
        : g0((long long)Rb * ((a.Ws >> 2) - (PAD ? a.flat_pad : 0))),  // x's row: W / 4 float4s
          gend((long long)a.N * a.H * ((a.Ws >> 2) - (PAD ? a.flat_pad : 0))),
          total(nb * (a.Ws >> 2)) {}
  };

  __device__ __forceinline__ void load_round(const float* __restrict__ x, const TzArgs& a,
                                             long long g0, long long gend, int total, int i0) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int i = i0 + u * NT;
      v[u] = make_float4(0.f, 0.f, 0.f, 0.f);
      if constexpr (PAD) {  // band float4 i: row i / (Ws / 4), x's row and flat_pad zero float4s
        const int row = tz_quot(4 * i, a.ws_div), c4 = i - row * (a.Ws >> 2),
                  gi = i - a.flat_pad * row;
        if (i < total && c4 < (a.Ws >> 2) - a.flat_pad && g0 + gi < gend)
          v[u] = __ldg(reinterpret_cast<const float4*>(x) + g0 + gi);
      } else {
        if (i < total && g0 + i < gend) v[u] = __ldg(reinterpret_cast<const float4*>(x) + g0 + i);
      }
    }
  }

  // Band float4 i (of A's hi / lo halves, or hi alone when RAW); non-zero if v holds a bad value
  __device__ __forceinline__ static int put4(float* ahi, float* alo, int i, float4 v) {
    const float e[4] = {v.x, v.y, v.z, v.w};
    if constexpr (RAW) {
      int bad = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k) bad |= tz_bad(e[k]);
      reinterpret_cast<float4*>(ahi)[i] = v;
      return bad;
    } else {
      return tz_split4(e, ahi, alo, 4 * i);
    }
  }

  // Band float i, the one-float twin of put4
  __device__ __forceinline__ static int put1(float* ahi, float* alo, int i, float v) {
    if constexpr (!RAW) {
      uint32_t h, l;
      split_tf32(v, h, l);
      ahi[i] = __uint_as_float(h);
      alo[i] = __uint_as_float(l);
    } else {
      ahi[i] = v;
    }
    return tz_bad(v);
  }

  __device__ __forceinline__ int store_round(float* ahi, float* alo, int total, int i0) const {
    int bad = 0;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int i = i0 + u * NT;
      if (i >= total) break;
      bad |= put4(ahi, alo, i, v[u]);
    }
    return bad;
  }

  // Band row R's row of x in p; false for a padding row or one past the batch
  __device__ __forceinline__ static bool x_row(const float* __restrict__ x, const TzArgs& a, int R,
                                               const float*& p) {
    const int n = tz_quot(R, a.hp_div), yy = R - n * a.Hp - a.pt;
    const bool ok = n < a.N && yy >= 0 && yy < a.H;
    p = x + (ok ? n * a.x_sn + yy * a.x_sh : 0);
    return ok;
  }

  // Flat: unpadded dense rows of W == Ws (or W == Ws - 4, PAD), so the tall stack is x itself
  // and the band one range.
  __device__ __forceinline__ void load(const float* __restrict__ x, const TzArgs& a, int Rb,
                                       int nb, int tid) {
    if (!a.flat_in) return;
    const Range f(a, Rb, nb);
    load_round(x, a, f.g0, f.gend, f.total, tid);
  }

  __device__ __forceinline__ int store(const float* __restrict__ x, const TzArgs& a, float* ahi,
                                       float* alo, int Rb, int nb, int tid) {
    int bad = 0;
    if (a.flat_in) {
      const Range f(a, Rb, nb);
      bad |= store_round(ahi, alo, f.total, tid);
      for (int i0 = tid + NT * U; i0 < f.total; i0 += NT * U) {
        load_round(x, a, f.g0, f.gend, f.total, i0);
        bad |= store_round(ahi, alo, f.total, i0);
      }
      return bad;
    }
    // Padded or strided rows. Narrow ones whose x rows are whole float4s go in float4s,
    // a.rows4 >= Ws / 4 lanes a row (make_tz_args).
    if (a.rows4) return bad | store_rows4<4>(x, a, ahi, alo, Rb, nb, tid, a.rows4);
    // Otherwise RR rows x RU column steps of 32 in flight per lane, RU >= the row's J steps
    // where it fits, so that a round trip to DRAM stages RR whole rows (against one row and 4
    // steps a round: b1 512^2 K5 NCHW 0.86x, b32 112^2 K5 0.97x; for J 5..8 one row a round beat
    // two, b1 224^2 K5 0.96x against 1.00x).
    const int J = (a.Ws + 31) >> 5;
    if (J <= 1) return bad | store_rows<16, 1>(x, a, ahi, alo, Rb, nb, tid);
    if (J <= 2) return bad | store_rows<8, 2>(x, a, ahi, alo, Rb, nb, tid);
    if (J <= 4) return bad | store_rows<4, 4>(x, a, ahi, alo, Rb, nb, tid);
    if (J <= 8) return bad | store_rows<1, 8>(x, a, ahi, alo, Rb, nb, tid);
    return bad | store_rows<1, 17>(x, a, ahi, alo, Rb, nb, tid);  // 17: a 512-wide SAME row
  }

  // The same in float4s, where x's rows are whole float4s: L >= Ws / 4 lanes (8, 16 or 32) a
  // band row, so a warp takes 32 / L rows a step, RR steps a round, a row's float4s in one load
  // each. Band float4 m holds x's columns 4 m - pl .. + 3: from x's float4s m - q and m - q - 1
  // (pl = 4 q + s), the latter the left lane's (shfl.up; zero for a row's first lane).
  template <int RR>
  __device__ __forceinline__ int store_rows4(const float* __restrict__ x, const TzArgs& a,
                                             float* ahi, float* alo, int Rb, int nb, int tid,
                                             int L) const {
    constexpr int NW = NT / 32;
    const int lane = tid & 31, P = 32 / L, m = lane & (L - 1);
    const int W4 = a.W >> 2, Ws4 = a.Ws >> 2, j = m - (a.pl >> 2), s = a.pl & 3,
              Wp = a.OW + a.KW - 1;
    int bad = 0;
    for (int r0 = tid >> 5; r0 < nb; r0 += NW * P * RR) {
      float4 f[RR];
      int rr[RR];
#pragma unroll
      for (int i = 0; i < RR; ++i) {
        rr[i] = r0 + NW * (i * P + lane / L);
        const float* src;
        const bool ok = x_row(x, a, Rb + rr[i], src) && rr[i] < nb;
        f[i] = ok && j >= 0 && j < W4 ? __ldg(reinterpret_cast<const float4*>(src) + j)
                                      : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
      for (int i = 0; i < RR; ++i) {
        float py = __shfl_up_sync(0xffffffffu, f[i].y, 1, L),
              pz = __shfl_up_sync(0xffffffffu, f[i].z, 1, L),
              pw = __shfl_up_sync(0xffffffffu, f[i].w, 1, L);
        if (m == 0) py = pz = pw = 0.f;
        const float v[8] = {0.f, py, pz, pw, f[i].x, f[i].y, f[i].z, f[i].w};
        float e[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const float t = s == 0 ? v[4 + k] : s == 1 ? v[3 + k] : s == 2 ? v[2 + k] : v[1 + k];
          e[k] = 4 * m + k < Wp ? t : 0.f;
        }
        if (rr[i] < nb && m < Ws4)
          bad |= put4(ahi, alo, rr[i] * Ws4 + m, make_float4(e[0], e[1], e[2], e[3]));
      }
    }
    return bad;
  }

  // Warp w stages band rows w, w + NW, ... RR at a time, lane l columns l, l + 32, ... RU at a
  // time: every load of a round is issued before any is stored (b1 512^2 K5 NCHW SAME: 14.44 us
  // with one row and 4 steps a round, 12.92 with 17 steps, 12.71 with no loads at all), and the
  // row's arithmetic is done once per row.
  template <int RR, int RU>
  __device__ __forceinline__ int store_rows(const float* __restrict__ x, const TzArgs& a,
                                            float* ahi, float* alo, int Rb, int nb,
                                            int tid) const {
    constexpr int NW = NT / 32;
    const int Wp = a.OW + a.KW - 1, lane = tid & 31;
    int bad = 0;
    for (int r0 = tid >> 5; r0 < nb; r0 += NW * RR) {
      const float* src[RR];
      bool ok[RR];
#pragma unroll
      for (int i = 0; i < RR; ++i) {
        ok[i] = x_row(x, a, Rb + r0 + i * NW, src[i]) && r0 + i * NW < nb;
      }
      for (int c0 = lane; c0 < a.Ws; c0 += 32 * RU) {
        float e[RR][RU];
#pragma unroll
        for (int i = 0; i < RR; ++i)
#pragma unroll
          for (int u = 0; u < RU; ++u) {
            const int c = c0 + 32 * u, xx = c - a.pl;
            e[i][u] = ok[i] && c < Wp && xx >= 0 && xx < a.W ? __ldg(src[i] + xx) : 0.f;
          }
#pragma unroll
        for (int i = 0; i < RR; ++i)
#pragma unroll
          for (int u = 0; u < RU; ++u) {
            const int rr = r0 + i * NW, c = c0 + 32 * u;
            if (rr < nb && c < a.Ws) bad |= put1(ahi, alo, rr * a.Ws + c, e[i][u]);
          }
      }
    }
    return bad;
  }
};

// The CTA's outputs (segments [s0, s1) of filter block fb) by direct float32 sums from global
// memory: the path of a CTA whose band or filters hold a non-finite or huge value. Out of line,
// so that the rare path does not crowd the instruction cache of the common one.
template <bool DENSE>
__device__ __noinline__ void tz_direct(const float* __restrict__ x, const float* __restrict__ w,
                                       float* __restrict__ y, const TzArgs a, int KH, int s0,
                                       int s1, int fb, int tid, int nt, bool planes) {
  const long long items = (long long)(s1 - s0) * kSeg * 32;
  for (long long i = tid; i < items; i += nt) {
    const int f = fb * 32 + int(i & 31);
    int n, oy, ox;
    if (!tz_place<DENSE>(a, s0 * kSeg + int(i >> 5), n, oy, ox)) continue;
    float acc = 0.f;
    for (int kh = 0; kh < KH; ++kh) {
      const int yy = oy + kh - a.pt;
      if (yy < 0 || yy >= a.H) continue;
      for (int kw = 0; kw < a.KW; ++kw) {
        const int xx = ox + kw - a.pl;
        if (xx < 0 || xx >= a.W) continue;
        acc = fmaf(x[n * a.x_sn + yy * a.x_sh + xx], w[f * a.w_so + kh * a.w_sh + kw * a.w_sw], acc);
      }
    }
    y[n * a.y_sn + oy * a.y_sh + (planes ? ox + f * a.y_so : ox * a.y_so + f)] = acc;
  }
}

// One segment's KH x 3 wgmmas with A from registers (plan[6] & 2): each lane loads its fragment
// of the unsplit float32 band with ld.shared (rows 16 bytes apart: conflict-free) and splits it,
// so wgmma reads only B from shared memory, 4 KB per product against 6 KB (round 26's probe:
// streaming stores beside wgmma RS kept their rate, beside SS lost 10-20%). All KH fragments
// stay live until the wait (146 registers at KH = 5: one CTA of 2 warpgroups per SM). o0, o1: the
// band offsets of the lane's rows g and g + 8 (flat segments: 4 rows r apart, o0 + 32).
template <int KH>
__device__ __forceinline__ void tz_mma_rs(float (&d)[64], const float* band, const float* bhi,
                                          const float* blo, int o0, int o1, int Ws, int t) {
  uint32_t ah[KH][4], al[KH][4];
#pragma unroll
  for (int kh = 0; kh < KH; ++kh) {
    const float *p0 = band + o0 + kh * Ws + t, *p1 = band + o1 + kh * Ws + t;
    const float v[4] = {p0[0], p1[0], p0[4], p1[4]};  // rows g, g + 8 at k = t, then k = t + 4
#pragma unroll
    for (int i = 0; i < 4; ++i) split_tf32(v[i], ah[kh][i], al[kh][i]);
  }
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
  for (int kh = 0; kh < KH; ++kh) {
    const uint64_t dbh = desc(bhi + kh * 1024, 2048, 128), dbl = desc(blo + kh * 1024, 2048, 128);
    wgmma_rs_m64n128k8(d, al[kh], dbh, kh);
    wgmma_rs_m64n128k8(d, ah[kh], dbl, 1);
    wgmma_rs_m64n128k8(d, ah[kh], dbh, 1);
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int KH, int NWG, bool RS, bool PLANES, bool PAD = false, bool DENSE = false>
__global__ void __launch_bounds__(128 * NWG, NWG <= 2 && !RS ? 2 : 1)
    single_channel_wgmma_kernel(const TzArgs a, const float* __restrict__ x,
                                const float* __restrict__ w, float* __restrict__ y) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(128) float smem[];
  constexpr int NT = 128 * NWG;
  float* bhi = smem;                 // KH x 1024: [kh][k / 4][n][k % 4]
  float* blo = bhi + KH * 1024;
  float* ahi = blo + KH * 1024;      // NB x Ws band
  float* alo = ahi + a.NB * a.Ws;    // (RS: the band once, unsplit, in ahi)
  // Filter blocks vary fastest in the grid, so the CTAs in flight together cover every filter
  // of fewer segments: NHWC pixels written whole, the band read by all its CTAs at once (b32
  // 56^2 K5 NHWC 29.0 -> 25.8 us, NCHW 33.0 -> 30.4; notes round 36).
  int fb;
  const int s0 = int(a.nfb_div.divmod(blockIdx.x, &fb)) * a.SPT, s1 = min(s0 + a.SPT, a.S);
  int Rb, nb;  // tall row of band row 0, band rows
  if constexpr (DENSE) {  // its groups' rows, KH - 1 below and one more (a last group's k = 7)
    Rb = TzGroup(a, s0 * (kSeg / 4)).tall_row(a);
    nb = min(a.NB, TzGroup(a, min(s1 * (kSeg / 4), a.G) - 1).tall_row(a) - Rb + KH + 1);
  } else {
    Rb = tz_quot(s0 * kSeg, a.ws_div);
    nb = min(a.NB, tz_quot(s1 * kSeg + 8, a.ws_div) - Rb + KH);
  }
  const int tid = threadIdx.x;
  TzFilters<KH> filters;
  TzBand<NT, RS, PAD> band;
  // The filter loads first: OIHW rows scatter each warp load over 25 lines, and behind the
  // aligned band's address arithmetic they came late enough to hold up the setup (notes round
  // 45, H200: b1 512^2 K5 NCHW 0.97x in the driver, 12.04 -> 11.94 us in the bench; NHWC
  // unchanged).
  filters.load(w, a, fb, tid);
  band.load(x, a, Rb, nb, tid);  // from DRAM: in flight while B is split
  int bad = filters.store(bhi, blo, tid);  // B split while the band's loads are in flight
  bad |= band.store(x, a, ahi, alo, Rb, nb, tid);
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic writes -> wgmma reads
  if (__syncthreads_or(bad)) {
    tz_direct<DENSE>(x, w, y, a, KH, s0, s1, fb, tid, NT, PLANES);
    return;
  }
  const int wg = tid >> 7, wq = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, t = lane & 3;
  // Staggered order (a.stagger), a token ring of named barriers 1 + w: warpgroup w issues round
  // k's wgmmas once the warpgroup before it in the ring has finished its own, so the SM's first
  // stores start one segment's MMAs in instead of after every warpgroup's (notes round 26:
  // 2-9%). The order holds for every round, so that one warpgroup of the CTA multiplies while
  // the other stores (round 38, NHWC: b32 56^2 / 112^2 K5 3-4%; round 40, PLANES once their
  // stores wrote one plane per instruction: b1 512^2 / b32 56^2 K5 NCHW 0.97x / 0.96x, where
  // with two planes per instruction it was 1.03x slower).
  const int rounds = (s1 - s0 + NWG - 1) / NWG;
  // round k's turn: wait for it (warpgroup 0's first comes free), then pass it on (the ring's
  // last pass is not made)
  auto wait_turn = [&](int k) {
    if (k > 0 || wg > 0) asm volatile("bar.sync %0, 256;\n" ::"r"(1 + wg) : "memory");
  };
  auto pass_turn = [&](int k) {
    if (!(wg == NWG - 1 && k == rounds - 1))
      asm volatile("bar.arrive %0, 256;\n" ::"r"(1 + (wg + 1) % NWG) : "memory");
  };
  int k = 0;
  for (int s = s0 + wg; s < s1; s += NWG, ++k) {
    float d[64];
    const bool turn = a.stagger && k < rounds;
    if (turn) wait_turn(k);
    const auto rows = tz_rows<DENSE>(a, s, wq, g);
    if constexpr (DENSE)  // (ptxas computes the offsets above the turn's barrier)
      tz_mma_rs<KH>(d, ahi, bhi, blo, rows.r0.offset(a, Rb), rows.r1.offset(a, Rb), a.Ws, t);
    else if constexpr (RS) {
      const int o0 = s * kSeg - Rb * a.Ws + 4 * (16 * wq + g);
      tz_mma_rs<KH>(d, ahi, bhi, blo, o0, o0 + 32, a.Ws, t);
    } else
      tz_mma<KH>(d, ahi, alo, bhi, blo, s * kSeg - Rb * a.Ws, a.Ws);
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    if (turn) pass_turn(k);
    if constexpr (PLANES)
      tz_store_planes(d, y, a, rows, fb, t);
    else
      tz_store(d, y, a, rows, fb, t);
  }
  for (; a.stagger && k < rounds; ++k) {  // rounds without a segment here: pass the turn on
    wait_turn(k);
    pass_turn(k);
  }
#else
  __trap();  // sm_90a only: the host launches it on compute capability 9.0 only
#endif
}

// The output's pixels contiguous (NCHW and its kin; not NHWC's filters-contiguous case), each
// row a whole number of 16-byte float4s: tz_store_planes.
bool tz_planes(const ConvParams& p) {
  return p.y_sw == 1 && p.y_sc != 1 && p.OW % 4 == 0 && p.y_sc > 0 && p.y_sn >= 0 &&
         p.y_sh >= 0 && p.y_sc % 4 == 0 && p.y_sn % 4 == 0 && p.y_sh % 4 == 0;
}

// The band's line: OW + KW - 1 floats rounded up to 4; with plan[6] & 4 (plane outputs) further
// to OW mod 8, so that a pixel's flat index in the tall stack and its address in the plane
// agree mod 8 and every store run covers whole 32-byte sectors. Otherwise, for KW > 1, every
// other row's runs start mid-sector, and the sector's halves come from different warps or
// warpgroups (the H200 driver, notes round 41: b1 1024^2 K5 NCHW 0.91x, b32 112^2 0.95x, b1
// 512^2 0.97x; the line's 4 more floats cost MMAs, so it is a launch the autotuner times).
long long tz_line(const ConvParams& p) {
  const long long t = (p.OW + p.KW - 1 + 3) / 4 * 4;
  return (p.plan[6] & 4) && tz_planes(p) ? t + (t - p.OW) % 8 : t;
}

// Dense segments (plan[6] & 8; TzGroup): groups of 4 output pixels in row order, a row's last
// partial where OW % 4 != 0.
bool tz_dense(const ConvParams& p) { return (p.plan[6] & 8) != 0; }
long long tz_groups_per_row(const ConvParams& p) { return (p.OW + 3) / 4; }
long long tz_groups(const ConvParams& p) { return p.N * p.OH * tz_groups_per_row(p); }

// Band rows a CTA of SPT segments stages at most. Flat: its segments' rows, the KH - 1 below,
// one more for a segment that starts mid-row. Dense: the output rows its SPT x 64 groups span
// (dq, a first row partial), KH - 1 padding rows for each image boundary crossed (dn), KH - 1
// below and one more (a row's last group reads k up to 7).
long long tz_band_rows(const ConvParams& p, long long SPT) {
  if (tz_dense(p)) {
    const long long gpr = tz_groups_per_row(p), dq = (SPT * kSeg / 4 + gpr - 2) / gpr,
                    dn = std::min<long long>((p.OH - 1 + dq) / p.OH, p.N - 1);
    return dq + dn * (p.KH - 1) + p.KH + 1;
  }
  const long long Ws = tz_line(p);
  return (SPT * kSeg + 8 + Ws - 1) / Ws + p.KH + 1;
}

long long tz_segments(const ConvParams& p) {
  if (tz_dense(p)) return (tz_groups(p) + kSeg / 4 - 1) / (kSeg / 4);
  const long long flat = (p.N * (p.OH + p.KH - 1) - p.KH + 1) * tz_line(p);  // through the last output row
  return (flat + kSeg - 1) / kSeg;
}

// Shared bytes of a CTA of SPT segments: B hi / lo, the band hi / lo (rs: once, unsplit), and
// kSlack floats past the band: a wgmma reads the Toeplitz A operand's 64 rows x 8 k from 1040
// bytes (rows 16 bytes apart), but compute-sanitizer's memcheck takes it for a dense 64 x 8 tile
// of 2048 bytes from the descriptor's start (round 27), so the last segment's reads would look
// out of bounds.
constexpr long long kSlack = 256;
long long tz_shared_bytes(const ConvParams& p, long long SPT, bool rs) {
  return 4 * (p.KH * 2048 + (rs ? 1 : 2) * tz_band_rows(p, SPT) * tz_line(p) + kSlack);
}

TzArgs make_tz_args(const ConvParams& p, const float* x) {
  TzArgs a{};
  a.x_sn = p.x_sn; a.x_sh = p.x_sh;
  a.w_so = p.w_so; a.w_sh = p.w_sh; a.w_sw = p.w_sw;
  a.y_sn = p.y_sn; a.y_sh = p.y_sh;
  a.y_so = tz_planes(p) ? p.y_sc : p.y_sw;
  a.N = int(p.N); a.H = int(p.H); a.W = int(p.W); a.KW = int(p.KW);
  a.pt = int(p.pad_top); a.pl = int(p.pad_left); a.OH = int(p.OH); a.OW = int(p.OW);
  a.Hp = int(p.OH + p.KH - 1);
  a.Ws = int(tz_line(p));
  a.S = int(tz_segments(p));
  a.SPT = int(p.plan[5]);
  a.NB = int(tz_band_rows(p, a.SPT));
  a.stagger = int(p.plan[6] & 1);
  a.nfb = int(p.M / 32);
  a.ws_div = FastDiv(uint32_t(a.Ws));
  a.hp_div = FastDiv(uint32_t(a.Hp));
  a.nfb_div = FastDiv(uint32_t(a.nfb));
  a.flat_in = p.pad_top == 0 && p.pad_left == 0 && a.Hp == p.H &&
              (a.Ws == p.W || ((p.plan[6] & 4) && a.Ws == p.W + 4)) && p.OW + p.KW - 1 == p.W &&
              p.x_sh == p.W && p.x_sn == p.H * p.W && aligned16(x);
  a.flat_pad = a.flat_in && a.Ws == p.W + 4;
  // Narrow padded rows (Ws <= 128) whose x rows are whole float4s are staged in float4s
  // (session 59, SC_SAME driver, H200, against the scalar rows: b32 28^2 K5 0.93-0.95x, b32
  // 112^2 K5 NCHW 0.97x, 56^2 0.99x; wider rows, 2 or 5 float4s a lane, ran 1.01-1.05x slower
  // there and keep the scalar path).
  a.rows4 = a.Ws <= 128 && aligned16(x) && (p.x_sn | p.x_sh | p.W) % 4 == 0 && p.pad_left >= 0
                ? (a.Ws <= 32 ? 8 : a.Ws <= 64 ? 16 : 32)
                : 0;
  a.G = int(tz_groups(p));
  a.gpr = int(tz_groups_per_row(p));
  a.gpr_div = FastDiv(uint32_t(a.gpr));
  a.oh_div = FastDiv(uint32_t(a.OH));
  return a;
}

template <int KH, bool PLANES, bool PAD>
auto tz_kernel(int nwg, bool rs, bool dense) {
  if (dense)  // A from registers only (the groups' rows are not 16 bytes apart)
    return nwg == 2 ? single_channel_wgmma_kernel<KH, 2, true, PLANES, false, true>
                    : single_channel_wgmma_kernel<KH, 3, true, PLANES, false, true>;
  return rs ? (nwg == 2 ? single_channel_wgmma_kernel<KH, 2, true, PLANES, PAD>
                        : single_channel_wgmma_kernel<KH, 3, true, PLANES, PAD>)
            : (nwg == 2 ? single_channel_wgmma_kernel<KH, 2, false, PLANES, PAD>
                        : single_channel_wgmma_kernel<KH, 3, false, PLANES, PAD>);
}

template <int KH>
cudaError_t launch_kh(const TzArgs& a, int nwg, bool rs, bool planes, bool aligned, bool dense,
                      const DeviceInfo& dev, size_t smem, const float* x, const float* w, float* y,
                      cudaStream_t stream) {
  auto kern = planes ? (aligned ? tz_kernel<KH, true, true>(nwg, rs, dense)
                                : tz_kernel<KH, true, false>(nwg, rs, dense))
                     : tz_kernel<KH, false, false>(nwg, rs, dense);
  cudaError_t err = raise_func_attribute_once(reinterpret_cast<const void*>(kern), dev.device,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              int(smem));
  if (err != cudaSuccess) return err;
  return launch_ex(kern, dim3(unsigned((a.S + a.SPT - 1) / a.SPT * a.nfb)), dim3(128 * nwg), smem,
                   stream, a, x, w, y);
}

}  // namespace

bool single_channel_wgmma_supported(const ConvParams& p) {
  const int64_t* a = p.plan;
  const long long SPT = a[5], nwg = a[7] / 128;
  if (a[1] != 6 || a[2] != 1 || a[3] != 1 || a[4] != 32 || (a[6] < 0 || a[6] > 15) ||
      (a[7] != 256 && a[7] != 384) || SPT < nwg || SPT > 4096)
    return false;
  if (p.C != 1 || p.stride_h != 1 || p.stride_w != 1 || p.M % 32 != 0)
    return false;
  if (p.KH < 1 || p.KH > kMaxK || p.KW < 1 || p.KW > kMaxK || p.KH * p.KW < 2) return false;
  if (p.N < 1 || p.H < 1 || p.W < 1 || p.OH < 1 || p.OW < 1 || p.N >= (1 << 24) ||
      p.H >= (1 << 24) || p.W >= (1 << 24) || p.OH >= (1 << 24) || p.OW >= (1 << 24))
    return false;
  if (p.pad_top <= -(1 << 24) || p.pad_top >= (1 << 24) || p.pad_left <= -(1 << 24) ||
      p.pad_left >= (1 << 24))
    return false;
  // contiguous input rows; the output's filters contiguous, 16-byte runs (NHWC and its kin), or
  // its pixels contiguous with whole float4s per row (tz_planes)
  if (p.x_sw != 1 || p.x_sn < 0 || p.x_sh < 0 || p.w_so < 0 || p.w_sh < 0 || p.w_sw < 0)
    return false;
  if (!(p.y_sc == 1 && p.y_sn >= 0 && p.y_sh >= 0 && p.y_sw >= 0 && p.y_sn % 4 == 0 &&
        p.y_sh % 4 == 0 && p.y_sw % 4 == 0) &&
      !tz_planes(p))
    return false;
  if ((a[6] & 4) && !tz_planes(p)) return false;  // the aligned line is for plane outputs
  if ((a[6] & 8) && (!(a[6] & 2) || (a[6] & 4))) return false;  // dense: A from registers, plain line
  // filter offsets in 32 bits (TzFilters::load), flat pixel indices of the tall stack in 32
  // bits, the CTAs in one grid dimension, and the CTA's shared memory
  if ((p.M - 1) * p.w_so + (p.KH - 1) * p.w_sh + (p.KW - 1) * p.w_sw >= (1LL << 31)) return false;
  const long long S = tz_segments(p);
  if (S * kSeg + SPT * kSeg >= (1LL << 31)) return false;
  if ((S + SPT - 1) / SPT * (p.M / 32) >= (1LL << 31)) return false;
  return tz_shared_bytes(p, SPT, a[6] & 2) <= kMaxShared;
}

cudaError_t single_channel_wgmma_config(const ConvParams& p, long long out[2]) {
  if (!single_channel_wgmma_supported(p)) return cudaErrorInvalidValue;
  const long long SPT = p.plan[5];
  out[0] = (tz_segments(p) + SPT - 1) / SPT * (p.M / 32);
  out[1] = tz_shared_bytes(p, SPT, p.plan[6] & 2);
  return cudaSuccess;
}

cudaError_t launch_single_channel_wgmma(const ConvParams& p, const float* x, const float* w,
                                        float* y, cudaStream_t stream) {
  if (!single_channel_wgmma_supported(p)) return cudaErrorInvalidValue;
  if (p.out_elems() == 0) return cudaSuccess;
  DeviceInfo dev;
  cudaError_t err = current_device_info(&dev);
  if (err != cudaSuccess) return err;
  if (dev.cc_major != 9) return cudaErrorInvalidDevice;  // an sm_90a kernel
  const TzArgs a = make_tz_args(p, x);
  const bool rs = (p.plan[6] & 2) != 0, planes = tz_planes(p), aligned = (p.plan[6] & 4) != 0,
             dense = tz_dense(p);
  const size_t smem = size_t(tz_shared_bytes(p, a.SPT, rs));
  // a y XLA never hands over (not 16-byte aligned) or an SM without the shared memory: the
  // direct kernel, same answer
  if (!aligned16(y) || (long long)smem > dev.smem_optin) return launch_direct(p, x, w, y, stream);
  const int nwg = int(p.plan[7] / 128);
  switch (p.KH) {
    case 1: return launch_kh<1>(a, nwg, rs, planes, aligned, dense, dev, smem, x, w, y, stream);
    case 2: return launch_kh<2>(a, nwg, rs, planes, aligned, dense, dev, smem, x, w, y, stream);
    case 3: return launch_kh<3>(a, nwg, rs, planes, aligned, dense, dev, smem, x, w, y, stream);
    case 4: return launch_kh<4>(a, nwg, rs, planes, aligned, dense, dev, smem, x, w, y, stream);
    default: return launch_kh<5>(a, nwg, rs, planes, aligned, dense, dev, smem, x, w, y, stream);
  }
}

}  // namespace fastconv
