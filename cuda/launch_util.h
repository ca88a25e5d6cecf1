// Host-side launch helpers shared by the kernel launchers. Small layers are bound by the
// host's cost per call (XLA launches one custom call at a time), so a launch makes one
// cudaGetDevice and the launch itself; device attributes and per-kernel function
// attributes are queried or set once per device and remembered.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

namespace fastconv {

// Whether a buffer starts 16-byte aligned (what the kernels' 16-byte loads, copies and stores
// need of it).
inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

struct DeviceInfo {
  int device = 0, sms = 0, smem_optin = 0, cc_major = 0;
};

// The current device's attributes (queried on the first call per device).
inline cudaError_t current_device_info(DeviceInfo* out) {
  constexpr int kMaxDevices = 64;
  static DeviceInfo cache[kMaxDevices];
  static std::once_flag once[kMaxDevices];
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  if (dev < 0 || dev >= kMaxDevices) return cudaErrorInvalidDevice;
  cudaError_t query = cudaSuccess;
  std::call_once(once[dev], [&] {
    DeviceInfo d;
    d.device = dev;
    if ((query = cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev)) ==
            cudaSuccess &&
        (query = cudaDeviceGetAttribute(&d.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                        dev)) == cudaSuccess &&
        (query = cudaDeviceGetAttribute(&d.cc_major, cudaDevAttrComputeCapabilityMajor, dev)) ==
            cudaSuccess)
      cache[dev] = d;
  });
  if (query != cudaSuccess) return query;
  if (cache[dev].sms <= 0) return cudaErrorInvalidDevice;  // an earlier query failed
  *out = cache[dev];
  return cudaSuccess;
}

// cudaFuncSetAttribute(fn, attr, value) unless this kernel already has at least `value` on
// `device` (the attribute persists for the kernel in that device's context).
inline cudaError_t raise_func_attribute_once(const void* fn, int device,
                                             cudaFuncAttribute attr, int value) {
  static std::mutex mu;
  static std::map<std::pair<std::pair<const void*, int>, int>, int> done;
  std::lock_guard<std::mutex> lock(mu);
  int& have = done[{{fn, device}, static_cast<int>(attr)}];
  if (have >= value) return cudaSuccess;
  const cudaError_t err = cudaFuncSetAttribute(fn, attr, value);
  if (err == cudaSuccess) have = value;
  return err;
}

// Launches kern<<<grid, block, smem, stream>>>(args...) through cudaLaunchKernelEx, which
// returns the launch's own error (no cudaGetLastError, which could report an earlier one).
template <typename... KernelArgs, typename... Args>
inline cudaError_t launch_ex(void (*kern)(KernelArgs...), dim3 grid, dim3 block, size_t smem,
                             cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  return cudaLaunchKernelEx(&cfg, kern, std::forward<Args>(args)...);
}

// Blocks of `threads` threads and `smem` dynamic shared bytes that fit an SM at once for kernel
// fn on `device` (the current one), queried once per (fn, device, smem) and remembered.
inline cudaError_t blocks_per_sm_once(const void* fn, int device, int threads, size_t smem,
                                      int* out) {
  static std::mutex mu;
  static std::map<std::pair<std::pair<const void*, int>, size_t>, int> known;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(std::make_pair(fn, device), smem);
  auto hit = known.find(key);
  if (hit == known.end()) {
    int n = 0;
    const cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, threads, smem);
    if (err != cudaSuccess) return err;
    hit = known.emplace(key, n).first;
  }
  *out = hit->second;
  return cudaSuccess;
}

}  // namespace fastconv
