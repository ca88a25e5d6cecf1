// The CUDA extension module, built when a CUDA compiler is found: the CUDA FFI handler,
// the device query the planner reads, the calibration measurements, the device time of a
// convolution under several plans (the autotuner's) and the benchmark's stream stamps.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "calibrate.h"
#include "plan_timer.h"
#include "stream_stamp.h"
#include "xla/ffi/api/c_api.h"

namespace nb = nanobind;

namespace fastconv {
extern "C" XLA_FFI_Error* ConvCuda(XLA_FFI_CallFrame*);
extern "C" XLA_FFI_Error* ConvCudaGraph(XLA_FFI_CallFrame*);
extern "C" XLA_FFI_Error* StreamStamp(XLA_FFI_CallFrame*);

namespace {

void Check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

int AttributeOf(cudaDeviceAttr attr, int ordinal) {
  int value = 0;
  Check(cudaDeviceGetAttribute(&value, attr, ordinal), "cudaDeviceGetAttribute");
  return value;
}

nb::dict DeviceProperties(int ordinal) {
  int count = 0;
  Check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (ordinal < 0 || ordinal >= count)
    throw std::runtime_error("no CUDA device with ordinal " + std::to_string(ordinal) + " (" +
                             std::to_string(count) + " found)");
  cudaDeviceProp prop;
  Check(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
  nb::dict d;
  d["name"] = std::string(prop.name);
  d["major"] = prop.major;
  d["minor"] = prop.minor;
  d["multiProcessorCount"] = prop.multiProcessorCount;
  // CUDA 13 dropped clockRate & co. from cudaDeviceProp: read them as attributes.
  d["clockRate_khz"] = AttributeOf(cudaDevAttrClockRate, ordinal);
  d["memoryClockRate_khz"] = AttributeOf(cudaDevAttrMemoryClockRate, ordinal);
  d["memoryBusWidth"] = prop.memoryBusWidth;
  d["sharedMemPerMultiprocessor"] = prop.sharedMemPerMultiprocessor;
  d["sharedMemPerBlockOptin"] = prop.sharedMemPerBlockOptin;
  d["regsPerMultiprocessor"] = prop.regsPerMultiprocessor;
  d["maxThreadsPerMultiProcessor"] = prop.maxThreadsPerMultiProcessor;
  d["maxThreadsPerBlock"] = prop.maxThreadsPerBlock;
  d["l2CacheSize"] = prop.l2CacheSize;
  return d;
}

using I64s = std::vector<int64_t>;

void CheckLength(const I64s& v, size_t n, const char* name) {
  if (v.size() != n)
    throw std::invalid_argument(std::string("time_plans: ") + name + " must have " +
                                std::to_string(n) + " entries, got " + std::to_string(v.size()));
}

// The arguments as jax_fastconv/primitive.py ffi_attributes(spec, plan) builds them (the
// FFI handler's attributes, ffi_conv_attrs.h), plans as Plan.kernel_attrs.
std::vector<std::vector<double>> TimePlans(const I64s& dims, const I64s& conv, const I64s& xs,
                                           const I64s& ws, const I64s& ys,
                                           const std::vector<I64s>& plans, int rounds,
                                           int ordinal, size_t budget_bytes) {
  CheckLength(dims, 9, "dims");
  CheckLength(conv, 4, "conv");
  CheckLength(xs, 4, "lhs_strides");
  CheckLength(ws, 4, "rhs_strides");
  CheckLength(ys, 4, "out_strides");
  if (plans.empty()) throw std::invalid_argument("time_plans: plans is empty");
  std::vector<PlanAttrs> attrs(plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    if (plans[i].size() != static_cast<size_t>(kPlanLen))
      throw std::invalid_argument("time_plans: plans[" + std::to_string(i) + "] must have " +
                                  std::to_string(kPlanLen) + " entries, got " +
                                  std::to_string(plans[i].size()));
    std::copy(plans[i].begin(), plans[i].end(), attrs[i].begin());
  }
  ConvParams p{};
  assign_conv_params(dims, conv, xs, ws, ys, &p);
  std::vector<std::vector<double>> samples;
  {
    nb::gil_scoped_release release;  // the arguments are C++ values from here on
    samples = time_plans(p, attrs, rounds, ordinal, budget_bytes);
  }
  return samples;
}

constexpr const char* kTimePlansDoc =
    "Device time (CUDA events) of one convolution under each plan: for plans[i], `rounds` "
    "samples of microseconds per launch. dims, conv and the strides are the FFI attributes "
    "(jax_fastconv.primitive.ffi_attributes); each plan is a Plan.kernel_attrs (8 ints). Each "
    "plan's launches run back to back in a CUDA graph, rotating over buffer sets of its own "
    "whose outputs exceed 2x the L2 cache and 6 GiB (within budget_bytes), in interleaved "
    "rounds. "
    "Raises ValueError for malformed arguments and RuntimeError (naming the plan and the "
    "CUDA error) where a plan fails to launch.";

}  // namespace
}  // namespace fastconv

NB_MODULE(_fastconv_cuda, m) {
  m.def("registrations", []() {
    nb::dict d;
    d["fastconv_conv2d_cuda"] = nb::capsule(reinterpret_cast<void*>(fastconv::ConvCuda));
    d["fastconv_conv2d_cuda_graph"] =
        nb::capsule(reinterpret_cast<void*>(fastconv::ConvCudaGraph));
    d["fastconv_stream_stamp"] = nb::capsule(reinterpret_cast<void*>(fastconv::StreamStamp));
    return d;
  });
  m.def("device_count", []() {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
  });
  m.def("device_properties", &fastconv::DeviceProperties, nb::arg("ordinal") = 0);
  m.def("calibrate", [](int ordinal) {
    const fastconv::CalibrationResult r = fastconv::calibrate(ordinal);
    nb::dict d;
    d["latency_cycles"] = r.latency_cycles;
    d["copy_bytes_per_s"] = r.copy_bytes_per_s;
    d["fma_per_s"] = r.fma_per_s;
    d["clock_hz"] = r.clock_hz;
    return d;
  }, nb::arg("ordinal") = 0);
  m.def("time_plans", &fastconv::TimePlans, nb::arg("dims"), nb::arg("conv"),
        nb::arg("lhs_strides"), nb::arg("rhs_strides"), nb::arg("out_strides"),
        nb::arg("plans"), nb::arg("rounds") = 11, nb::arg("ordinal") = 0,
        nb::arg("budget_bytes") = size_t(1) << 30, fastconv::kTimePlansDoc);
  m.def("stamp_elapsed_us", [](int64_t first, int64_t last, int ordinal) {
    std::string error;
    double us;
    {
      nb::gil_scoped_release release;  // waits for the later event
      us = fastconv::stamp_elapsed_us(first, last, ordinal, &error);
    }
    if (us < 0) throw std::runtime_error(error);
    return us;
  }, nb::arg("first"), nb::arg("last"), nb::arg("ordinal") = 0,
        "Microseconds between the stream stamps of slots `first` and `last` on device `ordinal` "
        "(the later waited for); RuntimeError where a slot holds no recorded stamp.");
  m.attr("stamp_slots") = fastconv::kStampSlots;
  m.attr("cuda_architectures") = FASTCONV_CUDA_ARCHS;
#ifdef FASTCONV_HAVE_WGMMA
  m.attr("wgmma_kernels") = true;   // single_channel_wgmma.cu, built for sm_90a
#else
  m.attr("wgmma_kernels") = false;
#endif
  m.attr("cuda_runtime_version") = CUDART_VERSION;
}
