// Launchers of the CUDA convolution kernels, one per kernel family (one .cu file each).
// Each returns the first CUDA error it met (launch or configuration) and never syncs,
// so the FFI handler stays command-buffer compatible. y is fully written by every launcher.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "conv_params.h"

namespace fastconv {

// direct_conv.cu: the straightforward kernel, any shape/stride/layout (the fallback path).
cudaError_t launch_direct(const ConvParams& p, const float* x, const float* w, float* y,
                          cudaStream_t stream);

// single_channel.cu: paper section 3.1 (requires C == 1, stride 1). A plan of division 3
// runs the 1x1 kernel below, one of division 4 the strided kernel.
cudaError_t launch_single_channel(const ConvParams& p, const float* x, const float* w, float* y,
                                  cudaStream_t stream);

// single_channel_pointwise.cu: the single-channel 1x1 kernel (C == 1, KH == KW == 1, stride 1;
// no staging) and the layers it runs.
bool single_channel_pointwise_supported(const ConvParams& p);
cudaError_t launch_single_channel_pointwise(const ConvParams& p, const float* x, const float* w,
                                            float* y, cudaStream_t stream);

// single_channel_strided.cu: the single-channel kernel for strides > 1 (C == 1; plan division
// 4) and the layers it runs.
bool single_channel_strided_supported(const ConvParams& p);
cudaError_t launch_single_channel_strided(const ConvParams& p, const float* x, const float* w,
                                          float* y, cudaStream_t stream);

// single_channel_mma.cu: the single-channel kernel on the TF32 tensor cores at float32 accuracy
// (3xTF32; C == 1, stride 1, 2 to 64 taps, sm_80+; plan division 5, tile MB = plan[4] filters x
// RB = plan[5] rows) and the layers and tiles it runs.
bool single_channel_mma_supported(const ConvParams& p);
cudaError_t launch_single_channel_mma(const ConvParams& p, const float* x, const float* w,
                                      float* y, cudaStream_t stream);
// The launch p's plan resolves to: {RB, MB, grid, shared bytes, store order, k-steps}.
cudaError_t single_channel_mma_config(const ConvParams& p, const float* y, long long out[6]);

// single_channel_wgmma.cu: the single-channel kernel as a 3xTF32 wgmma GEMM over a Toeplitz
// view of the staged band (C == 1, stride 1, KH and KW <= 5, M % 32 == 0, the output's filters
// contiguous; sm_90a, built where the architectures include 90; plan division 6, SPT = plan[5]
// segments per CTA, plan[6] & 1 staggered start, plan[6] & 2 A from registers, plan[7] / 128
// warpgroups) and the layers and plans it runs.
bool single_channel_wgmma_supported(const ConvParams& p);
cudaError_t launch_single_channel_wgmma(const ConvParams& p, const float* x, const float* w,
                                        float* y, cudaStream_t stream);
// The launch p's plan resolves to: {CTAs, shared bytes per CTA}.
cudaError_t single_channel_wgmma_config(const ConvParams& p, long long out[2]);

// multi_channel.cu: paper section 3.2, stride-fixed block (C > 1, any stride). `workspace`
// (may be null) holds the staged HWIO filters plan[7] asks for (filter_staging.cuh) and the
// partial outputs of a split through global memory; without enough of it the filters are read
// in place and the split goes back to a cluster.
cudaError_t launch_multi_channel(const ConvParams& p, const float* x, const float* w, float* y,
                                 float* workspace, int64_t workspace_elems,
                                 cudaStream_t stream);
// Workspace elements launch_multi_channel uses for p's plan: the staged filters and, for a
// split through global memory (plan[7] & 8), one partial output per rank (planner.workspace_elems).
int64_t multi_channel_workspace_elems(const ConvParams& p);

// cuda_handler.cc: the launcher p's plan names (plan[0]: kSingleChannel, kMultiChannel; any
// other method, or a kernel family this build lacks, runs launch_direct). The workspace goes
// to the multi-channel launcher only. Shared by the FFI handler and the plan timer
// (plan_timer.h), so that both run a plan the same way.
cudaError_t launch_planned(const ConvParams& p, const float* x, const float* w, float* y,
                           float* workspace, int64_t workspace_elems, cudaStream_t stream);

// multi_channel_pointwise.cu: the streamed 1x1 kernel for few channels that
// launch_multi_channel runs where plan[7] & 16 asks and these conditions hold (else the
// general kernel runs the plan).
bool mc_pointwise_supported(const ConvParams& p, const void* x, const void* w, const void* y);
cudaError_t launch_mc_pointwise(const ConvParams& p, const float* x, const float* w, float* y,
                                cudaStream_t stream);

}  // namespace fastconv
