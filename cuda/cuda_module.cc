// The CUDA extension module, built when a CUDA compiler is found: the CUDA FFI handler,
// the device query the planner reads, and the calibration measurements.
#include <stdexcept>
#include <string>

#include <cuda_runtime.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "calibrate.h"
#include "xla/ffi/api/c_api.h"

namespace nb = nanobind;

namespace fastconv {
extern "C" XLA_FFI_Error* ConvCuda(XLA_FFI_CallFrame*);
extern "C" XLA_FFI_Error* ConvCudaGraph(XLA_FFI_CallFrame*);

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

}  // namespace
}  // namespace fastconv

NB_MODULE(_fastconv_cuda, m) {
  m.def("registrations", []() {
    nb::dict d;
    d["fastconv_conv2d_cuda"] = nb::capsule(reinterpret_cast<void*>(fastconv::ConvCuda));
    d["fastconv_conv2d_cuda_graph"] =
        nb::capsule(reinterpret_cast<void*>(fastconv::ConvCudaGraph));
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
  m.attr("cuda_architectures") = FASTCONV_CUDA_ARCHS;
  m.attr("cuda_runtime_version") = CUDART_VERSION;
}
