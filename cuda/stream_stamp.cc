// Stream stamps (the benchmark's "stream span"): a custom call that records a CUDA event on
// the stream XLA runs it on. Two stamps around R convolutions inside one jitted call time them
// on the device as XLA executes them (its CUDA graphs included), without a profiler (under one,
// XLA runs a command buffer's thunks one at a time) and without the call's host-side handling
// of its arguments and results, which the wall clock also counts.
//
// Deliberately not command-buffer compatible: the stamp must run on the stream in sequence,
// between XLA's graphs, and creates its event at first use.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include <cuda_runtime.h>

#include "stream_stamp.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace fastconv {
namespace {

std::mutex g_mutex;
std::map<std::pair<int, int64_t>, cudaEvent_t> g_events;  // (device, slot) -> event

// The event of (device, slot), created at first use. nullptr with *status set on failure.
cudaEvent_t EventFor(int device, int64_t slot, cudaError_t* status) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_events.find({device, slot});
  if (it != g_events.end()) return it->second;
  cudaEvent_t ev = nullptr;
  *status = cudaEventCreate(&ev);   // timing enabled
  if (*status != cudaSuccess) return nullptr;
  g_events[{device, slot}] = ev;
  return ev;
}

cudaEvent_t FindEvent(int device, int64_t slot) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_events.find({device, slot});
  return it == g_events.end() ? nullptr : it->second;
}

ffi::Error StampImpl(cudaStream_t stream, ffi::RemainingArgs, ffi::ResultBuffer<ffi::U32>,
                     int64_t slot) {
  if (slot < 0 || slot >= kStampSlots)
    return ffi::Error::InvalidArgument("fastconv stream stamp: slot " + std::to_string(slot) +
                                       " is outside [0, " + std::to_string(kStampSlots) + ")");
  int device = 0;
  cudaError_t status = cudaGetDevice(&device);
  cudaEvent_t ev = status == cudaSuccess ? EventFor(device, slot, &status) : nullptr;
  if (ev != nullptr) status = cudaEventRecord(ev, stream);
  if (status != cudaSuccess)
    return ffi::Error::Internal(std::string("fastconv stream stamp: ") +
                                cudaGetErrorString(status));
  return ffi::Error::Success();
}

}  // namespace

double stamp_elapsed_us(int64_t first, int64_t last, int device, std::string* error) {
  cudaEvent_t a = FindEvent(device, first), b = FindEvent(device, last);
  if (a == nullptr || b == nullptr) {
    *error = "no stamp recorded in slot " + std::to_string(a == nullptr ? first : last) +
             " on device " + std::to_string(device);
    return -1.0;
  }
  float ms = 0.f;
  cudaError_t status = cudaEventSynchronize(b);
  if (status == cudaSuccess) status = cudaEventElapsedTime(&ms, a, b);
  if (status != cudaSuccess) {
    *error = std::string("cudaEventElapsedTime: ") + cudaGetErrorString(status);
    return -1.0;
  }
  return 1e3 * static_cast<double>(ms);
}

// Operands: any buffers the stamp must follow (ignored); result: a u32 token to order what
// must follow it; attribute `slot`: which event.
XLA_FFI_DEFINE_HANDLER_SYMBOL(StreamStamp, StampImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .RemainingArgs()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Attr<int64_t>("slot"));

}  // namespace fastconv
