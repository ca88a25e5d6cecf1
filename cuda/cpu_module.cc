// The CPU extension module: always built. Hands out the CPU FFI handler.
#include <nanobind/nanobind.h>

#include "xla/ffi/api/c_api.h"

namespace nb = nanobind;

namespace fastconv {
extern "C" XLA_FFI_Error* ConvCpu(XLA_FFI_CallFrame*);
}

NB_MODULE(_fastconv_cpu, m) {
  m.def("registrations", []() {
    nb::dict d;
    d["fastconv_conv2d_cpu"] = nb::capsule(reinterpret_cast<void*>(fastconv::ConvCpu));
    return d;
  });
}
