// CUDA FFI handler: decodes the attributes and launches the kernel the plan names.
// No syncs or allocations: command-buffer compatible (CUDA graphs); see the registrations.
#include <string>

#include <cuda_runtime.h>

#include "ffi_conv_attrs.h"
#include "kernels.h"

namespace fastconv {

cudaError_t launch_planned(const ConvParams& p, const float* x, const float* w, float* y,
                           float* workspace, int64_t workspace_elems, cudaStream_t stream) {
  switch (p.method()) {
#ifdef FASTCONV_HAVE_SINGLE_CHANNEL
    case kSingleChannel: return launch_single_channel(p, x, w, y, stream);
#endif
#ifdef FASTCONV_HAVE_MULTI_CHANNEL
    case kMultiChannel:
      return launch_multi_channel(p, x, w, y, workspace, workspace_elems, stream);
#endif
    default: return launch_direct(p, x, w, y, stream);
  }
}

namespace {

// `work`: the workspace result (jax_fastconv/primitive.py sizes it from the plan; the
// multi-channel launcher stages the filters there, see filter_staging.cuh). Its contents are
// scratch: XLA discards it.
ffi::Error ConvCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> w,
                        ffi::ResultBuffer<ffi::F32> y, ffi::ResultBuffer<ffi::F32> work,
                        I64Span dims, I64Span conv, I64Span xs, I64Span ws, I64Span ys,
                        I64Span plan) {
  ConvParams p;
  ffi::Error err = DecodeConvParams(x, w, y, dims, conv, xs, ws, ys, plan, &p);
  if (err.failure()) return err;
  const cudaError_t status =
      launch_planned(p, x.typed_data(), w.typed_data(), y->typed_data(), work->typed_data(),
                     static_cast<int64_t>(work->element_count()), stream);
  if (status != cudaSuccess)
    return ffi::Error::Internal(std::string("fastconv CUDA kernel (method ") +
                                std::to_string(p.method()) + "): " + cudaGetErrorString(status));
  return ffi::Error::Success();
}

}  // namespace

auto BindConvCuda() {
  return BindConvAttrs(ffi::Ffi::Bind()
                           .Ctx<ffi::PlatformStream<cudaStream_t>>()
                           .Arg<ffi::Buffer<ffi::F32>>()
                           .Arg<ffi::Buffer<ffi::F32>>()
                           .Ret<ffi::Buffer<ffi::F32>>()     // y
                           .Ret<ffi::Buffer<ffi::F32>>());   // workspace
}

// Two registrations of one handler. It is command-buffer compatible (no syncs, no
// allocations); ConvCudaGraph carries the trait and is the default target, so XLA may capture
// the launch into its CUDA graphs (H200, jax 0.11.2, session 5: 1-2.5 us less per call at
// batch 1, large layers unchanged; session 1 had measured the capture 2-3x slower, not
// reproduced since). ConvCuda (no trait) is used with JAX_FASTCONV_CUDA_GRAPHS=0
// (jax_fastconv/primitive.py).
XLA_FFI_DEFINE_HANDLER_SYMBOL(ConvCuda, ConvCudaImpl, BindConvCuda());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ConvCudaGraph, ConvCudaImpl, BindConvCuda(),
                              {ffi::Traits::kCmdBufferCompatible});

}  // namespace fastconv
