// Standalone test + timing driver for cuda/multi_channel.cu (launch_multi_channel).
// Build: nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -o /tmp/drv \
//          tests/cuda/multi_channel_driver.cu cuda/multi_channel.cu
// Usage: drv [--small] [--no-time] [--random N] [--seed S] [--plans FILE] [--no-ab]
//            [--variants nhwc|nchw|both|none]
//   --plans : lines "N C HW M K nhwc plan0..plan7" (the Python planner's plans for the H200
//             preset, written by benchmarks/notes' recipe); benchmark cases use them, others
//             (and cases not listed) the kernel's automatic configuration.
//   --small : three small representative cases only (for compute-sanitizer), no timing.
//   --no-ab : skip the NHWC A/B of the 4-byte loaders; --variants: layouts of the tiling
//             variants (default nhwc).
//   --one "N C HW M K XL/WL[/YL]" : time one VALID layer only (e.g. "1 512 14 512 3 NCHW/OIHW";
//             output layout YL, default the input layout; plan from --plans when listed, else automatic),
//             no correctness pass: for ncu and quick A/B runs.  Repeatable.  With --no-time
//             each is checked instead of timed (one launch pair: for compute-sanitizer).
//   --stage F : OR the staging flags F (2: OIHW filters -> HWIO; cuda/filter_staging.cuh)
//             into every layer case's plan[7] (random cases draw their own flags).
//   DRV_STAGE_ONLY=1 with --one: also time the staging copy alone.
//   DRV_NO_DIRECT=1: output tiles always through shared memory (A/B of the register stores).
//   DRV_TC=0 / 1: the 3xTF32 tensor-core instances never / wherever they exist (default: as
//   plan[7] & 4 asks: the layer cases as planned, the --random cases draw it).
//   DRV_PW=0 / 1: the streamed 1x1 kernel (plan[7] & 16, cuda/multi_channel_pointwise.cu)
//   never / on every layer case it supports (default: as planned; --random cases draw it, and
//   one in six is a 1x1 shape it supports).  DRV_PWV=i: its variant i (kVariants) everywhere.
//   DRV_RO=0 / 1: the OIHW reduction order (plan[7] & 32) never (the layer cases then stage
//   their OIHW filters: plan[7] | 2) / wherever it can run (default: as planned).
// Checks: random inputs (never zero), NaN-poisoned output, CPU double reference (full for small
// cases, ~5000 sampled points for large ones), rel L2 <= 1e-5, every element written, two runs
// bit-identical.  Timing: CUDA graph of R launches over R distinct buffer sets (L2 rotation),
// median over 25 replays, vs a measured FFMA ceiling.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../cuda/kernels.h"
#include "../../cuda/filter_staging.cuh"

namespace fastconv {
int multi_channel_describe(const ConvParams& p, char* buf, int len);
void multi_channel_set_vector(int on);
void multi_channel_set_direct_store(int on);
void multi_channel_set_tensor_cores(int mode);
void multi_channel_set_pointwise(int on);
void multi_channel_pointwise_variant(int v);
void multi_channel_set_oihw_order(int on);
}
using fastconv::ConvParams;

#define CK(x)                                                                               \
  do {                                                                                      \
    cudaError_t e_ = (x);                                                                   \
    if (e_ != cudaSuccess) {                                                                \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__,      \
              __LINE__, #x);                                                                \
      exit(2);                                                                              \
    }                                                                                       \
  } while (0)

struct Case {
  int N, C, H, W, M, KH, KW;
  int pt, pl, pb, pr;  // padding (may be negative)
  int sh = 1, sw = 1;  // strides
  bool x_nhwc, w_hwio, y_nhwc;
  int64_t plan[8];
};

static ConvParams make_params(const Case& c) {
  ConvParams p{};
  p.N = c.N; p.C = c.C; p.H = c.H; p.W = c.W; p.M = c.M; p.KH = c.KH; p.KW = c.KW;
  p.OH = (c.H + c.pt + c.pb - c.KH) / c.sh + 1;
  p.OW = (c.W + c.pl + c.pr - c.KW) / c.sw + 1;
  p.stride_h = c.sh; p.stride_w = c.sw;
  p.pad_top = c.pt; p.pad_left = c.pl;
  if (c.x_nhwc) { p.x_sc = 1; p.x_sw = c.C; p.x_sh = (int64_t)c.W * c.C; p.x_sn = (int64_t)c.H * c.W * c.C; }
  else { p.x_sw = 1; p.x_sh = c.W; p.x_sc = (int64_t)c.H * c.W; p.x_sn = (int64_t)c.C * c.H * c.W; }
  if (c.w_hwio) { p.w_so = 1; p.w_si = c.M; p.w_sw = (int64_t)c.C * c.M; p.w_sh = (int64_t)c.KW * c.C * c.M; }
  else { p.w_sw = 1; p.w_sh = c.KW; p.w_si = (int64_t)c.KH * c.KW; p.w_so = (int64_t)c.C * c.KH * c.KW; }
  if (c.y_nhwc) { p.y_sc = 1; p.y_sw = c.M; p.y_sh = p.OW * c.M; p.y_sn = p.OH * p.OW * c.M; }
  else { p.y_sw = 1; p.y_sh = p.OW; p.y_sc = p.OH * p.OW; p.y_sn = (int64_t)c.M * p.OH * p.OW; }
  for (int i = 0; i < 8; ++i) p.plan[i] = c.plan[i];
  return p;
}

static double ref_point(const ConvParams& p, const std::vector<float>& x, const std::vector<float>& w,
                        int64_t n, int64_t m, int64_t oh, int64_t ow) {
  double s = 0;
  for (int64_t c = 0; c < p.C; ++c)
    for (int64_t kh = 0; kh < p.KH; ++kh) {
      int64_t ih = oh * p.stride_h + kh - p.pad_top;
      if (ih < 0 || ih >= p.H) continue;
      for (int64_t kw = 0; kw < p.KW; ++kw) {
        int64_t iw = ow * p.stride_w + kw - p.pad_left;
        if (iw < 0 || iw >= p.W) continue;
        s += (double)x[n * p.x_sn + c * p.x_sc + ih * p.x_sh + iw * p.x_sw] *
             (double)w[m * p.w_so + c * p.w_si + kh * p.w_sh + kw * p.w_sw];
      }
    }
  return s;
}

static void fill(std::vector<float>& v, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> d(0.05f, 1.0f);
  std::bernoulli_distribution sgn(0.5);
  for (auto& f : v) f = sgn(rng) ? d(rng) : -d(rng);  // never zero
}

struct CheckResult {
  double rel;
  bool all_written, bit_identical, ok;
  std::string desc;
};

static CheckResult check_case(const Case& cs, std::mt19937_64& rng, bool force_full = false) {
  ConvParams p = make_params(cs);
  size_t nx = (size_t)p.N * p.C * p.H * p.W, nw = (size_t)p.M * p.C * p.KH * p.KW,
         ny = (size_t)p.N * p.M * p.OH * p.OW;
  std::vector<float> hx(nx), hw(nw), hy(ny), hy2(ny);
  fill(hx, rng);
  fill(hw, rng);
  float *dx, *dw, *dy;
  CK(cudaMalloc(&dx, nx * 4 + 16));
  CK(cudaMalloc(&dw, nw * 4 + 16));
  CK(cudaMalloc(&dy, ny * 4 + 16));
  const int64_t nws = fastconv::multi_channel_workspace_elems(p);
  float* dws = nullptr;
  if (nws) CK(cudaMalloc(&dws, nws * 4));
  CK(cudaMemcpy(dx, hx.data(), nx * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dw, hw.data(), nw * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(dy, 0xff, ny * 4));  // NaN poison
  CK(fastconv::launch_multi_channel(p, dx, dw, dy, dws, nws, 0));
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(hy.data(), dy, ny * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemset(dy, 0xff, ny * 4));
  CK(fastconv::launch_multi_channel(p, dx, dw, dy, dws, nws, 0));
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(hy2.data(), dy, ny * 4, cudaMemcpyDeviceToHost));
  CheckResult r{};
  r.all_written = true;
  for (size_t i = 0; i < ny; ++i)
    if (std::isnan(hy[i])) { r.all_written = false; break; }
  r.bit_identical = memcmp(hy.data(), hy2.data(), ny * 4) == 0;
  double cost = (double)ny * p.C * p.KH * p.KW;
  double num = 0, den = 0;
  auto acc = [&](int64_t n, int64_t m, int64_t oh, int64_t ow) {
    double ref = ref_point(p, hx, hw, n, m, oh, ow);
    double got = hy[n * p.y_sn + m * p.y_sc + oh * p.y_sh + ow * p.y_sw];
    num += (got - ref) * (got - ref);
    den += ref * ref;
  };
  if (force_full || cost < 3e7) {
    for (int64_t n = 0; n < p.N; ++n)
      for (int64_t m = 0; m < p.M; ++m)
        for (int64_t oh = 0; oh < p.OH; ++oh)
          for (int64_t ow = 0; ow < p.OW; ++ow) acc(n, m, oh, ow);
  } else {
    std::uniform_int_distribution<int64_t> dn(0, p.N - 1), dm(0, p.M - 1), dh(0, p.OH - 1),
        dwd(0, p.OW - 1);
    for (int i = 0; i < 5000; ++i) acc(dn(rng), dm(rng), dh(rng), dwd(rng));
    // plus the corners of the map (padding edges) for a few filters
    for (int64_t m : {(int64_t)0, p.M - 1})
      for (int64_t oh : {(int64_t)0, p.OH - 1})
        for (int64_t ow : {(int64_t)0, p.OW - 1}) acc(p.N - 1, m, oh, ow);
  }
  r.rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  r.ok = r.all_written && r.bit_identical && r.rel <= 1e-5 && !std::isnan(r.rel);
  char buf[64];
  fastconv::multi_channel_describe(p, buf, sizeof buf);
  r.desc = buf;
  CK(cudaFree(dx));
  CK(cudaFree(dw));
  CK(cudaFree(dy));
  if (dws) CK(cudaFree(dws));
  return r;
}

// ---------------------------------------------------------------- FFMA ceiling
__global__ void ffma_peak(float* out, int iters, float a, float b) {
  float r[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) r[i] = threadIdx.x * 1e-3f + i;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < 8; ++u)
#pragma unroll
      for (int i = 0; i < 16; ++i) r[i] = fmaf(r[i], a, b);
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i) s += r[i];
  if (s == 12345.f) out[0] = s;
}

static double measure_ffma_tflops(int sms) {
  float* d;
  CK(cudaMalloc(&d, 16));
  int blocks = sms * 8, threads = 256, iters = 4096;
  ffma_peak<<<blocks, threads>>>(d, 64, 0.999f, 0.001f);
  CK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ts;
  for (int rep = 0; rep < 7; ++rep) {
    CK(cudaEventRecord(e0));
    ffma_peak<<<blocks, threads>>>(d, iters, 0.999f, 0.001f);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end());
  double fmas = (double)blocks * threads * iters * 8 * 16;
  CK(cudaFree(d));
  return 2 * fmas / (ts[ts.size() / 2] * 1e-3) / 1e12;
}

// ---------------------------------------------------------------- timing
struct TimeResult {
  double us;
};

static TimeResult time_case(const Case& cs, std::mt19937_64& rng) {
  ConvParams p = make_params(cs);
  size_t nx = (size_t)p.N * p.C * p.H * p.W, nw = (size_t)p.M * p.C * p.KH * p.KW,
         ny = (size_t)p.N * p.M * p.OH * p.OW;
  size_t set_bytes = (nx + nw + ny) * 4;
  int R = (int)std::min<size_t>(16, std::max<size_t>(2, (size_t)(256u << 20) / set_bytes));
  std::vector<float*> X(R), Wt(R), Y(R), WS(R, nullptr);
  const int64_t nws = fastconv::multi_channel_workspace_elems(p);
  std::vector<float> hx(nx), hw(nw);
  fill(hx, rng);
  fill(hw, rng);
  for (int r = 0; r < R; ++r) {
    CK(cudaMalloc(&X[r], nx * 4));
    CK(cudaMalloc(&Wt[r], nw * 4));
    CK(cudaMalloc(&Y[r], ny * 4));
    if (nws) CK(cudaMalloc(&WS[r], nws * 4));
    CK(cudaMemcpy(X[r], hx.data(), nx * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(Wt[r], hw.data(), nw * 4, cudaMemcpyHostToDevice));
  }
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // warm-up
  for (int r = 0; r < R; ++r) CK(fastconv::launch_multi_channel(p, X[r], Wt[r], Y[r], WS[r], nws, s));
  CK(cudaStreamSynchronize(s));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int r = 0; r < R; ++r) CK(fastconv::launch_multi_channel(p, X[r], Wt[r], Y[r], WS[r], nws, s));
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<double> ts;
  for (int rep = 0; rep < 25; ++rep) {
    CK(cudaEventRecord(e0, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    ts.push_back(ms * 1e3 / R);
  }
  std::sort(ts.begin(), ts.end());
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaStreamDestroy(s));
  for (int r = 0; r < R; ++r) {
    CK(cudaFree(X[r]));
    CK(cudaFree(Wt[r]));
    CK(cudaFree(Y[r]));
    if (WS[r]) CK(cudaFree(WS[r]));
  }
  return {ts[ts.size() / 2]};
}

static int64_t g_stage = 0;  // --stage F: plan[7] layout-staging flags for the layer cases
                             // (DRV_PW=1 adds 16: the streamed 1x1 kernel)

static Case layer(int N, int C, int HW, int M, int K, bool nhwc, const int64_t* plan = nullptr) {
  Case c{};
  c.N = N; c.C = C; c.H = c.W = HW; c.M = M; c.KH = c.KW = K;
  c.pt = c.pl = c.pb = c.pr = 0;  // VALID
  c.x_nhwc = c.y_nhwc = nhwc;
  c.w_hwio = nhwc;  // JAX users: NHWC + HWIO; NCHW + OIHW
  for (int i = 0; i < 8; ++i) c.plan[i] = plan ? plan[i] : 0;
  c.plan[0] = 2;
  c.plan[7] |= g_stage;
  return c;
}

static Case random_case(std::mt19937_64& rng) {
  auto U = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Case c{};
  for (;;) {
    c.N = U(1, 8);
    c.C = U(2, 70);
    if (c.C % 8 == 0) c.C += U(1, 7);
    if (U(0, 4) == 0) c.C = 4 * U(1, 17);  // C * KH*KW % 4 == 0: the OIHW order's filter runs
    c.M = U(1, 140);
    if (c.M % 8 == 0) c.M += U(1, 7);
    c.H = U(1, 23);
    c.W = U(1, 23);
    c.KH = U(1, 7);
    c.KW = U(1, 7);
    c.pt = U(-2, 3); c.pb = U(-2, 3); c.pl = U(-2, 3); c.pr = U(-2, 3);
    if (U(0, 3) == 0) {  // 1x1 without padding: the 16-byte pixel-run loader when H*W % 4 == 0
      c.KH = c.KW = 1;
      c.pt = c.pb = c.pl = c.pr = 0;
      if (U(0, 1)) c.W = (c.W + 3) & ~3;
    }
    if (U(0, 5) == 0) {  // a shape the streamed 1x1 kernel supports (plan[7] & 16, drawn below)
      c.KH = c.KW = 1;
      c.pt = c.pb = c.pl = c.pr = 0;
      c.C = 32 * U(1, 2);
      c.M = 8 * U(1, 18);
      c.W = (c.W + 3) & ~3;  // H*W % 4 == 0 (channels-first)
      c.H = U(1, 40);
    }
    c.sh = c.sw = 1;
    if (U(0, 2) == 0) { c.sh = U(1, 3); c.sw = U(1, 3); }  // strides (any, beyond the paper)
    const int eh = c.H + c.pt + c.pb - c.KH, ew = c.W + c.pl + c.pr - c.KW;
    if (eh >= 0 && ew >= 0) break;
  }
  c.x_nhwc = U(0, 1);
  c.w_hwio = U(0, 1);
  c.y_nhwc = U(0, 1);
  c.plan[0] = 2;
  c.plan[7] = U(0, 1) * 2;  // filter staging (taken only where its preconditions hold)
  c.plan[7] |= U(0, 1) * 4;  // tensor cores (likewise: 128x64 / 64x64, 16-byte loaders)
  c.plan[7] |= U(0, 2) == 0 ? 8 : 0;  // split through global memory (where plan[5] > 1)
  c.plan[7] |= U(0, 1) * 16;  // the streamed 1x1 kernel (where it supports the layer)
  c.plan[7] |= U(0, 1) * 32;  // the OIHW order (where the tensor cores and its layouts hold)
  if (c.KH == 1 && c.KW == 1 && c.C % 8 == 0 && U(0, 1)) c.y_nhwc = c.x_nhwc;  // its layouts
  int mode = U(0, 3);
  if (mode == 0) {
    for (int i = 1; i < 8; ++i) c.plan[i] = 0;  // auto
  } else if (mode == 1) {  // absurd values
    c.plan[1] = U(-5, 100000); c.plan[2] = U(-5, 100000); c.plan[3] = U(-5, 100000);
    c.plan[4] = U(-3, 9); c.plan[5] = U(-3, 40); c.plan[6] = U(-1, 5000);
  } else {  // plausible planner values
    int Ss[2] = {8, 16};
    int Ms[4] = {16, 32, 64, 128};
    int Ws[4] = {32, 64, 128, 256};
    c.plan[1] = Ss[U(0, 1)]; c.plan[2] = Ms[U(0, 3)]; c.plan[3] = Ws[U(0, 3)];
    c.plan[4] = U(1, 3); c.plan[5] = U(0, 12); c.plan[6] = 256;
  }
  return c;
}

static void print_case(const Case& c) {
  if (c.sh != 1 || c.sw != 1) printf("s%dx%d ", c.sh, c.sw);
  printf("N%d C%d %dx%d M%d K%dx%d pad(t%d,l%d,b%d,r%d) x:%s w:%s y:%s plan[%lld,%lld,%lld,%lld,%lld,..,%lld]",
         c.N, c.C, c.H, c.W, c.M, c.KH, c.KW, c.pt, c.pl, c.pb, c.pr, c.x_nhwc ? "NHWC" : "NCHW",
         c.w_hwio ? "HWIO" : "OIHW", c.y_nhwc ? "NHWC" : "NCHW", (long long)c.plan[1],
         (long long)c.plan[2], (long long)c.plan[3], (long long)c.plan[4], (long long)c.plan[5],
         (long long)c.plan[7]);
}

struct PlanRow { int N, C, HW, M, K, nhwc; int64_t plan[8]; };
static std::vector<PlanRow> g_plans;
static void apply_plan(Case& c) {
  for (auto& r : g_plans)
    if (r.N == c.N && r.C == c.C && r.HW == c.H && r.M == c.M && r.K == c.KH && r.nhwc == (int)c.x_nhwc)
      for (int i = 0; i < 8; ++i) c.plan[i] = r.plan[i];
  c.plan[7] |= g_stage;
}

int main(int argc, char** argv) {
  bool small = false, do_time = true, do_ab = true;
  int var_layouts = 1;  // bit 0: NHWC, bit 1: NCHW
  int nrandom = 240;
  uint64_t seed = 20261121;
  std::vector<std::string> ones;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--small")) small = true;
    else if (!strcmp(argv[i], "--no-time")) do_time = false;
    else if (!strcmp(argv[i], "--no-ab")) do_ab = false;
    else if (!strcmp(argv[i], "--variants") && i + 1 < argc) {
      ++i;
      var_layouts = !strcmp(argv[i], "nchw") ? 2 : !strcmp(argv[i], "both") ? 3
                  : !strcmp(argv[i], "none") ? 0 : 1;
    }
    else if (!strcmp(argv[i], "--random") && i + 1 < argc) nrandom = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--one") && i + 1 < argc) ones.push_back(argv[++i]);
    else if (!strcmp(argv[i], "--stage") && i + 1 < argc) g_stage = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], nullptr, 10);
    else if (!strcmp(argv[i], "--plans") && i + 1 < argc) {
      FILE* f = fopen(argv[++i], "r");
      if (!f) { fprintf(stderr, "cannot open %s\n", argv[i]); return 2; }
      PlanRow r;
      long long q[8];
      while (fscanf(f, "%d %d %d %d %d %d %lld %lld %lld %lld %lld %lld %lld %lld", &r.N, &r.C,
                    &r.HW, &r.M, &r.K, &r.nhwc, &q[0], &q[1], &q[2], &q[3], &q[4], &q[5], &q[6],
                    &q[7]) == 14) {
        for (int k = 0; k < 8; ++k) r.plan[k] = q[k];
        g_plans.push_back(r);
      }
      fclose(f);
      printf("plans: %zu rows from %s\n", g_plans.size(), argv[i]);
    }
  }
  if (getenv("DRV_NO_DIRECT")) fastconv::multi_channel_set_direct_store(0);  // A/B timing
  if (getenv("DRV_TC")) fastconv::multi_channel_set_tensor_cores(atoi(getenv("DRV_TC")));
  if (getenv("DRV_PWV")) fastconv::multi_channel_pointwise_variant(atoi(getenv("DRV_PWV")));
  if (getenv("DRV_RO")) {  // 0: stage the filters instead (plan[7] | 2); 1: wherever it runs
    fastconv::multi_channel_set_oihw_order(atoi(getenv("DRV_RO")));
    if (!atoi(getenv("DRV_RO"))) g_stage |= 2;
  }
  if (getenv("DRV_PW")) {
    if (atoi(getenv("DRV_PW"))) g_stage |= 16;
    else fastconv::multi_channel_set_pointwise(0);
  }
  std::mt19937_64 rng(seed);
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);

  if (!ones.empty()) {
    for (auto& o : ones) {
      int N, C, HW, M, K;
      char xl[8] = {0}, wl[8] = {0}, yl[8] = {0};
      const int got = sscanf(o.c_str(), "%d %d %d %d %d %4[A-Z]/%4[A-Z]/%4[A-Z]", &N, &C, &HW, &M,
                             &K, xl, wl, yl);
      if (got != 7 && got != 8) {
        fprintf(stderr, "bad --one \"%s\"\n", o.c_str());
        return 2;
      }
      Case cs = layer(N, C, HW, M, K, !strcmp(xl, "NHWC"));
      cs.w_hwio = !strcmp(wl, "HWIO");
      if (got == 8) cs.y_nhwc = !strcmp(yl, "NHWC");  // "XL/WL/YL": output layout too
      apply_plan(cs);
      if (!do_time) {  // --no-time: check this case instead of timing it (for the sanitizers)
        CheckResult r = check_case(cs, rng);
        printf("check %s %s rel %.2e%s\n", o.c_str(), r.desc.c_str(), r.rel, r.ok ? "" : " FAILED");
        if (!r.ok) return 1;
        continue;
      }
      TimeResult t = time_case(cs, rng);
      ConvParams p = make_params(cs);
      double flop = 2.0 * p.N * p.M * p.OH * p.OW * p.C * p.KH * p.KW;
      char buf[64];
      fastconv::multi_channel_describe(p, buf, sizeof buf);
      if (getenv("DRV_STAGE_ONLY")) {  // time the staging copies alone (graph of 16)
        const int64_t st_elems = fastconv::staged_filter_elems(p);
        if (st_elems) {
          size_t nx = (size_t)p.N * p.C * p.H * p.W, nw = (size_t)p.M * p.C * p.KH * p.KW;
          float *dx, *dw, *dws;
          CK(cudaMalloc(&dx, nx * 4)); CK(cudaMalloc(&dw, nw * 4)); CK(cudaMalloc(&dws, st_elems * 4 * 16));
          cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
          auto run = [&] { for (int r = 0; r < 16; ++r) { ConvParams q = p; const float* ww = dw;
                                                         CK(fastconv::stage_filters(&q, &ww, dws + r * st_elems, s)); } };
          run(); CK(cudaStreamSynchronize(s));
          cudaGraph_t g; cudaGraphExec_t ge;
          CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)); run(); CK(cudaStreamEndCapture(s, &g));
          CK(cudaGraphInstantiate(&ge, g, 0));
          cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
          std::vector<float> v;
          for (int k = 0; k < 15; ++k) { CK(cudaEventRecord(e0, s)); CK(cudaGraphLaunch(ge, s)); CK(cudaEventRecord(e1, s));
                                         CK(cudaEventSynchronize(e1)); float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); v.push_back(ms * 1e3f / 16); }
          std::sort(v.begin(), v.end());
          printf("stage-only %s %.2f us\n", buf, v[v.size() / 2]);
          CK(cudaFree(dx)); CK(cudaFree(dw)); CK(cudaFree(dws));
        }
      }
      printf("one %s/%s->%s N%d C%d %dx%d M%d K%d %-16s %9.2f us %7.2f TFLOP/s\n", xl, wl, cs.y_nhwc ? "NHWC" : "NCHW", N, C, HW,
             HW, M, K, buf, t.us, flop / (t.us * 1e-6) / 1e12);
    }
    return 0;
  }
  int fails = 0, checked = 0;
  double worst = 0;
  if (small) {
    Case a = layer(1, 64, 9, 40, 3, true);  // split path (cluster), NHWC
    Case b = layer(2, 19, 11, 37, 5, false);
    b.pt = 2; b.pl = -1; b.pb = 1; b.pr = 2; b.KW = 3; b.w_hwio = true;
    Case c = layer(1, 130, 20, 130, 1, true);
    c.plan[1] = 16; c.plan[2] = 128; c.plan[3] = 128; c.plan[5] = 3;
    Case d = layer(1, 32, 12, 36, 3, false);  // NCHW/OIHW, filters staged as HWIO
    d.plan[7] = 2;
    d.pt = d.pl = d.pb = d.pr = 1;
    Case e = layer(2, 37, 9, 44, 3, false);  // global split asked off the tensor cores (FFMA):
                                             // runs as a cluster of 5
    e.plan[1] = 8; e.plan[2] = 64; e.plan[3] = 64; e.plan[5] = 5; e.plan[7] = 8;
    e.pt = e.pl = 1; e.pb = 2; e.pr = 0; e.KW = 2;
    Case f = layer(1, 64, 9, 64, 3, true);  // the same with the tensor cores, 128x64, 6 ranks
    f.plan[1] = 16; f.plan[2] = 64; f.plan[3] = 128; f.plan[5] = 6; f.plan[7] = 8 | 4;
    // the streamed 1x1 kernel: channels-last with a pixel tail and M = 72 (two filter tiles);
    // channels-first, HW = 100 (a tile tail per image), M = 136, N = 3; channels-last C = 32,
    // M = 16
    Case g = layer(2, 64, 9, 72, 1, true);
    g.plan[7] = 16;
    Case h = layer(3, 64, 10, 136, 1, false);
    h.plan[7] = 16;
    Case i = layer(2, 32, 7, 16, 1, true);
    i.plan[7] = 16;
    // strides: NCHW/OIHW 3x3 at (2, 3) with padding (FFMA), NHWC 3x3 at 2 on the tensor cores
    Case j = layer(2, 40, 17, 36, 3, false);
    j.sh = 2; j.sw = 3; j.pt = j.pl = j.pb = j.pr = 1;
    Case k = layer(2, 64, 15, 64, 3, true);
    k.sh = k.sw = 2; k.pt = k.pl = 1; k.plan[7] = 4;
    // the OIHW reduction order (NCHW/OIHW on the tensor cores, no staging): 64x64 with padding
    // (per-tap bounds), a partial last stage (R = 324) and 5 ranks through global memory;
    // 32x64 VALID (no bounds test) at stride 2 in a cluster of 3, K = 5, NHWC output;
    // 128x64 with a 2x2 kernel (R = 28, S = 32 B), M = 20
    Case l = layer(2, 36, 11, 40, 3, false);
    l.pt = l.pl = 1; l.pb = 2; l.pr = 0;
    l.plan[1] = 16; l.plan[2] = 64; l.plan[3] = 64; l.plan[5] = 5; l.plan[7] = 2 | 4 | 8 | 32;
    Case m = layer(3, 20, 13, 64, 5, false);
    m.sh = m.sw = 2; m.y_nhwc = true;
    m.plan[1] = 16; m.plan[2] = 64; m.plan[3] = 32; m.plan[5] = 3; m.plan[7] = 4 | 32;
    Case n = layer(2, 7, 12, 20, 2, false);
    n.plan[1] = 8; n.plan[2] = 64; n.plan[3] = 128; n.plan[5] = 1; n.plan[7] = 4 | 32;
    // ... with odd M unsplit and pixel-contiguous output (random seed 167 found the filter-pair
    // direct store writing past M = 17 there), cropping padding
    Case o = layer(4, 8, 15, 17, 1, false);
    o.W = 20; o.pl = -2; o.pb = -1; o.pr = -2;
    o.plan[1] = 8; o.plan[2] = 64; o.plan[3] = 64; o.plan[5] = 1; o.plan[7] = 4 | 32;
    for (Case* cs : {&a, &b, &c, &d, &e, &f, &g, &h, &i, &j, &k, &l, &m, &n, &o}) {
      CheckResult r = check_case(*cs, rng, true);
      print_case(*cs);
      printf(" -> %s rel %.2e written %d bitident %d %s\n", r.desc.c_str(), r.rel, r.all_written,
             r.bit_identical, r.ok ? "OK" : "FAIL");
      fails += !r.ok;
    }
    printf("small: %d failures\n", fails);
    return fails ? 1 : 0;
  }

  // paper-multi set
  const int maps[10][2] = {{7, 512}, {14, 512}, {14, 256}, {28, 256}, {28, 128},
                           {56, 128}, {56, 64}, {112, 64}, {224, 64}, {512, 64}};
  std::vector<Case> bench;
  for (int nhwc = 1; nhwc >= 0; --nhwc) {
    for (int K : {1, 3, 5})
      for (auto& mp : maps) bench.push_back(layer(1, mp[1], mp[0], mp[1], K, nhwc));
    for (int K : {1, 3})
      for (int i : {6, 4, 2, 0}) bench.push_back(layer(32, maps[i][1], maps[i][0], maps[i][1], K, nhwc));
  }
  for (auto& cs : bench) apply_plan(cs);
  // correctness of every benchmarked case
  for (auto& cs : bench) {
    CheckResult r = check_case(cs, rng);
    ++checked;
    worst = std::max(worst, r.rel);
    if (!r.ok) {
      ++fails;
      printf("FAIL ");
      print_case(cs);
      printf(" -> %s rel %.2e written %d bitident %d\n", r.desc.c_str(), r.rel, r.all_written,
             r.bit_identical);
    }
  }
  printf("paper-multi: %d cases checked, %d failures, worst rel %.2e\n", checked, fails, worst);
  // random configurations
  int rfails = 0;
  double rworst = 0;
  for (int i = 0; i < nrandom; ++i) {
    Case cs = random_case(rng);
    CheckResult r = check_case(cs, rng);
    rworst = std::max(rworst, r.rel);
    if (!r.ok) {
      ++rfails;
      printf("FAIL ");
      print_case(cs);
      printf(" -> %s rel %.2e written %d bitident %d\n", r.desc.c_str(), r.rel, r.all_written,
             r.bit_identical);
    }
  }
  printf("random: %d cases, %d failures, worst rel %.2e\n", nrandom, rfails, rworst);
  fails += rfails;
  if (!do_time) return fails ? 1 : 0;

  double ceil_tf = measure_ffma_tflops(prop.multiProcessorCount);
  printf("measured FFMA ceiling: %.1f TFLOP/s\n", ceil_tf);
  printf("%-5s %-3s %-4s %-4s %-4s %-2s %-16s %9s %8s %7s %8s\n", "lay", "N", "HW", "C", "M", "K",
         "config", "us", "TFLOP/s", "%FMA", "GB/s");
  for (auto& cs : bench) {
    TimeResult t = time_case(cs, rng);
    ConvParams p = make_params(cs);
    double flop = 2.0 * p.N * p.M * p.OH * p.OW * p.C * p.KH * p.KW;
    double bytes = 4.0 * (p.N * p.C * p.H * p.W + p.M * p.C * p.KH * p.KW + p.N * p.M * p.OH * p.OW);
    double tf = flop / (t.us * 1e-6) / 1e12;
    char buf[64];
    fastconv::multi_channel_describe(p, buf, sizeof buf);
    printf("%-5s %-3d %-4d %-4d %-4d %-2d %-16s %9.2f %8.2f %6.1f%% %8.0f\n",
           cs.x_nhwc ? "NHWC" : "NCHW", cs.N, cs.H, cs.C, cs.M, cs.KH, buf, t.us, tf,
           100 * tf / ceil_tf, bytes / (t.us * 1e-6) / 1e9);
  }
  // A/B: the same plans with the 16-byte loaders off (4-byte cp.async everywhere)
  if (do_ab) printf("A/B 4-byte loaders (NHWC, same plan):\n");
  fastconv::multi_channel_set_vector(0);
  for (auto& cs : bench) {
    if (!cs.x_nhwc || !do_ab) continue;
    TimeResult t = time_case(cs, rng);
    char buf[64];
    ConvParams p = make_params(cs);
    fastconv::multi_channel_describe(p, buf, sizeof buf);
    printf("  N%-3d %-4d C%-4d K%d  %-16s %9.2f us (4-byte)\n", cs.N, cs.H, cs.C, cs.KH, buf, t.us);
  }
  fastconv::multi_channel_set_vector(1);
  // tiling variants on a few cases (plan = {2, S, M', W'x, W'y, c_split, threads, 0})
  printf("variants:\n");
  const int vc[9][4] = {{32, 14, 256, 3}, {32, 28, 128, 3}, {32, 7, 512, 3}, {1, 56, 128, 3},
                        {1, 112, 64, 3}, {1, 224, 64, 3}, {1, 512, 64, 3}, {32, 56, 64, 3},
                        {1, 7, 512, 5}};
  const int64_t vp[8][8] = {{2, 0, 0, 0, 0, 0, 0, 0},     {2, 8, 64, 128, 0, 1, 0, 0},
                            {2, 16, 64, 128, 0, 1, 0, 0}, {2, 8, 128, 128, 0, 1, 0, 0},
                            {2, 16, 64, 64, 0, 1, 0, 0},  {2, 16, 64, 64, 0, 3, 0, 0},
                            {2, 16, 64, 64, 0, 5, 0, 0},  {2, 16, 64, 32, 0, 3, 0, 0}};
  for (int lay = 0; lay < 2; ++lay)
  for (auto& v : vc)
    for (auto& pl : vp) {
      if (!(var_layouts >> lay & 1)) continue;
      Case cs = layer(v[0], v[2], v[1], v[2], v[3], lay == 0, pl);
      TimeResult t = time_case(cs, rng);
      ConvParams p = make_params(cs);
      double flop = 2.0 * p.N * p.M * p.OH * p.OW * p.C * p.KH * p.KW;
      double tf = flop / (t.us * 1e-6) / 1e12;
      char buf[64];
      fastconv::multi_channel_describe(p, buf, sizeof buf);
      printf("  %s N%-3d %-4d C%-4d K%d  %-16s %9.2f us %6.2f TF %5.1f%%\n",
             cs.x_nhwc ? "NHWC" : "NCHW", cs.N, cs.H, cs.C, cs.KH, buf, t.us, tf, 100 * tf / ceil_tf);
    }
  printf("TOTAL: %d failures\n", fails);
  return fails ? 1 : 0;
}
