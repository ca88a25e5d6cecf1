// Probe: do equal shares of a store-bound one-wave launch finish at different times on
// different SMs, and would handing out work dynamically shorten the launch? (single-channel
// notes, round 19). Output of BYTES (b1 512^2 K3 M32: 510 x 510 x 32 floats = 33.3 MB), written
// with 16-byte streaming stores by one block of 256 threads per SM (the one-wave shape of the
// b1 512^2 launches), rotated over 4 buffers (> L2), launched back to back in a CUDA graph.
//   static:  block b writes the b-th of G equal shares.
//   dynamic: the work is cut into chunks of CHUNK bytes; block b takes chunk b first, then
//            claims chunk gridDim.x + atomicAdd(ctr) (claimed one chunk ahead); the block whose
//            claim is the last possible one (value nchunks - 1) resets the counter for the next
//            launch (the stream orders launches, so nobody claims after it).
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o store_balance_probe store_balance_probe.cu
#include "probe_timing.cuh"

__device__ unsigned g_ctr;
__device__ unsigned long long g_t[2 * 1024];
__device__ unsigned g_sm[1024];

__device__ __forceinline__ void st_cs(float4* p, float4 v) {
  asm volatile("st.global.cs.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v.x), "f"(v.y),
               "f"(v.z), "f"(v.w)
               : "memory");
}
__device__ __forceinline__ void write_range(float4* y, long long v0, long long v1, float s) {
  for (long long v = v0 + threadIdx.x; v < v1; v += blockDim.x)
    st_cs(y + v, make_float4(s, s + 1.f, s + 2.f, float(v)));
}

template <bool TRACE>
__global__ void stat(float4* y, long long nvec, float s) {
  unsigned long long t0 = 0;
  if (TRACE) t0 = globaltimer();
  const long long v0 = nvec * blockIdx.x / gridDim.x, v1 = nvec * (blockIdx.x + 1) / gridDim.x;
  write_range(y, v0, v1, s);
  if (TRACE) {
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned sm;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
      g_t[2 * blockIdx.x] = t0;
      g_t[2 * blockIdx.x + 1] = globaltimer();
      g_sm[blockIdx.x] = sm;
    }
  }
}

__global__ void dyn(float4* y, long long nvec, unsigned nchunks, unsigned cvec, float s) {
  __shared__ unsigned s_next[2];
  unsigned c = blockIdx.x;
  int slot = 0;
  if (threadIdx.x == 0) {
    const unsigned v = atomicAdd(&g_ctr, 1u);
    if (v == nchunks - 1) g_ctr = 0;  // the last claim of this launch
    s_next[0] = gridDim.x + v;
  }
  while (c < nchunks) {
    const long long v0 = (long long)c * cvec, v1 = min(nvec, v0 + cvec);
    write_range(y, v0, v1, s);
    __syncthreads();
    c = s_next[slot];
    if (threadIdx.x == 0 && c < nchunks) {
      const unsigned v = atomicAdd(&g_ctr, 1u);
      if (v == nchunks - 1) g_ctr = 0;
      s_next[slot ^ 1] = gridDim.x + v;
    }
    slot ^= 1;
  }
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const long long bytes = 510LL * 510 * 32 * 4, nvec = bytes / 16;
  float4* y[4];
  for (auto& b : y) CK(cudaMalloc(&b, bytes));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  // one block per SM: ask for more than half the shared memory
  const int smem = 120 * 1024;
  CK(cudaFuncSetAttribute(stat<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(stat<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(dyn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  printf("%s, %d SMs; %.1f MB per launch, us per launch (median of 15 graphs of 40)\n", prop.name,
         sms, bytes / 1e6);
  for (int grid : {128, sms}) {
    float us;
    if (time_graph(s, 40, 15, [&](int i) { stat<false><<<grid, 256, smem, s>>>(y[i & 3], nvec, 1.f); }, &us))
      return 1;
    printf("static  grid %4d: %7.2f us (%.0f GB/s)\n", grid, us, bytes / us / 1e3);
  }
  for (long long chunk : {16LL << 10, 32LL << 10, 64LL << 10, 128LL << 10}) {
    const unsigned cvec = unsigned(chunk / 16), nchunks = unsigned((nvec + cvec - 1) / cvec);
    float us;
    if (time_graph(s, 40, 15, [&](int i) { dyn<<<sms, 256, smem, s>>>(y[i & 3], nvec, nchunks, cvec, 1.f); }, &us))
      return 1;
    printf("dynamic chunk %4lld KB (%u chunks): %7.2f us (%.0f GB/s)\n", chunk >> 10, nchunks, us,
           bytes / us / 1e3);
  }
  // per-block durations of the static launch, and by SM
  for (int grid : {128, sms}) {
    for (int rep = 0; rep < 3; ++rep) {
      stat<true><<<grid, 256, smem, s>>>(y[rep & 3], nvec, 2.f);
      CK(cudaStreamSynchronize(s));
    }
    std::vector<unsigned long long> t(2 * grid);
    std::vector<unsigned> sm(grid);
    CK(cudaMemcpyFromSymbol(t.data(), g_t, 2 * grid * sizeof(unsigned long long)));
    CK(cudaMemcpyFromSymbol(sm.data(), g_sm, grid * sizeof(unsigned)));
    unsigned long long first = ~0ULL, last = 0;
    std::vector<double> d(grid);
    for (int b = 0; b < grid; ++b) {
      first = std::min(first, t[2 * b]);
      last = std::max(last, t[2 * b + 1]);
      d[b] = (t[2 * b + 1] - t[2 * b]) / 1e3;
    }
    std::vector<double> ds = d;
    std::sort(ds.begin(), ds.end());
    printf("static grid %d trace: span %.2f us; block duration min %.2f p10 %.2f p50 %.2f p90 %.2f max %.2f\n",
           grid, (last - first) / 1e3, ds[0], ds[grid / 10], ds[grid / 2], ds[grid * 9 / 10],
           ds[grid - 1]);
    printf("  by smid (us):");
    std::vector<std::pair<unsigned, double>> v;
    for (int b = 0; b < grid; ++b) v.push_back({sm[b], d[b]});
    std::sort(v.begin(), v.end());
    for (auto& e : v) printf(" %u:%.1f", e.first, e.second);
    printf("\n");
  }
  return 0;
}
