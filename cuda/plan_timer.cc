// Device time of one convolution under several plans: see plan_timer.h. Host code (compiled
// as C++ against the CUDA runtime, like cuda_handler.cc); the launches go through
// launch_planned, the same path as the FFI handler's.
#include "plan_timer.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels.h"

namespace fastconv {
namespace {

constexpr int kMaxSets = 256;           // (input, output) sets a sample rotates over
// Outputs a sample rotates over, at least (where the budget allows): a launch then writes pages
// that no launch of the last few GB touched, as in a network whose activations span GBs (and in
// the benchmark's R calls). Spread over 1-6 GB instead of 2x L2 (H100), launches of many small
// tiles ran up to 1.08x slower (b32 112x112 M128 1x1 NHWC, RB 4, from ~1 GB on) and 1.22x (b32
// 28x28 M512 1x1 NHWC, RB 4, 17.9 -> 21.8 us, between 2 and 6 GB) while whole-map bands did not,
// so a 2x-L2 rotation picked launches that ran up to 1.29x slower in the benchmark
// (benchmarks/notes/single_channel.md round 12).
constexpr size_t kRotateBytes = size_t(6) << 30;
constexpr int kMinIters = 4, kMaxIters = 512;
constexpr int kCalibrationLaunches = 8;
constexpr double kSampleUs = 1000.0;    // aimed device time of one sample
constexpr int kMaxRounds = 1000;
constexpr int kFillByte = 0x3c;         // 0x3c3c3c3c = 0.0115f: normal, no NaN or denormal
constexpr int64_t kMaxElems = int64_t(1) << 56;  // keeps every byte count far from overflow

std::string plan_str(const PlanAttrs& a) {
  std::string s = "[";
  for (int i = 0; i < kPlanLen; ++i) s += (i ? ", " : "") + std::to_string(a[i]);
  return s + "]";
}

[[noreturn]] void fail(const std::string& what, cudaError_t err) {
  cudaGetLastError();  // clear a non-sticky error, so that no later CUDA call reports it
  throw std::runtime_error("time_plans: " + what + ": " + cudaGetErrorName(err) + ": " +
                           cudaGetErrorString(err));
}

void check(cudaError_t err, const std::string& what) {
  if (err != cudaSuccess) fail(what, err);
}

// Elements a buffer of these sizes and element strides spans: 1 + sum (size - 1) * stride;
// 0 when a size is 0.
int64_t extent(const char* name, const int64_t (&size)[4], const int64_t (&stride)[4]) {
  for (int i = 0; i < 4; ++i)
    if (size[i] < 0 || stride[i] < 0)
      throw std::invalid_argument(std::string("time_plans: negative size or stride in ") + name);
  for (int i = 0; i < 4; ++i)
    if (size[i] == 0) return 0;
  int64_t span = 1;
  for (int i = 0; i < 4; ++i) {
    int64_t term = 0;
    if (__builtin_mul_overflow(size[i] - 1, stride[i], &term) ||
        __builtin_add_overflow(span, term, &span) || span > kMaxElems)
      throw std::invalid_argument(std::string("time_plans: the ") + name +
                                  " buffer is too large to time");
  }
  return span;
}

size_t float_bytes(int64_t elems) { return static_cast<size_t>(elems) * sizeof(float); }
size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Sets the device for this scope and gives the caller's back.
struct DeviceGuard {
  int previous = -1;
  explicit DeviceGuard(int device) {
    check(cudaGetDevice(&previous), "cudaGetDevice");
    check(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  }
  ~DeviceGuard() {
    if (previous >= 0) cudaSetDevice(previous);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
};

// Everything time_plans creates, released on every path: the stream is drained first, so no
// work of ours still runs when its buffers go. Each handle slot is added before the CUDA call
// that fills it (a failing push_back cannot leak a live handle).
struct Resources {
  cudaStream_t stream = nullptr;
  std::vector<void*> buffers;
  std::vector<cudaEvent_t> events;
  std::vector<cudaGraphExec_t> graphs;

  Resources() = default;
  Resources(const Resources&) = delete;
  Resources& operator=(const Resources&) = delete;
  ~Resources() {
    if (stream) cudaStreamSynchronize(stream);
    for (cudaGraphExec_t g : graphs)
      if (g) cudaGraphExecDestroy(g);
    for (cudaEvent_t e : events)
      if (e) cudaEventDestroy(e);
    if (stream) cudaStreamDestroy(stream);
    for (void* b : buffers)
      if (b) cudaFree(b);
    cudaGetLastError();  // an error met while cleaning up is not the caller's
  }

  float* alloc(size_t bytes) {
    buffers.push_back(nullptr);
    check(cudaMalloc(&buffers.back(), bytes), "cudaMalloc(" + std::to_string(bytes) + " bytes)");
    return static_cast<float*>(buffers.back());
  }
  cudaEvent_t event() {
    events.push_back(nullptr);
    check(cudaEventCreate(&events.back()), "cudaEventCreate");
    return events.back();
  }
};

struct Sets {
  float* ws = nullptr;
  int64_t ws_elems = 0;
  std::vector<float*> x, w, y;  // S sets
};

// A graph of `launches` launches of p, launch k on set k % S, instantiated and uploaded.
cudaGraphExec_t capture(Resources& r, const Sets& b, const ConvParams& p, const PlanAttrs& attrs,
                        int launches) {
  const int S = static_cast<int>(b.x.size());
  check(cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeThreadLocal),
        "cudaStreamBeginCapture");
  cudaError_t err = cudaSuccess;
  for (int k = 0; k < launches && err == cudaSuccess; ++k)
    err = launch_planned(p, b.x[k % S], b.w[k % S], b.y[k % S], b.ws, b.ws_elems, r.stream);
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(r.stream, &graph);  // always leave capture
  struct GraphHolder {
    cudaGraph_t g;
    ~GraphHolder() { if (g) cudaGraphDestroy(g); }
  } holder{graph};
  if (err != cudaSuccess) fail("plan " + plan_str(attrs) + " failed to launch in a graph", err);
  if (end != cudaSuccess) fail("capturing plan " + plan_str(attrs) + " into a graph", end);
  r.graphs.push_back(nullptr);
  check(cudaGraphInstantiate(&r.graphs.back(), graph, 0),
        "cudaGraphInstantiate (plan " + plan_str(attrs) + ")");
  check(cudaGraphUpload(r.graphs.back(), r.stream), "cudaGraphUpload");
  return r.graphs.back();
}

}  // namespace

std::vector<std::vector<double>> time_plans(const ConvParams& base,
                                            const std::vector<PlanAttrs>& plans, int rounds,
                                            int ordinal, size_t budget_bytes) {
  if (plans.empty()) throw std::invalid_argument("time_plans: no plans to time");
  if (rounds < 1 || rounds > kMaxRounds)
    throw std::invalid_argument("time_plans: rounds must be in [1, " +
                                std::to_string(kMaxRounds) + "], got " + std::to_string(rounds));
  if (base.stride_h <= 0 || base.stride_w <= 0)
    throw std::invalid_argument("time_plans: window strides must be positive");
  const int64_t x_elems = extent("lhs", {base.N, base.C, base.H, base.W},
                                 {base.x_sn, base.x_sc, base.x_sh, base.x_sw});
  const int64_t w_elems = extent("rhs", {base.M, base.C, base.KH, base.KW},
                                 {base.w_so, base.w_si, base.w_sh, base.w_sw});
  const int64_t y_elems = extent("out", {base.N, base.M, base.OH, base.OW},
                                 {base.y_sn, base.y_sc, base.y_sh, base.y_sw});
  if (x_elems == 0 || w_elems == 0 || y_elems == 0)
    throw std::invalid_argument("time_plans: an empty convolution (a size is 0): nothing to time");

  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (ordinal < 0 || ordinal >= count)
    throw std::invalid_argument("time_plans: no CUDA device with ordinal " +
                                std::to_string(ordinal) + " (" + std::to_string(count) +
                                " found)");
  const DeviceGuard device(ordinal);  // declared before the resources: outlives them
  int l2_bytes = 0;
  check(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, ordinal),
        "cudaDeviceGetAttribute(L2 cache size)");

  const size_t n = plans.size();
  std::vector<ConvParams> params(n, base);
  int64_t ws_elems = 4;
  for (size_t i = 0; i < n; ++i) {
    std::copy(plans[i].begin(), plans[i].end(), params[i].plan);
#ifdef FASTCONV_HAVE_MULTI_CHANNEL
    if (params[i].method() == kMultiChannel)
      ws_elems = std::max(ws_elems, multi_channel_workspace_elems(params[i]));
#endif
  }
  if (ws_elems > kMaxElems) throw std::invalid_argument("time_plans: workspace too large");

  // S sets of (input, filters, output): their outputs together beyond 2x L2 and kRotateBytes,
  // within the budget and half the free device memory (the caller's framework keeps the rest).
  // Filters per set, not one buffer for all: a launch then finds its filters where a network's
  // layer (or the benchmark's call) does, out of L2; with one shared filter buffer, always in
  // L2, the FFMA kernel's staging timed ~2% faster against the wgmma kernel than it runs in
  // the benchmark's stream span (b1 512^2 K3 NHWC, H200, notes round 29).
  size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const size_t avail = std::min(budget_bytes, free_bytes / 2);
  // One allocation per set: input | filters | output, each at a 256-byte boundary (cudaMalloc's).
  const size_t x_bytes = float_bytes(x_elems), w_bytes = float_bytes(w_elems),
               y_bytes = float_bytes(y_elems);
  const size_t x_span = aligned(x_bytes), w_span = aligned(w_bytes);
  const size_t fixed = float_bytes(ws_elems), per_set = x_span + w_span + aligned(y_bytes);
  if (fixed > avail || per_set > avail - fixed)
    throw std::invalid_argument(
        "time_plans: one set of buffers (" + std::to_string(fixed + per_set) +
        " bytes) does not fit the budget (" + std::to_string(avail) + " bytes: min(budget_bytes " +
        std::to_string(budget_bytes) + ", half the free device memory))");
  const size_t span = std::max(2 * static_cast<size_t>(l2_bytes), kRotateBytes);
  const size_t wanted = std::min<size_t>(kMaxSets, span / y_bytes + 1);
  const int S = static_cast<int>(std::max<size_t>(1, std::min(wanted, (avail - fixed) / per_set)));

  Resources r;
  check(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  Sets b;
  b.ws = r.alloc(float_bytes(ws_elems));
  b.ws_elems = ws_elems;
  for (int s = 0; s < S; ++s) {
    char* set = reinterpret_cast<char*>(r.alloc(per_set));
    b.x.push_back(reinterpret_cast<float*>(set));
    b.w.push_back(reinterpret_cast<float*>(set + x_span));
    b.y.push_back(reinterpret_cast<float*>(set + x_span + w_span));
    check(cudaMemsetAsync(set, kFillByte, x_span + w_bytes, r.stream), "cudaMemsetAsync");
  }

  // Warm-up: every plan on every set (also the launchers' one-time function attributes,
  // outside any graph capture); a failing plan is named.
  for (size_t i = 0; i < n; ++i) {
    for (int s = 0; s < S; ++s) {
      const cudaError_t err =
          launch_planned(params[i], b.x[s], b.w[s], b.y[s], b.ws, b.ws_elems, r.stream);
      if (err != cudaSuccess) fail("plan " + plan_str(plans[i]) + " failed to launch", err);
    }
    check(cudaStreamSynchronize(r.stream), "plan " + plan_str(plans[i]) + " failed to run");
  }

  // Iterations per sample: a graph of a few launches of plans[0], timed behind an untimed
  // run of itself (so the span holds no host gap).
  const cudaEvent_t c0 = r.event(), c1 = r.event();
  const cudaGraphExec_t calibration = capture(r, b, params[0], plans[0], kCalibrationLaunches);
  check(cudaGraphLaunch(calibration, r.stream), "cudaGraphLaunch");
  check(cudaEventRecord(c0, r.stream), "cudaEventRecord");
  check(cudaGraphLaunch(calibration, r.stream), "cudaGraphLaunch");
  check(cudaEventRecord(c1, r.stream), "cudaEventRecord");
  check(cudaEventSynchronize(c1), "plan " + plan_str(plans[0]) + " failed to run in a graph");
  float ms = 0.f;
  check(cudaEventElapsedTime(&ms, c0, c1), "cudaEventElapsedTime");
  const double per_launch_us = std::max(1e-3, 1000.0 * ms / kCalibrationLaunches);
  int iters = static_cast<int>(std::ceil(std::min<double>(kMaxIters, kSampleUs / per_launch_us)));
  iters = std::max(kMinIters, std::min(kMaxIters, iters));
  iters = (iters + S - 1) / S * S;  // whole turns over the sets: a graph ends on set S-1 and
                                    // the next one starts on set 0

  std::vector<cudaGraphExec_t> graph(n);
  std::vector<cudaEvent_t> start(n), stop(n);
  for (size_t i = 0; i < n; ++i) {
    graph[i] = capture(r, b, params[i], plans[i], iters);
    start[i] = r.event();
    stop[i] = r.event();
  }

  // Interleaved rounds. Each round starts with an untimed run of its first plan's graph, so
  // that the host has enqueued every timed span before the device reaches it.
  std::vector<std::vector<double>> samples(n);
  for (auto& v : samples) v.reserve(rounds);
  for (int round = 0; round < rounds; ++round) {
    const size_t first = static_cast<size_t>(round) % n;
    check(cudaGraphLaunch(graph[first], r.stream), "cudaGraphLaunch");
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (first + k) % n;
      check(cudaEventRecord(start[i], r.stream), "cudaEventRecord");
      check(cudaGraphLaunch(graph[i], r.stream), "cudaGraphLaunch (plan " + plan_str(plans[i]) + ")");
      check(cudaEventRecord(stop[i], r.stream), "cudaEventRecord");
    }
    check(cudaStreamSynchronize(r.stream), "a timed round failed to run");
    for (size_t i = 0; i < n; ++i) {
      check(cudaEventElapsedTime(&ms, start[i], stop[i]), "cudaEventElapsedTime");
      samples[i].push_back(1000.0 * ms / iters);
    }
  }
  return samples;
}

}  // namespace fastconv
