// Device calibration: global-memory latency (pointer chase), copy bandwidth, FP32 FMA rate.
// See calibrate.h. Used by the planner through the extension's calibrate(ordinal).
#include "calibrate.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace fastconv {
namespace {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("calibrate: ") + what + ": " +
                             cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
  }
}
#define CAL_CHECK(expr) check((expr), #expr)

// RAII holders so that a throw in the middle frees what was allocated.
struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) { CAL_CHECK(cudaMalloc(&ptr, bytes)); }
  ~DeviceBuffer() { if (ptr) cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T> T* as() const { return static_cast<T*>(ptr); }
};

struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  Events() {
    CAL_CHECK(cudaEventCreate(&start));
    CAL_CHECK(cudaEventCreate(&stop));
  }
  ~Events() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
  double seconds() const {
    float ms = 0.f;
    CAL_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms * 1e-3;
  }
};

struct DeviceGuard {
  int previous = 0;
  explicit DeviceGuard(int device) {
    CAL_CHECK(cudaGetDevice(&previous));
    CAL_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(previous); }
};

// ---------------------------------------------------------------- pointer chase
// Node i lives at element perm[i] * spacing and holds the element index of node i + 1:
// one random cycle through the whole buffer.
__global__ void build_chain(uint64_t* buf, const uint64_t* perm, uint64_t n, uint64_t spacing) {
  uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
  if (i < n) buf[perm[i] * spacing] = perm[(i + 1) % n] * spacing;
}

__global__ void chase(const uint64_t* buf, uint64_t start, int warmup, int steps,
                      uint64_t* out_end, long long* out_cycles) {
  uint64_t j = start;
  for (int s = 0; s < warmup; ++s) j = __ldcg(buf + j);  // bypass L1: L2 misses only
  long long t0 = clock64();
  for (int s = 0; s < steps; ++s) j = __ldcg(buf + j);
  long long t1 = clock64();
  *out_end = j;  // keeps the chain alive
  *out_cycles = t1 - t0;
}

// ---------------------------------------------------------------- FMA rate
constexpr int kChains = 8;    // independent FFMA chains per thread (hide the FMA latency)
constexpr int kUnroll = 64;

__global__ void fma_loop(float* out, int iters, float a, float b) {
  float acc[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) acc[c] = threadIdx.x * 1e-3f + c;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int c = 0; c < kChains; ++c) acc[c] = fmaf(acc[c], a, b);
    }
  }
  float sum = 0.f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) sum += acc[c];
  if (sum == 123456.789f) out[blockIdx.x * blockDim.x + threadIdx.x] = sum;  // never true
}

}  // namespace

CalibrationResult calibrate(int device) {
  DeviceGuard guard(device);
  cudaDeviceProp prop{};
  CAL_CHECK(cudaGetDeviceProperties(&prop, device));
  CalibrationResult r{};

  // 1. latency: a single thread chases a random cycle over a buffer 4x the L2 (>= 64 MB)
  //    with 256-byte spacing, so that nearly every load misses L1 and L2.
  {
    const uint64_t spacing = 256 / sizeof(uint64_t);
    const uint64_t bytes = std::max<uint64_t>(uint64_t(prop.l2CacheSize) * 4, 64ull << 20);
    const uint64_t n = bytes / (spacing * sizeof(uint64_t));
    std::vector<uint64_t> perm(n);
    std::iota(perm.begin(), perm.end(), uint64_t(0));
    std::mt19937_64 rng(12345);
    std::shuffle(perm.begin(), perm.end(), rng);
    DeviceBuffer buf(n * spacing * sizeof(uint64_t));
    DeviceBuffer dperm(n * sizeof(uint64_t));
    DeviceBuffer out_end(sizeof(uint64_t));
    DeviceBuffer out_cycles(sizeof(long long));
    CAL_CHECK(cudaMemcpy(dperm.ptr, perm.data(), n * sizeof(uint64_t), cudaMemcpyHostToDevice));
    build_chain<<<unsigned((n + 255) / 256), 256>>>(buf.as<uint64_t>(), dperm.as<uint64_t>(), n,
                                                    spacing);
    CAL_CHECK(cudaGetLastError());
    CAL_CHECK(cudaDeviceSynchronize());
    const int warmup = 1024, steps = 1 << 15;
    Events ev;
    CAL_CHECK(cudaEventRecord(ev.start));
    chase<<<1, 1>>>(buf.as<uint64_t>(), perm[0] * spacing, warmup, steps, out_end.as<uint64_t>(),
                    out_cycles.as<long long>());
    CAL_CHECK(cudaGetLastError());
    CAL_CHECK(cudaEventRecord(ev.stop));
    CAL_CHECK(cudaEventSynchronize(ev.stop));
    long long cycles = 0;
    CAL_CHECK(cudaMemcpy(&cycles, out_cycles.ptr, sizeof(cycles), cudaMemcpyDeviceToHost));
    r.latency_cycles = double(cycles) / steps;
    // clock: the timed part is nearly the whole kernel (warm-up is 1/32 of it)
    const double secs = ev.seconds() * double(steps) / double(steps + warmup);
    r.clock_hz = secs > 0 ? double(cycles) / secs : 0.0;
  }

  // 2. copy bandwidth: device-to-device copies of a buffer 8x the L2 (>= 256 MB).
  {
    const size_t bytes = std::max<size_t>(size_t(prop.l2CacheSize) * 8, size_t(256) << 20);
    DeviceBuffer src(bytes), dst(bytes);
    CAL_CHECK(cudaMemset(src.ptr, 1, bytes));
    CAL_CHECK(cudaMemcpy(dst.ptr, src.ptr, bytes, cudaMemcpyDeviceToDevice));  // warm-up
    const int reps = 10;
    Events ev;
    CAL_CHECK(cudaEventRecord(ev.start));
    for (int i = 0; i < reps; ++i)
      CAL_CHECK(cudaMemcpyAsync(dst.ptr, src.ptr, bytes, cudaMemcpyDeviceToDevice));
    CAL_CHECK(cudaEventRecord(ev.stop));
    CAL_CHECK(cudaEventSynchronize(ev.stop));
    r.copy_bytes_per_s = 2.0 * double(bytes) * reps / ev.seconds();  // read + write
  }

  // 3. FP32 FMA rate: 8 blocks of 256 threads per SM, 8 independent chains per thread.
  {
    const int threads = 256, blocks = prop.multiProcessorCount * 8, iters = 2048;
    DeviceBuffer out(size_t(blocks) * threads * sizeof(float));
    fma_loop<<<blocks, threads>>>(out.as<float>(), 16, 1.0001f, 1e-7f);  // warm-up
    CAL_CHECK(cudaGetLastError());
    Events ev;
    CAL_CHECK(cudaEventRecord(ev.start));
    fma_loop<<<blocks, threads>>>(out.as<float>(), iters, 1.0001f, 1e-7f);
    CAL_CHECK(cudaGetLastError());
    CAL_CHECK(cudaEventRecord(ev.stop));
    CAL_CHECK(cudaEventSynchronize(ev.stop));
    const double fmas = double(blocks) * threads * double(iters) * kUnroll * kChains;
    r.fma_per_s = fmas / ev.seconds();
  }
  return r;
}

}  // namespace fastconv
