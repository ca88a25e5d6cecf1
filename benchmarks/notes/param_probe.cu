// Probe: what does reading a kernel's launch parameters cost per launch? (single-channel notes,
// round 19). A kernel of 132 blocks x 256 threads reads NL parameter words STRIDE bytes apart
// and writes one value per thread, launched back to back in a CUDA graph (as XLA's command
// buffers run our kernels), timed per launch.
//   DIRECT: the words are operands of a dependent IMAD chain (c[0x0][...] operands, as ptxas
//           emits for struct fields with fixed offsets): each cold line stalls the warp's issue.
//   LDC:    the same words read by index (LDC instructions, scoreboarded) all issued first,
//           then combined: cold lines may be fetched together.
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o param_probe param_probe.cu
#include "probe_timing.cuh"

struct Params {
  unsigned v[1024];  // 4 KB: the classic kernel parameter limit
};

template <int NL, int STRIDE, bool LDC>
__global__ void probe(const __grid_constant__ Params p, unsigned* out) {
  constexpr int kStep = STRIDE / 4;
  unsigned a = threadIdx.x + 1u;
  if (LDC) {
    const int zero = int(blockIdx.x >> 30);  // 0 at run time: the index is not a constant
    unsigned w[NL];
#pragma unroll
    for (int i = 0; i < NL; ++i) w[i] = p.v[i * kStep + zero];
#pragma unroll
    for (int i = 0; i < NL; ++i) a = a * w[i] + (unsigned)i;
  } else {
#pragma unroll
    for (int i = 0; i < NL; ++i) a = a * p.v[i * kStep] + (unsigned)i;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

template <int NL, int STRIDE, bool LDC>
int time_kernel(int sms, unsigned* out, const Params& prm, cudaStream_t s, float* us) {
  return time_graph(s, 200, 9, [&](int) { probe<NL, STRIDE, LDC><<<sms, 256, 0, s>>>(prm, out); },
                    us);
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  unsigned* out;
  CK(cudaMalloc(&out, sms * 256 * sizeof(unsigned)));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  Params prm;
  for (int i = 0; i < 1024; ++i) prm.v[i] = 2u * i + 3u;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs; us per launch (median of 9 graphs of 200 launches), %d x 256 threads\n",
         prop.name, sms, sms);
  printf("%6s %8s %12s %12s\n", "words", "stride B", "direct us", "ldc us");
#define ROW(NL, ST)                                                                     \
  {                                                                                     \
    float a = 0, b = 0;                                                                 \
    if (time_kernel<NL, ST, false>(sms, out, prm, s, &a) ||                             \
        time_kernel<NL, ST, true>(sms, out, prm, s, &b))                                \
      return 1;                                                                         \
    printf("%6d %8d %12.3f %12.3f\n", NL, ST, a, b);                                    \
  }
  ROW(1, 4) ROW(8, 4) ROW(16, 4)
  ROW(2, 64) ROW(4, 64) ROW(8, 64) ROW(16, 64) ROW(32, 64) ROW(60, 64)
  ROW(4, 128) ROW(8, 128) ROW(16, 128) ROW(30, 128)
  ROW(4, 256) ROW(8, 256) ROW(15, 256)
  ROW(1, 4) ROW(16, 64)
  return 0;
}
