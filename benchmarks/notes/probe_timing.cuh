// Shared by the launch probes of this folder (icache_probe.cu, param_probe.cu,
// store_balance_probe.cu, ffma_operand_probe.cu, dmma_probe.cu, store_mma_probe.cu,
// sc_wgmma_toeplitz.cu): a CUDA error check that returns 1 from main-like functions, the
// in-kernel %globaltimer, and the time of one launch as XLA's command buffers run our kernels:
// `launches` launches captured back to back in a CUDA graph, the graph timed between events
// `reps` times, the median per launch; for the FMA-rate probes, the FP32 peak and a rate report.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#define CK(x)                                                                            \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      printf("CUDA error %s at line %d\n", cudaGetErrorString(e_), __LINE__);            \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

// The GPU's nanosecond clock (%globaltimer), for in-kernel timelines.
__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// launch(i) enqueues launch i on stream s; *us: median time per launch.
template <typename F>
int time_graph(cudaStream_t s, int launches, int reps, F launch, float* us) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < launches; ++i) launch(i);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> t;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(e0, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(1000.f * ms / launches);
  }
  std::sort(t.begin(), t.end());
  *us = t[t.size() / 2];
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  return 0;
}

// The SM count and the FP32 FMA peak (128 FMAs a clock per SM), in FMA per SM per ns; printed.
inline int fp32_peak(int* sms, double* peak) {
  int khz = 0;
  CK(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  *peak = 128.0 * khz / 1e6;
  printf("%d SMs, %d MHz: FP32 peak %.0f FMA/SM/ns\n", *sms, khz / 1000, *peak);
  return 0;
}

// An FMA-rate probe's start: a 4-byte output buffer (for sums kept live), the SM count and peak.
inline int fma_probe_setup(float** out, int* sms, double* peak, int threads_per_sm) {
  CK(cudaMalloc(out, 4));
  if (fp32_peak(sms, peak)) return 1;
  printf("%d threads per SM\n", threads_per_sm);
  return 0;
}

// One launch(stream) timed as time_graph does (7 replays, the median); prints its FMA rate per
// SM (fma_per_sm FMAs on each SM) against `peak` (fp32_peak).
template <typename F>
int report_fma_rate(const char* name, double fma_per_sm, double peak, F launch) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  float us = 0.f;
  if (time_graph(s, 1, 7, [&](int) { launch(s); }, &us)) return 1;
  const double rate = fma_per_sm / (us * 1e3);
  printf("%-14s %9.1f us  %6.1f FMA/SM/ns  %5.1f%% of the FP32 peak\n", name, us, rate, 100 * rate / peak);
  CK(cudaStreamDestroy(s));
  return 0;
}
