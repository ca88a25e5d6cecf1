// Standalone test and timing program for fastconv::launch_single_channel (cuda/single_channel.cu).
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -o /tmp/drv \
//        tests/cuda/single_channel_driver.cu cuda/single_channel.cu
//   /tmp/drv            correctness (paper-single set + random configs) then timing
//   /tmp/drv --small    a few small cases only (for compute-sanitizer; add
//                       cuda/single_channel_wgmma.cu cuda/direct_conv.cu -DFASTCONV_HAVE_WGMMA
//                       for the wgmma kernel's)
//   /tmp/drv --check    correctness only;  /tmp/drv --time  timing only
//   /tmp/drv --plans F  also check (and time, for the paper-single cases) the planner's plans
//                       from F (python -m jax_fastconv.plan_single_channel --export F): the
//                       timed configuration is the planned one, plus variants (SC_VARIANTS=0|1|2)
//                       and, per case, store_us: the time of a kernel that only writes the
//                       case's output (the store ceiling on this device, launch and drain included)
//   /tmp/drv --plans F --one NAME   run the planned case NAME once (for ncu)
//   /tmp/drv --strided  time the strided kernel (plan division 4) on the single-strided set
//   /tmp/drv --strided-one NAME  launch one case of that set twice (its name, '_' for ' ')
//                       (add cuda/single_channel_strided.cu to the build); --check includes
//                       100 random strided layers, 60 random few-channel ones, and --small two;
//                       with the wgmma kernel built in, --check adds 100 of its launches (the
//                       paper's NHWC K3 / K5 layers and 80 random layers; NCHW outputs: the
//                       paper's K5 layers of OW % 4 == 0 and 40 random layers)
//   SC_CASES=a,b: time only the paper cases whose names contain one of these
//   SC_SAME=1: time them with SAME padding (the planned launch and variants on the padded layer)
//   SC_YPAD=1: NCHW outputs with each filter's plane starting on a 32-byte boundary (timing);
//                       SC_YPAD_EXTRA=e: e more floats per plane
//   SC_YROW=1: NCHW output rows as long as the wgmma kernel's band line (timing: its store runs
//                       in whole 32-byte sectors)
//   SC_W_KW0=1: timed filters zero at every tap but kw = 0 (timing: what the values cost)
//   SC_HOT_W=1: every timed launch reads the same filter buffer (the plan timer's way), not its
//                       set's own
//   SC_MMA=1|2|3 (with --plans F): also time the tensor-core kernel (division 5) on a few tiles
//                       (1), on a grid of tiles (2); 3: the grid, and no FFMA variants
//   SC_WINO=1|2 (with --plans F): also time row-Winograd plans (plan[6] & 2) of 5x5 cases; 2: only those
//   SC_TZ=1|2 (with --plans F, a build with the wgmma kernel): also time its launches on the
//                       cases it runs (NHWC, and NCHW of OW % 4 == 0); 2: only those;
//                       SC_TZ_SPT=a,b,..: its launches of these segments per CTA instead
//                       (SC_TZ_RS3=1: also with 3 warpgroups and A from registers;
//                       SC_TZ_DENSE=1: also with dense segments)
//   SC_CLOCK=1: while each timed graph replays, a one-thread kernel on another stream samples
//                       the SM clock (%clock64 over %globaltimer, every ~2 us, at most 2^16
//                       samples); a "[clock]" line before the case's line gives its median (the
//                       sampler holds one warp slot of one SM)
//   /tmp/drv --few      time the strided kernel's few-channel instances (1 < C < 8, S8) on
//                       the few-channel set (RGB stems, C = 4 3x3/1, C = 2 5x5/2)
// Inputs and filters are a hash of their memory offset (never zero), so the CPU reference
// recomputes any element without copying inputs back. Outputs are poisoned with NaN first;
// the NaN count over the whole output and a bit-exact hash are computed on the GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "../../cuda/kernels.h"

using fastconv::ConvParams;
namespace fastconv {
cudaError_t single_channel_launch_config(const ConvParams& p, long long out[10]);
}

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, \
              __LINE__, #x);                                                           \
      exit(2);                                                                         \
    }                                                                                  \
  } while (0)

__host__ __device__ inline float hval(uint32_t seed, uint64_t off) {
  uint64_t z = off * 0x9E3779B97F4A7C15ULL + seed * 0xBF58476D1CE4E5B9ULL + 0x94D049BB133111EBULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  const float u = float((uint32_t)(z >> 40)) * (1.0f / 16777216.0f);  // [0,1)
  const float mag = 0.0625f + 0.9375f * u;
  return (z & 1) ? -mag : mag;
}

__global__ void fill_kernel(float* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = hval(seed, i);
}
// SC_W_KW0: every tap but kw = 0 zeroed (the filter element at index i has kw = i / w_sw % KW)
__global__ void zero_kw_kernel(float* p, size_t n, long long w_sw, long long KW) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    if ((i / w_sw) % KW != 0) p[i] = 0.f;
}
__global__ void poison_kernel(float* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = __int_as_float(0x7fc00001);
}
// NaN count and order-independent hash over the logical output elements.
__global__ void scan_kernel(const float* y, ConvParams p, unsigned long long* out) {
  const long long total = p.out_elems();
  unsigned long long nan = 0, h = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    long long r = i;
    const long long ow = r % p.OW; r /= p.OW;
    const long long oh = r % p.OH; r /= p.OH;
    const long long m = r % p.M;
    const long long n = r / p.M;
    const float v = y[n * p.y_sn + m * p.y_sc + oh * p.y_sh + ow * p.y_sw];
    if (v != v) ++nan;
    h += (unsigned long long)__float_as_uint(v) * (2654435761ULL * (unsigned long long)i + 1ULL);
  }
  atomicAdd(out, nan);
  atomicAdd(out + 1, h);
}
__global__ void gather_kernel(const float* y, const long long* off, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = y[off[i]];
}

struct Case {
  std::string name;
  long long N, H, W, M, KH, KW, pt, pb, pl, pr;
  int ylay;   // 0 NCHW, 1 NHWC, 2.. permutations (generic)
  int wlay;   // 0 OIHW, 1 HWIO, 2 (kh,kw,m) with pitch (generic)
  int xpitch; // extra elements per input row
  long long plan[8];
  long long sh = 1, sw = 1;  // strides (> 1: the strided kernel, plan division 4)
  long long C = 1;  // channels (> 1: the strided kernel's few-channel instances, S8)
  int xlay = 0;     // input: 0 planes (n, c, h, w), 1 channels last (n, h, w, c); rows pitched
};

struct Bufs {
  size_t x_elems, w_elems, y_elems;
};

static ConvParams make_params(const Case& c, Bufs* b) {
  ConvParams p{};
  p.N = c.N; p.C = c.C; p.H = c.H; p.W = c.W; p.M = c.M; p.KH = c.KH; p.KW = c.KW;
  p.OH = (c.H + c.pt + c.pb - c.KH) / c.sh + 1;
  p.OW = (c.W + c.pl + c.pr - c.KW) / c.sw + 1;
  p.stride_h = c.sh; p.stride_w = c.sw;
  p.pad_top = c.pt; p.pad_left = c.pl;
  if (c.xlay == 0) {
    const long long xs_h = c.W + c.xpitch;
    p.x_sw = 1; p.x_sh = xs_h; p.x_sc = xs_h * c.H; p.x_sn = p.x_sc * c.C;
  } else {
    p.x_sc = 1; p.x_sw = c.C; p.x_sh = c.W * c.C + c.xpitch; p.x_sn = p.x_sh * c.H;
  }
  b->x_elems = size_t(p.x_sn * c.N);
  const long long T = c.C * c.KH * c.KW;  // weights per filter
  if (c.wlay == 0) { p.w_sw = 1; p.w_sh = c.KW; p.w_si = c.KH * c.KW; p.w_so = T; b->w_elems = c.M * T; }
  else if (c.wlay == 1) { p.w_so = 1; p.w_si = c.M; p.w_sw = c.C * c.M; p.w_sh = c.KW * c.C * c.M; b->w_elems = c.M * T; }
  else { const long long mp = c.M + 3; p.w_so = 1; p.w_si = mp; p.w_sw = c.C * mp; p.w_sh = c.KW * c.C * mp; b->w_elems = mp * T; }
  const long long N = c.N, M = c.M, OH = p.OH, OW = p.OW;
  // y axes: order listed slowest -> fastest
  int order[4];  // 0 n, 1 m, 2 oh, 3 ow
  static const int orders[][4] = {{0, 1, 2, 3}, {0, 2, 3, 1}, {1, 0, 2, 3}, {2, 3, 0, 1},
                                  {0, 3, 2, 1}, {0, 1, 3, 2}, {3, 2, 1, 0}};
  memcpy(order, orders[c.ylay], sizeof(order));
  const long long sz[4] = {N, M, OH, OW};
  long long st[4], s = 1;
  for (int k = 3; k >= 0; --k) { st[order[k]] = s; s *= sz[order[k]]; }
  p.y_sn = st[0]; p.y_sc = st[1]; p.y_sh = st[2]; p.y_sw = st[3];
  if (c.ylay == 0 && std::getenv("SC_YPAD")) {  // NCHW planes padded to 32-byte boundaries
    // SC_YPAD_EXTRA=e: e more floats per plane (rounded up to 4: a plane stride off a power of
    // two, to tell DRAM channel conflicts between planes from the store pattern)
    const char* extra = std::getenv("SC_YPAD_EXTRA");
    p.y_sc = (OH * OW + 7) / 8 * 8 + (extra ? (atoll(extra) + 3) / 4 * 4 : 0);
    p.y_sn = p.y_sc * M; s = p.y_sn * N;
  }
  if (c.ylay == 0 && std::getenv("SC_YROW")) {  // NCHW rows of the wgmma band's line: a pixel's
    // address and its flat index in the tall stack then agree mod 8 (whole 32-byte sectors per
    // store run), at a larger footprint (the line's last columns are never written)
    const long long line = (OW + c.KW - 1 + 3) / 4 * 4;
    p.y_sh = line; p.y_sc = (OH * line + 7) / 8 * 8; p.y_sn = p.y_sc * M; s = p.y_sn * N;
  }
  b->y_elems = size_t(s);
  for (int i = 0; i < 8; ++i) p.plan[i] = c.plan[i];
  p.plan[0] = 1;
  return p;
}

static double ref_point(const Case& c, const ConvParams& p, long long n, long long m, long long oh, long long ow) {
  double acc = 0;
  for (long long ci = 0; ci < c.C; ++ci)
    for (long long kh = 0; kh < c.KH; ++kh) {
      const long long ih = oh * c.sh + kh - c.pt;
      if (ih < 0 || ih >= c.H) continue;
      for (long long kw = 0; kw < c.KW; ++kw) {
        const long long iw = ow * c.sw + kw - c.pl;
        if (iw < 0 || iw >= c.W) continue;
        const double xv = hval(1, n * p.x_sn + ci * p.x_sc + ih * p.x_sh + iw * p.x_sw);
        const double wv = hval(2, m * p.w_so + ci * p.w_si + kh * p.w_sh + kw * p.w_sw);
        acc += xv * wv;
      }
    }
  return acc;
}

static float* d_x = nullptr; static float* d_w = nullptr; static float* d_y = nullptr;
static size_t cap_x = 0, cap_w = 0, cap_y = 0;
static void ensure(float** p, size_t* cap, size_t n) {
  if (n <= *cap) return;
  if (*p) CK(cudaFree(*p));
  CK(cudaMalloc(p, std::max<size_t>(n, 1) * sizeof(float)));
  *cap = n;
}

struct CheckResult { bool ok; double rel; long long nans; bool det; };

static CheckResult check_case(const Case& c, std::mt19937_64& rng, bool verbose) {
  Bufs b;
  ConvParams p = make_params(c, &b);
  ensure(&d_x, &cap_x, b.x_elems); ensure(&d_w, &cap_w, b.w_elems); ensure(&d_y, &cap_y, b.y_elems);
  fill_kernel<<<1024, 256>>>(d_x, b.x_elems, 1);
  fill_kernel<<<256, 256>>>(d_w, b.w_elems, 2);
  poison_kernel<<<2048, 256>>>(d_y, b.y_elems);
  CK(cudaGetLastError());
  unsigned long long* d_scan; CK(cudaMalloc(&d_scan, 4 * sizeof(unsigned long long)));
  CK(cudaMemset(d_scan, 0, 4 * sizeof(unsigned long long)));
  cudaError_t e = fastconv::launch_single_channel(p, d_x, d_w, d_y, 0);
  if (e != cudaSuccess) { printf("FAIL %s: launch error %s\n", c.name.c_str(), cudaGetErrorString(e)); exit(3); }
  CK(cudaDeviceSynchronize());
  scan_kernel<<<1024, 256>>>(d_y, p, d_scan);
  // second run, same output buffer re-poisoned: bit-identical?
  // sample points
  const long long total = p.out_elems();
  std::vector<long long> idx;
  const long long kSample = 20000;
  if (total <= kSample * 2) { for (long long i = 0; i < total; ++i) idx.push_back(i); }
  else { std::uniform_int_distribution<long long> U(0, total - 1); for (long long i = 0; i < kSample; ++i) idx.push_back(U(rng)); 
         // always include corners of the first and last map
         idx.push_back(0); idx.push_back(total - 1); idx.push_back(p.OW - 1); idx.push_back(total - p.OW); }
  std::vector<long long> off(idx.size());
  std::vector<long long> nmhw(idx.size() * 4);
  for (size_t i = 0; i < idx.size(); ++i) {
    long long r = idx[i];
    const long long ow = r % p.OW; r /= p.OW;
    const long long oh = r % p.OH; r /= p.OH;
    const long long m = r % p.M; const long long n = r / p.M;
    off[i] = n * p.y_sn + m * p.y_sc + oh * p.y_sh + ow * p.y_sw;
    nmhw[4 * i] = n; nmhw[4 * i + 1] = m; nmhw[4 * i + 2] = oh; nmhw[4 * i + 3] = ow;
  }
  long long* d_off; float* d_g;
  CK(cudaMalloc(&d_off, off.size() * sizeof(long long)));
  CK(cudaMalloc(&d_g, off.size() * sizeof(float)));
  CK(cudaMemcpy(d_off, off.data(), off.size() * sizeof(long long), cudaMemcpyHostToDevice));
  gather_kernel<<<(int(off.size()) + 255) / 256, 256>>>(d_y, d_off, d_g, int(off.size()));
  std::vector<float> got(off.size());
  CK(cudaMemcpy(got.data(), d_g, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  unsigned long long h1[2];
  CK(cudaMemcpy(h1, d_scan, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  // run 2
  poison_kernel<<<2048, 256>>>(d_y, b.y_elems);
  CK(cudaMemset(d_scan, 0, 4 * sizeof(unsigned long long)));
  e = fastconv::launch_single_channel(p, d_x, d_w, d_y, 0);
  if (e != cudaSuccess) { printf("FAIL %s: launch error %s\n", c.name.c_str(), cudaGetErrorString(e)); exit(3); }
  scan_kernel<<<1024, 256>>>(d_y, p, d_scan);
  unsigned long long h2[2];
  CK(cudaMemcpy(h2, d_scan, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  CK(cudaFree(d_off)); CK(cudaFree(d_g)); CK(cudaFree(d_scan));

  double num = 0, den = 0;
  for (size_t i = 0; i < idx.size(); ++i) {
    const double r = ref_point(c, p, nmhw[4 * i], nmhw[4 * i + 1], nmhw[4 * i + 2], nmhw[4 * i + 3]);
    const double d = double(got[i]) - r;
    num += d * d; den += r * r;
  }
  double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  if (!(rel == rel)) rel = 1e30;
  CheckResult res{rel <= 1e-5 && h1[0] == 0 && h2[0] == 0 && h1[1] == h2[1], rel, (long long)h1[0],
                  h1[1] == h2[1]};
  if (verbose || !res.ok)
    printf("%s %-44s N=%lld HxW=%lldx%lld M=%lld K=%lldx%lld pad=(%lld,%lld,%lld,%lld) y%d w%d xp%d "
           "plan=[%lld,%lld,%lld,%lld,%lld,%lld,%lld] rel=%.2e nan=%lld det=%d\n",
           res.ok ? "ok  " : "FAIL", c.name.c_str(), c.N, c.H, c.W, c.M, c.KH, c.KW, c.pt, c.pb, c.pl,
           c.pr, c.ylay, c.wlay, c.xpitch, c.plan[1], c.plan[2], c.plan[3], c.plan[4], c.plan[5],
           c.plan[6], c.plan[7], rel, res.nans, int(res.det));
  return res;
}

static Case paper_case(long long N, long long HW, long long M, long long K, int ylay, const long long* plan) {
  Case c{};
  char buf[128];
  snprintf(buf, sizeof buf, "paper %s N%lld %lldx%lld M%lld K%lld", ylay == 1 ? "NHWC" : "NCHW", N, HW, HW, M, K);
  c.name = buf; c.N = N; c.H = c.W = HW; c.M = M; c.KH = c.KW = K;
  c.ylay = ylay; c.wlay = ylay == 1 ? 1 : 0;
  for (int i = 0; i < 8; ++i) c.plan[i] = plan ? plan[i] : 0;
  return c;
}

static const long long kMaps[6][2] = {{28, 512}, {56, 256}, {112, 128}, {224, 64}, {512, 32}, {1024, 32}};

static Case random_case(std::mt19937_64& rng, int i) {
  auto U = [&](long long a, long long b) { return std::uniform_int_distribution<long long>(a, b)(rng); };
  Case c{};
  c.name = "rand" + std::to_string(i);
  static const long long ks[][2] = {{1, 7}, {7, 1}, {5, 3}, {3, 5}, {2, 2}, {4, 4}, {1, 1}, {3, 3}, {5, 5}, {7, 7}, {6, 2}, {9, 9}, {2, 8}};
  if (U(0, 2) == 0) { c.KH = U(1, 9); c.KW = U(1, 9); }
  else { const auto& k = ks[U(0, 12)]; c.KH = k[0]; c.KW = k[1]; }
  const int sz = int(U(0, 9));
  if (sz < 6) { c.H = U(1, 70); c.W = U(1, 70); }
  else if (sz < 8) { c.H = U(30, 200); c.W = U(30, 200); }
  else if (sz == 8) { c.H = U(1, 12); c.W = U(1200, 3000); }   // wide: column tiles
  else { c.H = U(200, 700); c.W = U(1, 9); }                  // tall, narrow
  c.M = U(0, 3) == 0 ? U(65, 300) : U(1, 64);
  const long long pix = c.H * c.W;
  c.N = pix * c.M > 2000000 ? 1 : (U(0, 2) == 0 ? U(1, 64) : U(1, 4));
  for (int t = 0; t < 100; ++t) {
    c.pt = U(-2, 4); c.pb = U(-2, 4); c.pl = U(-2, 4); c.pr = U(-2, 4);
    if (U(0, 3) == 0) { c.pt = c.pb = c.pl = c.pr = 0; }
    if (c.H + c.pt + c.pb - c.KH + 1 >= 1 && c.W + c.pl + c.pr - c.KW + 1 >= 1) break;
    c.pt = c.pb = (c.KH - 1) / 2 + 1; c.pl = c.pr = (c.KW - 1) / 2 + 1;
  }
  if (c.H + c.pt + c.pb - c.KH + 1 < 1) c.pb += c.KH;
  if (c.W + c.pl + c.pr - c.KW + 1 < 1) c.pr += c.KW;
  c.ylay = int(U(0, 6));
  if (U(0, 1)) c.ylay = int(U(0, 1));
  c.wlay = int(U(0, 2));
  c.xpitch = U(0, 4) == 0 ? int(U(1, 5)) : 0;
  static const long long divs[] = {1, 2, 1, 2, 0, 7};
  static const long long thr[] = {0, 64, 96, 128, 256, 512, 1024, 33};
  c.plan[1] = divs[U(0, 5)];
  const long long OH = c.H + c.pt + c.pb - c.KH + 1;
  const long long Pv[] = {0, 1, 2, 3, OH, 2 * OH + 5, -1};
  const long long Qv[] = {0, 1, 2, c.M, 3 * c.M + 1, -4};
  const long long F[] = {0, 1, 8, 13, 32, 200};
  const long long R[] = {0, 1, 3, 8, 100};
  c.plan[2] = Pv[U(0, 6)]; c.plan[3] = Qv[U(0, 5)]; c.plan[4] = F[U(0, 5)]; c.plan[5] = R[U(0, 4)];
  c.plan[6] = U(0, 4) == 0 ? 0 : 1; c.plan[7] = thr[U(0, 7)];
  return c;
}

// A random layer on the wgmma kernel (division 6: KH, KW <= 5, M % 32 == 0) and any launch it
// takes: outputs whose filters are contiguous (NHWC and its kin), or (planes) NCHW outputs with
// OW % 4 == 0 (tz_planes).
static Case random_wgmma_case(std::mt19937_64& rng, int i, bool planes) {
  auto U = [&](long long a, long long b) { return std::uniform_int_distribution<long long>(a, b)(rng); };
  Case c = random_case(rng, i);
  c.name = (planes ? "wgmma nchw rand" : "wgmma rand") + std::to_string(i);
  c.KH = U(1, 5); c.KW = U(c.KH == 1 ? 2 : 1, 5);
  if (c.H + c.pt + c.pb < c.KH) c.pb = c.KH - c.H - c.pt + U(0, 2);
  if (c.W + c.pl + c.pr < c.KW) c.pr = c.KW - c.W - c.pl + U(0, 2);
  c.M = 32 * U(1, 3);
  if (planes) {
    c.pr += (4 - (c.W + c.pl + c.pr - c.KW + 1) % 4) % 4;  // OW % 4 == 0
    c.ylay = 0;
  } else {
    c.ylay = int((const int[]){1, 3, 4}[U(0, 2)]);
  }
  const long long nwg = U(2, 3);
  const long long pl[8] = {1, 6, 1, 1, 32, nwg * U(1, 4) + U(0, 1), U(0, 3), 128 * nwg};
  for (int k = 0; k < 8; ++k) c.plan[k] = pl[k];
  return c;
}

// ---------------- timing ----------------
static double copy_bw_GBps() {
  const size_t bytes = size_t(1) << 30;
  void *a, *b; CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 1, bytes));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  std::vector<float> ts;
  for (int i = 0; i < 13; ++i) {
    CK(cudaEventRecord(e0)); CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1)); float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); if (i >= 3) ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end());
  CK(cudaFree(a)); CK(cudaFree(b));
  return 2.0 * bytes / (ts[ts.size() / 2] * 1e-3) / 1e9;
}

struct TimeRes { double us; double gbps; };

// R buffer sets for one case (rotated so that L2 does not flatter small cases); many plans
struct TimeBufs {
  Bufs b; int R = 0; std::vector<float*> xs, ws, ys;
  void init(const Case& c) {
    ConvParams p = make_params(c, &b);
    (void)p;
    const double footprint = 4.0 * (double(b.x_elems) + b.w_elems + double(b.y_elems));
    // SC_ROT_MB: the megabytes the R buffer sets span (default 300: > 2x L2), at most
    // SC_ROT_RMAX sets (default 64)
    const double rot = std::getenv("SC_ROT_MB") ? atof(std::getenv("SC_ROT_MB")) * 1e6 : 300e6;
    const int rmax = std::getenv("SC_ROT_RMAX") ? atoi(std::getenv("SC_ROT_RMAX")) : 64;
    R = int(std::min(double(rmax), std::max(2.0, std::ceil(rot / footprint))));
    xs.resize(R); ws.resize(R); ys.resize(R);
    for (int r = 0; r < R; ++r) {
      CK(cudaMalloc(&xs[r], b.x_elems * 4)); CK(cudaMalloc(&ws[r], b.w_elems * 4)); CK(cudaMalloc(&ys[r], b.y_elems * 4));
      fill_kernel<<<1024, 256>>>(xs[r], b.x_elems, 1 + r); fill_kernel<<<64, 256>>>(ws[r], b.w_elems, 2);
      if (std::getenv("SC_W_KW0")) zero_kw_kernel<<<64, 256>>>(ws[r], b.w_elems, p.w_sw, c.KW);
      poison_kernel<<<1024, 256>>>(ys[r], b.y_elems);
    }
    CK(cudaDeviceSynchronize());
  }
  void release() {
    for (int r = 0; r < R; ++r) { CK(cudaFree(xs[r])); CK(cudaFree(ws[r])); CK(cudaFree(ys[r])); }
    R = 0;
  }
};

// SC_CLOCK: (%globaltimer, %clock64) pairs about every 2 us until the host sets *stop.
__global__ void clock_sampler(unsigned long long* out, int n, const volatile int* stop) {
  for (int i = 0; i < n && !*stop; ++i) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    out[2 * i] = t;
    out[2 * i + 1] = clock64();
    __nanosleep(2000);
  }
}

// Runs body() with clock_sampler beside it and prints the median SM clock over the samples.
template <class Body>
static void with_clock_sampler(Body body) {
  constexpr int n = 1 << 16;
  int* stop;  // host-mapped flag
  unsigned long long* dev;
  CK(cudaHostAlloc(&stop, sizeof(int), cudaHostAllocMapped));
  *stop = 0;
  int* dstop;
  CK(cudaHostGetDevicePointer(&dstop, stop, 0));
  CK(cudaMalloc(&dev, 2 * n * sizeof(unsigned long long)));
  CK(cudaMemset(dev, 0, 2 * n * sizeof(unsigned long long)));
  cudaStream_t ss; CK(cudaStreamCreateWithFlags(&ss, cudaStreamNonBlocking));
  clock_sampler<<<1, 1, 0, ss>>>(dev, n, dstop);
  body();
  *stop = 1;
  CK(cudaStreamSynchronize(ss));
  std::vector<unsigned long long> h(2 * n);
  CK(cudaMemcpy(h.data(), dev, h.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  std::vector<double> mhz;
  for (int i = 1; i < n && h[2 * i]; ++i)
    if (h[2 * i] > h[2 * i - 2]) mhz.push_back(1e3 * double(h[2 * i + 1] - h[2 * i - 1]) / double(h[2 * i] - h[2 * i - 2]));
  std::sort(mhz.begin(), mhz.end());
  if (!mhz.empty())
    printf("  [clock] median %.0f MHz (p10 %.0f, p90 %.0f) over %zu intervals\n", mhz[mhz.size() / 2],
           mhz[mhz.size() / 10], mhz[mhz.size() * 9 / 10], mhz.size());
  CK(cudaStreamDestroy(ss)); CK(cudaFree(dev)); CK(cudaFreeHost(stop));
}

// Median time per launch: each sample is one CUDA graph of R launches (launch(r, stream) for
// r < R, one per buffer set), divided by R.
template <class Launch>
static double graph_time_us(int R, int samples, Launch launch) {
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  cudaStream_t st; CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t graph; cudaGraphExec_t gexec;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int r = 0; r < R; ++r) launch(r, st);
  CK(cudaStreamEndCapture(st, &graph));
  CK(cudaGraphInstantiate(&gexec, graph, 0));
  CK(cudaGraphLaunch(gexec, st)); CK(cudaStreamSynchronize(st));
  std::vector<double> ts;
  auto replays = [&] {
    for (int s = 0; s < samples; ++s) {
      CK(cudaEventRecord(e0, st)); CK(cudaGraphLaunch(gexec, st));
      CK(cudaEventRecord(e1, st)); CK(cudaEventSynchronize(e1));
      float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ts.push_back(ms * 1e3 / R);
    }
  };
  if (std::getenv("SC_CLOCK")) with_clock_sampler(replays);
  else replays();
  CK(cudaGraphExecDestroy(gexec)); CK(cudaGraphDestroy(graph)); CK(cudaStreamDestroy(st));
  CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

static TimeRes time_plan(const Case& c, TimeBufs& tb, int samples) {
  Bufs b; ConvParams p = make_params(c, &b);
  const double bytes = 4.0 * (double(b.x_elems) + b.w_elems + double(p.out_elems()));
  const int R = tb.R;
  for (int i = 0; i < 2 * R; ++i) CK(fastconv::launch_single_channel(p, tb.xs[i % R], tb.ws[i % R], tb.ys[i % R], 0));
  CK(cudaDeviceSynchronize());
  const bool hot_w = std::getenv("SC_HOT_W") != nullptr;  // one filter buffer, as the plan timer
  const double us = graph_time_us(R, samples, [&](int r, cudaStream_t st) {
    CK(fastconv::launch_single_channel(p, tb.xs[r], tb.ws[hot_w ? 0 : r], tb.ys[r], st));
  });
  return {us, bytes / (us * 1e-6) / 1e9};
}

// The store ceiling of a case: a kernel that only writes its output (16-byte stores of a constant
// over the same R output buffers, same graph timing): what any kernel writing that many bytes
// costs here, launch and drain included. grid 0: one float4 per thread; else a grid-stride loop.
__global__ void store_only_kernel(float4* y, size_t n4) {
  const float4 v = make_float4(1.f, 2.f, 3.f, 4.f);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) y[i] = v;
}

static double time_store_only(TimeBufs& tb, size_t out_elems, int grid, int samples) {
  const size_t n4 = out_elems / 4;  // the tail (< 4 floats) does not move the time
  const int g = grid > 0 ? grid : int(std::min<size_t>((n4 + 255) / 256, size_t(1) << 30));
  return graph_time_us(tb.R, samples, [&](int r, cudaStream_t st) {
    store_only_kernel<<<g, 256, 0, st>>>(reinterpret_cast<float4*>(tb.ys[r]), n4);
  });
}

static TimeRes time_case(const Case& c) {
  TimeBufs tb; tb.init(c);
  TimeRes r = time_plan(c, tb, 25);
  tb.release();
  return r;
}

// ---------------- planned cases (exported by jax_fastconv/plan_single_channel.py) ----------------
static std::vector<Case> read_plans(const char* path) {
  std::vector<Case> v;
  FILE* f = fopen(path, "r");
  if (!f) { fprintf(stderr, "cannot open %s\n", path); exit(2); }
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    char name[128]; Case c{}; long long a[7];
    int n = sscanf(line, "%127s %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %d %lld %lld %lld %lld %lld %lld %lld",
                   name, &c.N, &c.H, &c.W, &c.M, &c.KH, &c.KW, &c.pt, &c.pb, &c.pl, &c.pr, &c.ylay,
                   &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6]);
    if (n != 19) { fprintf(stderr, "bad line in %s: %s", path, line); exit(2); }
    c.name = name; c.wlay = c.ylay == 1 ? 1 : 0; c.plan[0] = 1;
    for (int i = 0; i < 7; ++i) c.plan[i + 1] = a[i];
    v.push_back(c);
  }
  fclose(f);
  return v;
}

// The launch the kernel resolves a planned case to must be the plan itself.
static bool launch_is_plan(const Case& c, int nsm) {
  Bufs b; ConvParams p = make_params(c, &b);
  long long L[10];
  CK(fastconv::single_channel_launch_config(p, L));
  if (c.plan[1] == 4) {  // the strided kernel: no tiles to compare
    const bool ok = L[0] == 1 && L[1] == 4 && L[6] == 256;
    if (!ok) printf("LAUNCH != PLAN %s: exact=%lld div=%lld (strided plan)\n", c.name.c_str(), L[0], L[1]);
    return ok;
  }
  if (c.plan[1] == 5) {  // the tensor-core kernel: its tile is the plan's, or its own for 0 / 0
    const bool ok = L[0] == 1 && L[1] == 5 && L[6] == 256 &&
                    L[4] == c.plan[4] && L[2] == c.plan[5];
    if (!ok) printf("LAUNCH != PLAN %s: exact=%lld div=%lld (tensor-core plan)\n", c.name.c_str(), L[0], L[1]);
    return ok;
  }
  if (c.plan[1] == 3) {  // the pointwise 1x1 kernel: no tiles to compare
    const bool ok = L[0] == 1 && L[1] == 3 && L[6] == 256;
    if (!ok) printf("LAUNCH != PLAN %s: exact=%lld div=%lld (pointwise plan)\n", c.name.c_str(), L[0], L[1]);
    return ok;
  }
  const long long MB = c.plan[4], RB = c.plan[5];
  bool ok = L[0] == 1 && L[1] == c.plan[1] && L[2] == RB && L[4] == MB && L[5] == c.plan[6] &&
            L[6] == c.plan[7];
  // grid: volume -> one block per tile; prefetch -> min(tiles, 2 x SMs)
  const long long tiles = p.N * ((p.OH + RB - 1) / RB) * ((p.OW + L[3] - 1) / L[3]) * ((p.M + MB - 1) / MB);
  ok = ok && L[7] == ((c.plan[6] & 1) ? std::min<long long>(tiles, 2LL * nsm) : tiles);
  if (!ok)
    printf("LAUNCH != PLAN %s: exact=%lld div=%lld RB=%lld CB=%lld MB=%lld pf=%lld thr=%lld grid=%lld smem=%lld\n",
           c.name.c_str(), L[0], L[1], L[2], L[3], L[4], L[5], L[6], L[7], L[8]);
  return ok;
}

static void plan_str(const long long* pl, char* buf, size_t n) {
  snprintf(buf, n, "[%lld,%lld,%lld,%lld,%lld,%lld,%lld]", pl[1], pl[2], pl[3], pl[4], pl[5], pl[6], pl[7]);
}

// Whether a tensor-core tile of RB rows fits that kernel's shared memory (single_channel_mma.cu,
// plan_tile: both buffers of an input band of RB + KH - 1 rows x BW = OW + KW - 1 columns,
// rounded up to 4 floats, within kSmemBudget = 96 KB).
static bool mma_band_fits(long long RB, long long KH, long long BW) {
  return 2 * (RB + KH - 1) * ((BW + 3) / 4 * 4) * 4 <= 96 * 1024;
}

// Rows of a whole-map band: the fewest equal bands of <= 64 rows (plan_single_channel.band_rows).
static long long band_rows(long long OH) {
  const long long n = (OH + 63) / 64;
  return (OH + n - 1) / n;
}

// exploration variants around a planned paper case (all valid plans: the kernel runs them exactly)
static std::vector<std::vector<long long>> variants(const Case& c, int level) {
  std::vector<std::vector<long long>> v;
  if (std::getenv("SC_MMA") && c.KH * c.KW >= 2 && c.plan[1] != 5) {  // the tensor-core kernel
    const long long OH = c.H + c.pt + c.pb - c.KH + 1;
    const bool grid = atoi(std::getenv("SC_MMA")) >= 2;  // 1: a few tiles; 2, 3: a grid
    for (long long MB : {16LL, 32LL, 64LL, 128LL})
      for (long long RB : {1LL, 2LL, 4LL, 8LL, 16LL, 32LL}) {
        if (!grid && !((MB == 32 && RB <= 2) || (MB == 64 && RB == 16))) continue;
        if (RB <= OH && MB <= std::max<long long>(16, (c.M + 15) / 16 * 16) &&
            mma_band_fits(RB, c.KH, c.W + c.pl + c.pr))
          v.push_back({1, 5, 1, 1, MB, RB, 0, 256});
      }
    if (atoi(std::getenv("SC_MMA")) >= 3) return v;  // tensor-core plans only
  }
  const long long OW = c.W + c.pl + c.pr - c.KW + 1;
  if (std::getenv("SC_TZ") && (c.ylay == 1 || (c.ylay == 0 && OW % 4 == 0)) && c.M % 32 == 0 &&
      c.KH <= 5 && c.KW <= 5 && c.KH * c.KW >= 2) {
    // the wgmma kernel (division 6; NHWC outputs, and NCHW ones of OW % 4 == 0):
    // plan_single_channel.tz_launches' TZ_GRIDS (1, 2 or 4 CTAs per SM; 2 or 3 warpgroups; A
    // from registers or not), staggered
    const long long OH = c.H + c.pt + c.pb - c.KH + 1;
    const long long line = (OW + c.KW - 1 + 3) / 4 * 4;
    auto segments = [&](long long ln) { return ((c.N * (OH + c.KH - 1) - c.KH + 1) * ln + 255) / 256; };
    const long long segs = segments(line);
    const long long grids[][3] = {{1, 2, 0}, {1, 2, 1}, {1, 3, 0}, {2, 2, 0},
                                  {2, 2, 1}, {2, 3, 0}, {4, 2, 0}};
    if (const char* list = std::getenv("SC_TZ_SPT")) {  // a sweep: these SPT, 3 launches each
      for (const char* q = list; *q;) {
        const long long spt = std::max(2LL, std::min(atoll(q), segs));
        v.push_back({1, 6, 1, 1, 32, spt, 1, 256});
        v.push_back({1, 6, 1, 1, 32, spt, 3, 256});
        if (spt >= 3) v.push_back({1, 6, 1, 1, 32, spt, 1, 384});
        if (spt >= 3 && std::getenv("SC_TZ_RS3")) v.push_back({1, 6, 1, 1, 32, spt, 3, 384});
        if (std::getenv("SC_TZ_DENSE")) v.push_back({1, 6, 1, 1, 32, spt, 11, 256});
        if (spt >= 3 && std::getenv("SC_TZ_DENSE") && std::getenv("SC_TZ_RS3"))
          v.push_back({1, 6, 1, 1, 32, spt, 11, 384});
        while (*q && *q != ',') ++q;
        if (*q == ',') ++q;
      }
    } else {
      // (CTAs per SM, warpgroups, A from registers: plan[6] & 2); for plane outputs whose line
      // the alignment changes, the entries with A from registers again with the aligned line
      // (plan[6] & 4); then those with dense segments (plan[6] & 8)
      const bool aligns = c.ylay == 0 && (line - OW) % 8;
      for (long long kind : {0, 4, 8}) {
        if (kind == 4 && !aligns) continue;
        const long long sg = kind == 8 ? (c.N * OH * ((OW + 3) / 4) + 63) / 64
                                       : segments(kind == 4 ? line + 4 : line),
                        tiles = sg * (c.M / 32);
        for (auto& g : grids) {
          if (kind && !g[2]) continue;
          const long long spt = std::min(std::max(g[1], (tiles + g[0] * 132 - 1) / (g[0] * 132)),
                                         std::max(g[1], sg));
          v.push_back({1, 6, 1, 1, 32, spt, 1 + 2 * g[2] + kind, 128 * g[1]});
        }
      }
    }
    if (atoi(std::getenv("SC_TZ")) >= 2) return v;  // wgmma plans only
  }
  if (std::getenv("SC_WINO") && c.KH == 5 && c.KW == 5) {  // row-Winograd products
    const long long OH = c.H + c.pt + c.pb - c.KH + 1, M = c.M;
    if ((c.plan[1] == 1 || c.plan[1] == 2) && c.plan[6] <= 1) {
      std::vector<long long> pw(c.plan, c.plan + 8);
      pw[6] |= 2;
      v.push_back(pw);
    }
    const long long bands = band_rows(OH);
    for (long long MB : {16LL, 32LL, 64LL})
      for (long long RB : {1LL, 2LL, 4LL, 8LL, 16LL, 24LL, bands > 24 ? bands : 0LL}) {
        if (RB == 0) continue;  // the bands are one of the rows above
        if (RB > OH || MB > std::max<long long>(16, (M + 7) / 8 * 8)) continue;
        v.push_back({1, 1, (OH + RB - 1) / RB, 1, MB, RB, 3, 256});
        v.push_back({1, 2, 1, (M + MB - 1) / MB, MB, RB, 3, 256});
        v.push_back({1, 2, 1, (M + MB - 1) / MB, MB, RB, 2, 256});
      }
    if (atoi(std::getenv("SC_WINO")) >= 2) return v;  // Winograd plans only
  }
  if (level <= 0) return v;
  if (c.KH == 1 && c.KW == 1 && c.plan[1] != 3) v.push_back({1, 3, 1, 1, 0, 0, 0, 256});  // pointwise
  const long long OH = c.H + c.pt + c.pb - c.KH + 1, M = c.M;
  const long long mbs[] = {8, 16, 32, 64, 128};
  const long long bands = band_rows(OH);
  const long long rbs[] = {1, 2, 4, 8, 16, bands > 16 ? bands : 0};
  for (long long MB : mbs) {
    if (MB > std::max<long long>(8, (M + 7) / 8 * 8)) continue;
    for (long long RB : rbs) {
      if (RB == 0 || RB > OH) continue;
      const long long Q = (M + MB - 1) / MB, P = (OH + RB - 1) / RB;
      const long long items = RB * ((c.W - c.KW + 1 + 3) / 4) * (MB / 8);
      const long long thr = std::max<long long>(64, std::min<long long>(256, (items + 31) / 32 * 32));
      v.push_back({1, 2, 1, Q, MB, RB, 0, thr});          // volume, division 2
      if (level >= 2) {
        v.push_back({1, 2, 1, Q, MB, RB, 1, thr});        // prefetch, division 2
        v.push_back({1, 1, P, 1, MB, RB, 1, thr});        // prefetch, division 1
        if (thr == 256) v.push_back({1, 2, 1, Q, MB, RB, 0, 128});
      }
    }
  }
  return v;
}

// ---------------- the strided kernel (plan division 4) ----------------
static const long long kStridedPlan[8] = {1, 4, 1, 1, 0, 0, 0, 256};

// A C = 1 layer with stride s and TensorFlow SAME padding (the single-strided set's).
static Case strided_same(long long N, long long HW, long long M, long long K, long long S, int ylay) {
  Case c{};
  char buf[128];
  snprintf(buf, sizeof buf, "strided %s N%lld %lldx%lld M%lld K%lld/s%lld", ylay == 1 ? "NHWC" : "NCHW",
           N, HW, HW, M, K, S);
  c.name = buf; c.N = N; c.H = c.W = HW; c.M = M; c.KH = c.KW = K; c.sh = c.sw = S;
  const long long out = (HW + S - 1) / S, total = std::max<long long>((out - 1) * S + K - HW, 0);
  c.pt = c.pl = total / 2; c.pb = c.pr = total - total / 2;
  c.ylay = ylay; c.wlay = ylay == 1 ? 1 : 0;
  for (int i = 0; i < 8; ++i) c.plan[i] = kStridedPlan[i];
  return c;
}

// A few-channel layer (S8): C channels, NHWC (lay 1: channels-last input, HWIO filters) or
// NCHW (lay 0: planes, OIHW), SAME padding.
static Case few_same(long long N, long long C, long long HW, long long M, long long K, long long S,
                     int lay) {
  Case c = strided_same(N, HW, M, K, S, lay);
  char buf[128];
  snprintf(buf, sizeof buf, "few %s N%lld C%lld %lldx%lld M%lld K%lld/s%lld", lay == 1 ? "NHWC" : "NCHW",
           N, C, HW, HW, M, K, S);
  c.name = buf; c.C = C; c.xlay = lay;
  return c;
}

// Random strided layers: strides 1-4 per axis (not both 1), kernels 1x1-9x9 and the compiled
// 3x3/2, 5x5/2, 7x7/2, 2x2/2, 4x4/4, padding also negative, any output / filter layout, input
// pitch, M % 4 != 0. few: 2 <= C <= 7 on the few-channel instances (those and 3x3/1, S8), the
// input planes or channels last. (The C = 1 draws are the same with or without the few ones.)
static Case random_strided_case(std::mt19937_64& rng, int i, bool few = false) {
  auto U = [&](long long a, long long b) { return std::uniform_int_distribution<long long>(a, b)(rng); };
  Case c{};
  c.name = (few ? "few" : "strided") + std::to_string(i);
  static const long long fixed[][2] = {{3, 2}, {5, 2}, {7, 2}, {2, 2}, {4, 4}, {3, 1}};
  if (few) { c.C = U(2, 7); c.KH = c.KW = fixed[i % 6][0]; c.sh = c.sw = fixed[i % 6][1]; }
  else if (i % 2 == 0) { c.KH = c.KW = fixed[(i / 2) % 5][0]; c.sh = c.sw = fixed[(i / 2) % 5][1]; }
  else { c.KH = U(1, 9); c.KW = U(1, 9); c.sh = U(1, 4); c.sw = U(1, 4); if (c.sh == 1 && c.sw == 1) c.sw = 2; }
  const long long big = few ? 300 : 400;
  c.H = U(0, 3) ? U(1, 90) : U(100, big); c.W = U(0, 3) ? U(1, 90) : U(100, big);
  c.M = U(0, 1) ? 4 * U(1, 40) : U(1, 200);
  c.N = c.H * c.W * c.M > (few ? 2000000 : 4000000) ? 1 : U(1, few ? 4 : 8);
  if (U(0, 1)) { c.pt = U(-2, 4); c.pb = U(-2, 4); c.pl = U(-2, 4); c.pr = U(-2, 4); }
  if (c.H + c.pt + c.pb < c.KH) c.pb = c.KH - c.H - c.pt;
  if (c.W + c.pl + c.pr < c.KW) c.pr = c.KW - c.W - c.pl;
  c.ylay = U(0, 2) ? int(U(0, 1)) : int(U(0, 6));
  c.wlay = int(U(0, 2));
  if (few) c.xlay = int(U(0, 1));
  c.xpitch = U(0, 4) == 0 ? int(U(1, 5)) : 0;
  for (int k = 0; k < 8; ++k) c.plan[k] = kStridedPlan[k];
  return c;
}

// Launch case c twice on filled buffers (for ncu: --launch-skip 1 --launch-count 1).
static int run_twice(const Case& c) {
  Bufs b; ConvParams p = make_params(c, &b);
  ensure(&d_x, &cap_x, b.x_elems); ensure(&d_w, &cap_w, b.w_elems); ensure(&d_y, &cap_y, b.y_elems);
  fill_kernel<<<1024, 256>>>(d_x, b.x_elems, 1); fill_kernel<<<256, 256>>>(d_w, b.w_elems, 2);
  for (int r = 0; r < 2; ++r) CK(fastconv::launch_single_channel(p, d_x, d_w, d_y, 0));
  CK(cudaDeviceSynchronize());
  printf("ran %s\n", c.name.c_str());
  return 0;
}

// The single-strided benchmark set (benchmarks/layers.json), batch 1 and 32, NHWC and NCHW:
// time per launch, GB/s and % of the copy bandwidth, the copy floor, and the FMA rate reached.
// With `one` (a case's name with '_' for ' ', e.g. strided_NCHW_N32_1024x1024_M32_K7/s2), that
// case is only launched twice, for ncu (--launch-skip 1 --launch-count 1).
// few: the few-channel set instead (benchmarks/layers.json "few-channel" but the ViT stem).
static int time_strided_set(const char* one = nullptr, bool few = false) {
  static const long long strided[][5] = {{1, 224, 64, 7, 2}, {1, 224, 32, 3, 2}, {1, 512, 32, 3, 2},
                                         {1, 512, 32, 5, 2}, {1, 1024, 32, 3, 2}, {1, 1024, 32, 7, 2},
                                         {1, 256, 64, 4, 4}, {1, 128, 128, 2, 2}};
  static const long long fewset[][5] = {{3, 224, 64, 7, 2}, {3, 224, 64, 3, 1}, {3, 224, 32, 3, 2},
                                        {3, 224, 96, 4, 4}, {4, 128, 32, 3, 1}, {2, 256, 32, 5, 2}};
  std::vector<std::array<long long, 5>> set;
  if (few) for (auto& l : fewset) set.push_back({l[0], l[1], l[2], l[3], l[4]});
  else for (auto& l : strided) set.push_back({l[0], l[1], l[2], l[3], l[4]});
  const double bw = one ? 0 : copy_bw_GBps();
  if (!one) {
    printf("copy bandwidth (D2D 1 GiB, read+write): %.0f GB/s\n", bw);
    printf("%-40s %9s %7s %6s %9s %8s\n", "case", "us", "GB/s", "%copy", "floor_us", "TFLOP/s");
  }
  for (long long N : {1LL, 32LL})
    for (int lay : {1, 0})
      for (auto& l : set) {
        const Case c = few ? few_same(N, l[0], l[1], l[2], l[3], l[4], lay)
                           : strided_same(N, l[1], l[2], l[3], l[4], lay);
        Bufs b; ConvParams p = make_params(c, &b);
        if (one) {
          std::string u = c.name;
          std::replace(u.begin(), u.end(), ' ', '_');
          if (u == one) return run_twice(c);
          continue;
        }
        const TimeRes t = time_case(c);
        const double floor_us = 4.0 * (b.x_elems + b.w_elems + p.out_elems()) / (bw * 1e3);
        const double tflops = 2.0 * p.out_elems() * c.C * c.KH * c.KW / (t.us * 1e-6) / 1e12;
        printf("%-40s %9.2f %7.0f %5.1f%% %9.2f %8.1f\n", c.name.c_str(), t.us, t.gbps, 100 * t.gbps / bw,
               floor_us, tflops);
      }
  if (one) printf("no strided case %s\n", one);
  return one ? 1 : 0;
}

int main(int argc, char** argv) {
  bool small = false, do_check = true, do_time = true, strided_time = false, few_time = false;
  const char* plans_path = nullptr; const char* one = nullptr; const char* strided_one = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--small")) { small = true; do_time = false; }
    if (!strcmp(argv[i], "--check")) do_time = false;
    if (!strcmp(argv[i], "--time")) do_check = false;
    if (!strcmp(argv[i], "--plans") && i + 1 < argc) plans_path = argv[++i];
    if (!strcmp(argv[i], "--one") && i + 1 < argc) one = argv[++i];
    if (!strcmp(argv[i], "--strided")) { strided_time = true; do_check = do_time = false; }
    if (!strcmp(argv[i], "--few")) { few_time = true; do_check = do_time = false; }
    if (!strcmp(argv[i], "--strided-one") && i + 1 < argc) strided_one = argv[++i];
  }
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  std::mt19937_64 rng(12345);
  std::vector<Case> planned;
  if (plans_path) planned = read_plans(plans_path);
  if (one) {  // one planned case, launched twice (ncu: --launch-skip 1 --launch-count 1)
    for (auto& c : planned)
      if (c.name == one) return run_twice(c);
    printf("no planned case %s\n", one);
    return 1;
  }

  if (small) {
    long long pl[8] = {1, 1, 2, 0, 8, 0, 1, 128};
    Case a = paper_case(2, 28, 20, 3, 0, pl); a.pt = a.pb = 1; a.pl = a.pr = 0; a.name = "small nchw div1 prefetch OW26";
    long long p2[8] = {1, 2, 0, 2, 0, 3, 1, 64};
    Case b = paper_case(3, 19, 37, 5, 1, p2); b.pt = -1; b.pl = 2; b.pb = 3; b.pr = 0; b.name = "small nhwc div2 prefetch";
    long long p3[8] = {1, 2, 0, 1, 0, 4, 0, 96};
    Case d = paper_case(1, 23, 9, 4, 3, p3); d.KW = 2; d.wlay = 2; d.xpitch = 3; d.name = "small generic volume";
    long long p4[8] = {1, 3, 1, 1, 0, 0, 0, 256};
    Case e = paper_case(2, 21, 12, 1, 1, p4); e.pt = 1; e.pl = -1; e.pb = 0; e.pr = 2; e.name = "small pointwise nhwc";
    Case f = paper_case(3, 12, 7, 1, 0, p4); f.name = "small pointwise nchw";
    Case g = paper_case(1, 9, 5, 1, 4, p4); g.xpitch = 2; g.pt = 2; g.name = "small pointwise generic";
    Case h = strided_same(2, 37, 20, 7, 2, 1); h.name = "small strided nhwc 7x7/2";
    Case k = strided_same(1, 30, 13, 4, 4, 0); k.sw = 3; k.KW = 5; k.xpitch = 1; k.wlay = 2;
    k.name = "small strided nchw generic";
    Case fa = few_same(2, 3, 29, 20, 7, 2, 1); fa.name = "small few nhwc C3 7x7/2";
    Case fb = few_same(1, 4, 17, 9, 3, 1, 0); fb.xpitch = 2; fb.wlay = 2; fb.ylay = 3;
    fb.name = "small few nchw C4 3x3/1 pitched";
    long long p5[8] = {1, 5, 1, 1, 16, 4, 0, 256};
    Case ma = paper_case(2, 21, 20, 5, 1, p5); ma.pt = 2; ma.pb = 1; ma.pl = -1; ma.pr = 2; ma.name = "small mma nhwc 5x5";
    long long p6[8] = {1, 5, 1, 1, 32, 3, 0, 256};
    Case mb = paper_case(3, 17, 37, 3, 0, p6); mb.KW = 4; mb.wlay = 2; mb.xpitch = 1; mb.name = "small mma nchw 3x4 tile";
    // row-Winograd F(4, 5) products (plan[6] & 2): a padded NHWC volume tile with a partial
    // filter group, and NCHW division-1 prefetch tiles over a partial last band
    long long p7[8] = {1, 2, 1, 1, 32, 4, 2, 256};
    Case wa = paper_case(2, 23, 20, 5, 1, p7); wa.pt = 2; wa.pb = 1; wa.pl = -1; wa.pr = 2; wa.name = "small wino nhwc 5x5";
    long long p8[8] = {1, 1, 3, 1, 32, 8, 3, 256};
    Case wb = paper_case(3, 21, 37, 5, 0, p8); wb.xpitch = 1; wb.name = "small wino nchw prefetch";
    // flat chunks in sector pairs (flat_pairs) with one filter parity per thread: 26 x 26 planes
    // (every other one starts mid-sector), tiles of 13 chunks, a partial second filter group
    long long p11[8] = {1, 2, 1, 2, 16, 2, 0, 128};
    Case fp = paper_case(2, 28, 20, 3, 0, p11); fp.name = "small nchw flat pairs";
    int bad = 0;
    for (auto* c : {&a, &b, &d, &e, &f, &g, &h, &k, &fa, &fb, &ma, &mb, &wa, &wb, &fp}) bad += !check_case(*c, rng, true).ok;
#ifdef FASTCONV_HAVE_WGMMA
    // the wgmma kernel (division 6; built with cuda/single_channel_wgmma.cu and
    // -DFASTCONV_HAVE_WGMMA): a padded NHWC band with staggered warpgroups, and the flat copy of
    // an unpadded 3x3 map with 3 warpgroups starting together; each with A from shared memory
    // and from registers
    long long p9[8] = {1, 6, 1, 1, 32, 2, 1, 256};
    Case ta = paper_case(2, 21, 32, 5, 1, p9); ta.pt = 2; ta.pb = 1; ta.pl = -1; ta.pr = 2; ta.name = "small wgmma nhwc 5x5";
    long long p10[8] = {1, 6, 1, 1, 32, 3, 0, 384};
    Case tb = paper_case(3, 20, 64, 3, 1, p10); tb.name = "small wgmma nhwc 3x3 flat";
    Case tc = ta, td = tb;  // the same with A from registers (plan[6] & 2)
    tc.plan[6] = 3; tc.name += " rs";
    td.plan[6] = 2; td.name += " rs";
    // NCHW outputs (tz_planes): the padded 5x5 band with A from registers (OW = 20), and the
    // flat copy of an unpadded 5x5 map (OW = 16), 3 warpgroups
    Case te = tc;
    te.ylay = 0; te.pr = 4; te.name = "small wgmma nchw 5x5 rs";
    Case tf = paper_case(3, 20, 64, 5, 0, p10); tf.name = "small wgmma nchw 5x5 flat";
    // both with the aligned line (plan[6] & 4): the padded band, and the flat copy with a zero
    // float4 after each row
    Case tg = te, th = tf;
    tg.plan[6] = 7; tg.name += " aligned";
    th.plan[6] = 5; th.name += " aligned";
    // dense segments (plan[6] & 8): the padded NHWC band (OW = 18, a partial last group), the
    // padded NCHW band, the flat copy of the unpadded NCHW map
    Case ti = tc, tj = te, tk = tf;
    ti.plan[6] = 11; ti.name += " dense";
    tj.plan[6] = 11; tj.name += " dense";
    tk.plan[6] = 10; tk.name = "small wgmma nchw 5x5 flat dense";
    for (auto* c : {&ta, &tb, &tc, &td, &te, &tf, &tg, &th, &ti, &tj, &tk}) bad += !check_case(*c, rng, true).ok;
#endif
    printf("small: %s\n", bad ? "FAIL" : "all ok");
    return bad ? 1 : 0;
  }

  if (strided_one) return time_strided_set(strided_one);
  if (strided_time) return time_strided_set();
  if (few_time) return time_strided_set(nullptr, true);
  int nfail = 0, nrun = 0; double maxrel = 0; bool alldet = true;
  if (do_check) {
    std::vector<Case> cases;
    // The paper set (batch 1 and 32, layouts `lays`, kernel sizes `Ks`) under the plan
    // plan_of(N, map, K, pl) fills, named "tag ..."; plan_of returns false to skip a layer.
    auto add_paper_set = [&](const char* tag, std::initializer_list<int> lays,
                             std::initializer_list<long long> Ks, auto plan_of) {
      for (long long N : {1LL, 32LL})
        for (int lay : lays)
          for (auto& mp : kMaps)
            for (long long K : Ks) {
              long long pl[8];
              if (!plan_of(N, mp, K, pl)) continue;
              Case c = paper_case(N, mp[0], mp[1], K, lay, pl);
              c.name = std::string(tag) + " " + c.name;
              cases.push_back(c);
            }
    };
    for (long long N : {1LL, 32LL})
      for (int lay : {0, 1})
        for (auto& mp : kMaps)
          for (long long K : {1LL, 3LL, 5LL}) cases.push_back(paper_case(N, mp[0], mp[1], K, lay, nullptr));
    // a few with SAME padding and K = 7
    for (int lay : {0, 1}) { Case c = paper_case(2, 224, 64, 7, lay, nullptr); c.pt = c.pb = c.pl = c.pr = 3; cases.push_back(c); }
    for (int i = 0; i < 150; ++i) cases.push_back(random_case(rng, i));
    // 1x1 layers on the pointwise kernel (plan division 3): any layout, padding (also negative),
    // filter layout and input pitch; float4 along m, float4 along ow and scalar store orders
    for (int i = 0; i < 80; ++i) {
      auto U = [&](long long a, long long b) { return std::uniform_int_distribution<long long>(a, b)(rng); };
      Case c{};
      c.name = "pointwise" + std::to_string(i);
      c.KH = c.KW = 1;
      c.H = U(0, 3) ? U(1, 80) : U(100, 600); c.W = U(0, 3) ? U(1, 80) : U(100, 600);
      c.M = U(0, 1) ? 4 * U(1, 40) : U(1, 300);
      c.N = c.H * c.W * c.M > 2000000 ? 1 : U(1, 64);
      if (U(0, 1)) { c.pt = U(-2, 3); c.pb = U(-2, 3); c.pl = U(-2, 3); c.pr = U(-2, 3); }
      if (c.H + c.pt + c.pb < 1) c.pb = 1 - c.H - c.pt;
      if (c.W + c.pl + c.pr < 1) c.pr = 1 - c.W - c.pl;
      c.ylay = U(0, 2) ? int(U(0, 1)) : int(U(0, 6));
      c.wlay = int(U(0, 2));
      c.xpitch = U(0, 4) == 0 ? int(U(1, 5)) : 0;
      const long long pl[8] = {1, 3, 1, 1, 0, 0, 0, 256};
      for (int k = 0; k < 8; ++k) c.plan[k] = pl[k];
      cases.push_back(c);
    }
    // NCHW rows of OW = 2 mod 4 outputs (flat chunks in the kernel where RB x OW is a multiple
    // of 4 and OH even; the general path otherwise): odd and even RB, both methods, partial tiles
    for (int i = 0; i < 80; ++i) {
      auto U = [&](long long a, long long b) { return std::uniform_int_distribution<long long>(a, b)(rng); };
      const long long K = (long long[]){1, 3, 5, 7}[U(0, 3)];
      Case c{};
      c.name = "ow2mod4_" + std::to_string(i);
      c.KH = c.KW = K; c.ylay = 0; c.wlay = int(U(0, 2));
      c.N = U(1, 5); c.M = U(0, 2) ? U(1, 40) : U(41, 200);
      const long long OW = 4 * U(0, 40) + 2, OH = U(1, 70);
      c.pl = U(0, (K - 1) / 2); c.pr = (K - 1) - c.pl; c.pt = U(0, (K - 1) / 2); c.pb = (K - 1) - c.pt;
      c.W = OW + K - 1 - c.pl - c.pr; c.H = OH + K - 1 - c.pt - c.pb;
      if (c.W < 1 || c.H < 1) { c.pl = c.pr = c.pt = c.pb = 0; c.W = OW + K - 1; c.H = OH + K - 1; }
      const long long RB = U(1, 20), MB = 8 * U(1, 8);
      if (U(0, 1)) { const long long pl[8] = {1, 2, 1, (c.M + MB - 1) / MB, MB, RB, U(0, 1), 32 * U(2, 8)}; for (int k = 0; k < 8; ++k) c.plan[k] = pl[k]; }
      else { const long long pl[8] = {1, 1, (OH + RB - 1) / RB, 1, MB, RB, 1, 32 * U(2, 8)}; for (int k = 0; k < 8; ++k) c.plan[k] = pl[k]; }
      cases.push_back(c);
    }
    for (int i = 0; i < 100; ++i) cases.push_back(random_strided_case(rng, i));
    // the tensor-core kernel (division 5): the paper set, and random layers of 2 to 64 taps, its
    // own tile or an explicit one
    add_paper_set("mma", {0, 1}, {3, 5}, [](long long N, auto& mp, long long, long long* pl) {
      const long long p[8] = {1, 5, 1, 1, mp[1] >= 64 ? 64 : 32, N == 1 ? 2 : 16, 0, 256};
      std::copy(p, p + 8, pl);
      return !(N == 32 && mp[0] == 1024);
    });
    for (int i = 0; i < 150; ++i) {
      auto U = [&](long long a, long long b) { return std::uniform_int_distribution<long long>(a, b)(rng); };
      Case c = random_case(rng, i);
      c.name = "mma rand" + std::to_string(i);
      while (c.KH * c.KW > 64 || c.KH * c.KW < 2) { c.KH = U(1, 9); c.KW = U(1, 9); }
      auto fix = [&](long long& n, long long& lo, long long& hi, long long K) {
        if (n + lo + hi - K + 1 < 1) hi = K - n - lo + U(0, 2);
      };
      fix(c.H, c.pt, c.pb, c.KH); fix(c.W, c.pl, c.pr, c.KW);
      while (c.W > 1 && !mma_band_fits(1, c.KH, c.W + c.pl + c.pr)) c.W /= 2;
      fix(c.W, c.pl, c.pr, c.KW);
      const long long OH = c.H + c.pt + c.pb - c.KH + 1, BW = c.W + c.pl + c.pr;
      const long long pl[8] = {1, 5, 1, 1, (long long[]){16, 32, 64, 128}[U(0, 3)],
                               U(1, std::min<long long>(OH, 40)), 0, 256};
      for (int k = 0; k < 8; ++k) c.plan[k] = pl[k];
      while (c.plan[5] > 1 && !mma_band_fits(c.plan[5], c.KH, BW)) c.plan[5] /= 2;
      cases.push_back(c);
    }
    // row-Winograd products (plan[6] & 2, 5x5): the paper set, and random 5x5 layers with
    // random tiles of either division, prefetch or volume
    add_paper_set("f45", {0, 1}, {5}, [](long long N, auto& mp, long long, long long* pl) {
      const long long OH = mp[0] - 4, RB = N == 1 ? 2 : 8;
      const long long p[8] = {1, 1, (OH + RB - 1) / RB, 1, 32, RB, 3, 256};
      std::copy(p, p + 8, pl);
      return !(N == 32 && mp[0] == 1024);
    });
    for (int i = 0; i < 150; ++i) {
      auto U = [&](long long a, long long b) { return std::uniform_int_distribution<long long>(a, b)(rng); };
      Case c = random_case(rng, i);
      c.name = "f45 rand" + std::to_string(i);
      c.KH = c.KW = 5;
      if (c.H + c.pt + c.pb < 5) c.pb = 5 - c.H - c.pt + U(0, 2);
      if (c.W + c.pl + c.pr < 5) c.pr = 5 - c.W - c.pl + U(0, 2);
      const long long OH = c.H + c.pt + c.pb - 4, RB = U(1, std::min<long long>(OH, 20));
      const long long MB = 8 * U(1, 16), thr = 32 * U(2, 8);
      if (U(0, 1)) { const long long pl[8] = {1, 2, 1, (c.M + MB - 1) / MB, MB, RB, 2 + U(0, 1), thr}; for (int k = 0; k < 8; ++k) c.plan[k] = pl[k]; }
      else { const long long pl[8] = {1, 1, (OH + RB - 1) / RB, 1, MB, RB, 3, thr}; for (int k = 0; k < 8; ++k) c.plan[k] = pl[k]; }
      cases.push_back(c);
    }
#ifdef FASTCONV_HAVE_WGMMA
    // the wgmma kernel (division 6): the paper's NHWC K3 / K5 layers, and random layers (KH, KW
    // <= 5, M % 32 == 0) with outputs whose filters are contiguous, any launch it takes
    add_paper_set("wgmma", {1}, {3, 5}, [](long long N, auto& mp, long long, long long* pl) {
      const long long p[8] = {1, 6, 1, 1, 32, 8, 3, 256};
      std::copy(p, p + 8, pl);
      return !(N == 32 && mp[0] >= 512);
    });
    for (int i = 0; i < 80; ++i) cases.push_back(random_wgmma_case(rng, i, false));
    // NCHW outputs (tz_planes: OW % 4 == 0): the paper's K5 layers and 40 random layers, from
    // their own generator so that the cases above and below stay as they were
    add_paper_set("wgmma", {0}, {5}, [](long long N, auto& mp, long long, long long* pl) {
      const long long p[8] = {1, 6, 1, 1, 32, 8, 3, 256};
      std::copy(p, p + 8, pl);
      return !(N == 32 && mp[0] >= 512) && mp[0] % 4 == 0;
    });
    std::mt19937_64 rp(4242);
    for (int i = 0; i < 40; ++i) cases.push_back(random_wgmma_case(rp, i, true));
    // the same kinds with the aligned line (plan[6] & 4): the paper's K5 layers, 40 random layers
    add_paper_set("wgmma aligned", {0}, {5}, [](long long N, auto& mp, long long, long long* pl) {
      const long long p[8] = {1, 6, 1, 1, 32, 8, 7, 256};
      std::copy(p, p + 8, pl);
      return !(N == 32 && mp[0] >= 512) && mp[0] % 4 == 0;
    });
    std::mt19937_64 ra(4343);
    for (int i = 0; i < 40; ++i) {
      Case c = random_wgmma_case(ra, i, true);
      c.plan[6] |= 4; c.name += " aligned";
      cases.push_back(c);
    }
    // dense segments (plan[6] & 8, A from registers): the paper's K3 / K5 layers in both
    // layouts, 40 random layers of each kind of output (NHWC ones with OW % 4 != 0 among them)
    auto dense_plan = [](long long N, auto& mp, long long, long long* pl) {
      const long long p[8] = {1, 6, 1, 1, 32, 8, 11, 256};
      std::copy(p, p + 8, pl);
      return !(N == 32 && mp[0] >= 512);
    };
    add_paper_set("wgmma dense", {1}, {3, 5}, dense_plan);
    add_paper_set("wgmma dense", {0}, {5}, dense_plan);  // NCHW: OW % 4 == 0
    std::mt19937_64 rd(4444);
    for (int i = 0; i < 80; ++i) {
      Case c = random_wgmma_case(rd, i, i % 2 == 1);
      c.plan[6] = (c.plan[6] & 1) | 10; c.name += " dense";
      cases.push_back(c);
    }
#endif
    // many slabs of 128 filters: a one-wave grid shared by 24 slabs, and waves of 4-turn blocks
    Case sa = strided_same(4, 64, 3000, 7, 2, 0); sa.name = "strided 24 slabs nchw 7x7/2";
    Case sb = strided_same(2, 20, 20000, 3, 2, 1); sb.name = "strided 157 slabs nhwc 3x3/2";
    cases.push_back(sa); cases.push_back(sb);
    for (int i = 0; i < 60; ++i) cases.push_back(random_strided_case(rng, i, true));
    int nplan_bad = 0;
    for (auto& c : planned) { cases.push_back(c); nplan_bad += !launch_is_plan(c, prop.multiProcessorCount); }
    if (plans_path)
      printf("PLANNED: %zu planned cases from %s, %d whose launch differs from the plan\n", planned.size(),
             plans_path, nplan_bad);
    nfail += nplan_bad;
    for (auto& c : cases) {
      CheckResult r = check_case(c, rng, false);
      ++nrun; nfail += !r.ok; maxrel = std::max(maxrel, r.rel); alldet = alldet && r.det;
    }
    printf("CHECK: %d configs, %d failed, max rel err %.3e, deterministic %s\n", nrun, nfail, maxrel, alldet ? "yes" : "NO");
  }
  if (do_time && plans_path) {
    const double bw = copy_bw_GBps();
    printf("copy bandwidth (D2D 1 GiB, read+write): %.0f GB/s\n", bw);
    const char* lv = std::getenv("SC_VARIANTS");
    const int level = lv ? atoi(lv) : 1;
    struct PRow { std::string name; std::string plan; double us, gbps, floor_us; std::string best; double best_us, store_us; };
    std::vector<PRow> rows;
    const char* only = std::getenv("SC_CASES");  // substrings of the names to time, ','-separated
    for (auto& c : planned) {
      if (c.name.rfind("paper_", 0) != 0) continue;
      if (only) {
        bool hit = false;
        std::string list = only;
        for (size_t a = 0, b; a <= list.size(); a = b + 1) {
          b = list.find(',', a); if (b == std::string::npos) b = list.size();
          if (b > a && c.name.find(list.substr(a, b - a)) != std::string::npos) hit = true;
        }
        if (!hit) continue;
      }
      if (std::getenv("SC_SAME")) {  // the layer with SAME padding instead (KH, KW odd)
        c.pt = c.pb = (c.KH - 1) / 2;
        c.pl = c.pr = (c.KW - 1) / 2;
        c.name += "_SAME";  // one word: notes/best_by_build.py splits at spaces
      }
      TimeBufs tb; tb.init(c);
      Bufs bb; ConvParams pp = make_params(c, &bb);
      PRow row{};
      row.name = c.name;
      char buf[96]; plan_str(c.plan, buf, sizeof buf); row.plan = buf;
      TimeRes t = time_plan(c, tb, 25);
      row.us = t.us; row.gbps = t.gbps; row.best = "planned"; row.best_us = t.us;
      row.floor_us = 4.0 * (bb.x_elems + bb.w_elems + pp.out_elems()) / (bw * 1e3);
      printf("  %-34s planned %-26s %9.2f us %6.0f GB/s %5.1f%%\n", c.name.c_str(), buf, t.us, t.gbps, 100 * t.gbps / bw);
      row.store_us = std::min(time_store_only(tb, pp.out_elems(), 0, 25),
                              time_store_only(tb, pp.out_elems(), 4 * prop.multiProcessorCount, 25));
      for (auto& v : variants(c, level)) {
        Case cv = c;
        for (int i = 0; i < 8; ++i) cv.plan[i] = v[i];
        long long L[10]; Bufs b2; ConvParams pv = make_params(cv, &b2);
        if (fastconv::single_channel_launch_config(pv, L) != cudaSuccess) continue;  // a tile that does not fit
        if (L[0] != 1) continue;  // not a plan the kernel runs exactly
        TimeRes tv = time_plan(cv, tb, 11);
        plan_str(cv.plan, buf, sizeof buf);
        printf("  %-34s variant %-26s %9.2f us %6.0f GB/s %5.1f%%\n", c.name.c_str(), buf, tv.us, tv.gbps, 100 * tv.gbps / bw);
        if (tv.us < row.best_us) { row.best_us = tv.us; row.best = buf; }
      }
      tb.release();
      rows.push_back(row);
    }
    printf("\nPLANNED TABLE (%s, copy %.0f GB/s): the planner's launch per case; store_us: a kernel that only\n"
           "writes the output (best of one float4 per thread / a 4 x SMs grid-stride loop)\n"
           "%-34s %-26s %9s %7s %6s %9s %9s %9s %6s  %s\n",
           prop.name, bw, "case", "plan [div,P,Q,MB,RB,pf,thr]", "us", "GB/s", "%copy", "floor_us", "store_us",
           "best_us", "%store", "best variant");
    for (auto& r : rows)
      printf("%-34s %-26s %9.2f %7.0f %5.1f%% %9.2f %9.2f %9.2f %5.1f%%  %s\n", r.name.c_str(), r.plan.c_str(), r.us,
             r.gbps, 100 * r.gbps / bw, r.floor_us, r.store_us, r.best_us, 100 * r.store_us / r.us, r.best.c_str());
  } else if (do_time) {
    const double bw = copy_bw_GBps();
    printf("copy bandwidth (D2D 1 GiB, read+write): %.0f GB/s\n", bw);
    struct Row { std::string name; double us, gbps, floor_us; std::string best; double auto_us; };
    std::vector<Row> rows;
    for (long long N : {1LL, 32LL})
      for (int lay : {1, 0})
        for (auto& mp : kMaps)
          for (long long K : {1LL, 3LL, 5LL}) {
            const long long HW = mp[0], M = mp[1];
            const long long OH = HW - K + 1;
            // variants: auto (plan zeros), division 1 and 2 with a few sizes
            std::vector<std::vector<long long>> plans = {
                {1, 0, 0, 0, 0, 0, 0, 256},
                {1, 1, OH, 0, 32, 0, 1, 256},
                {1, 1, OH, 0, 64, 0, 1, 256},
                {1, 1, std::max<long long>(1, OH / 4), 0, 32, 0, 1, 256},
                {1, 2, 0, 1, 0, 2, 1, 256},
                {1, 2, 0, 1, 0, 8, 1, 256},
                {1, 2, 0, 1, 0, 4, 0, 256},
                {1, 2, 0, 1, 0, 8, 0, 256},
            };
            if (std::getenv("SC_QUICK")) plans.resize(1);
            Row row{};
            row.us = 1e30;
            for (size_t v = 0; v < plans.size(); ++v) {
              Case c = paper_case(N, HW, M, K, lay, plans[v].data());
              TimeRes t = time_case(c);
              printf("  %-36s plan=[%lld,%lld,%lld,%lld,%lld,%lld,%lld] %9.2f us %7.0f GB/s %5.1f%%\n", c.name.c_str(),
                     plans[v][1], plans[v][2], plans[v][3], plans[v][4], plans[v][5], plans[v][6], plans[v][7], t.us, t.gbps, 100 * t.gbps / bw);
              if (v == 0) row.auto_us = t.us;
              if (t.us < row.us) {
                row.us = t.us; row.gbps = t.gbps; row.name = c.name;
                char b2[64]; snprintf(b2, sizeof b2, "[%lld,%lld,%lld,%lld,%lld,%lld]", plans[v][1], plans[v][2], plans[v][3], plans[v][4], plans[v][5], plans[v][6]);
                row.best = b2;
              }
            }
            Bufs bb; ConvParams pp = make_params(paper_case(N, HW, M, K, lay, nullptr), &bb);
            row.floor_us = 4.0 * (bb.x_elems + bb.w_elems + pp.out_elems()) / (bw * 1e3);
            rows.push_back(row);
          }
    printf("\nTABLE (%s, copy %.0f GB/s)\n%-36s %9s %9s %7s %6s %9s  %s\n", prop.name, bw, "case", "best_us", "auto_us", "GB/s", "%copy", "floor_us", "best plan");
    for (auto& r : rows)
      printf("%-36s %9.2f %9.2f %7.0f %5.1f%% %9.2f  %s\n", r.name.c_str(), r.us, r.auto_us, r.gbps, 100 * r.gbps / bw, r.floor_us, r.best.c_str());
  }
  if (do_check) printf("CHECK: %d configs, %d failed, max rel err %.3e, deterministic %s\n", nrun, nfail, maxrel, alldet ? "yes" : "NO");
  return nfail ? 1 : 0;
}
