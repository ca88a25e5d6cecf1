// Shared by the launch probes of this folder (icache_probe.cu, param_probe.cu,
// store_balance_probe.cu): a CUDA error check that returns 1 from main-like functions, and the
// time of one launch as XLA's command buffers run our kernels: `launches` launches captured
// back to back in a CUDA graph, the graph timed between events `reps` times, the median per launch.
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
