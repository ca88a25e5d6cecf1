// Probe: is a kernel's code fetched cold on every launch? (single-channel notes, round 18)
// Two kernels with the same dynamic instruction count per thread: STRAIGHT runs N unrolled
// steps (N x ~2 instructions of straight-line code, ~N x 32 bytes), LOOP runs the same steps in
// a loop of 16 (a few hundred bytes of code). Each is launched back to back in a CUDA graph
// (as XLA's command buffers run our kernels) with one block of one warp per SM, and timed per
// launch. If the instruction caches keep the code from one launch to the next, both cost the
// same; if every launch fetches its code again, STRAIGHT pays ~(code bytes / 128) line fetches
// from L2 per launch, most of them in sequence.
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o icache_probe icache_probe.cu
#include "probe_timing.cuh"

template <int N, bool STRAIGHT>
__global__ void probe(unsigned* out, unsigned seed) {
  unsigned a = seed ^ threadIdx.x, b = a * 3u + 1u;
  if (STRAIGHT) {
#pragma unroll
    for (int i = 0; i < N; ++i) {  // constants differ per step: no folding into a loop
      a = a * 0x9E3779B1u + (unsigned)i;
      b ^= a >> (i & 15);
    }
  } else {
#pragma unroll 1
    for (int j = 0; j < N / 16; ++j)
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        a = a * 0x9E3779B1u + (unsigned)(16 * j + i);
        b ^= a >> (i & 15);
      }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a ^ b;
}

template <int N, bool STRAIGHT>
int time_kernel(int sms, unsigned* out, cudaStream_t s, float* us) {
  return time_graph(s, 200, 7, [&](int i) { probe<N, STRAIGHT><<<sms, 32, 0, s>>>(out, i); }, us);
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  unsigned* out;
  CK(cudaMalloc(&out, sms * 32 * sizeof(unsigned)));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs; us per launch (median of 7 graphs of 200 launches)\n", prop.name, sms);
  printf("%8s %12s %12s %10s\n", "steps", "straight us", "loop us", "diff us");
#define ROW(N)                                                                     \
  {                                                                                \
    float a = 0, b = 0;                                                            \
    if (time_kernel<N, true>(sms, out, s, &a) || time_kernel<N, false>(sms, out, s, &b)) \
      return 1;                                                                    \
    printf("%8d %12.3f %12.3f %10.3f\n", N, a, b, a - b);                          \
  }
  ROW(16) ROW(64) ROW(256) ROW(512) ROW(1024) ROW(2048) ROW(4096)
  return 0;
}
