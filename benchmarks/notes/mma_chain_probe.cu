// Probe: how fast mma.sync m16n8k8 TF32 runs in the single-channel tensor-core kernel's pattern
// (cuda/single_channel_mma.cu): per warp 4 accumulator tiles, 3 dependent products per tile and
// k-step (3xTF32), KS k-steps per item, operands in registers (no loads, no stores), 256-thread
// blocks, 2 per SM. Variants: TILES independent accumulator tiles per warp (4: the kernel's),
// and SPLIT = 1 sums the two correction products into separate accumulators (8 chains).
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Icuda -o probe benchmarks/notes/mma_chain_probe.cu
//   ./probe     MMA per clock per SM for each variant (H200 microbenchmark of multi-channel notes
//               round 19: 0.57-0.60 with independent MMAs)
#include <cuda_runtime.h>

#include <cstdio>

#include "mma_3xtf32.cuh"

using fastconv::mma_tf32;

template <int TILES, int SPLIT>
__global__ void __launch_bounds__(256, 2) probe(float* out, int items, uint32_t seed) {
  uint32_t a[4], b[2];
#pragma unroll
  for (int k = 0; k < 4; ++k) a[k] = seed * (threadIdx.x + k + 1);
  b[0] = seed ^ threadIdx.x;
  b[1] = seed + threadIdx.x;
  float acc[TILES][4] = {}, acc2[TILES][4] = {};
  for (int it = 0; it < items; ++it) {
#pragma unroll
    for (int s = 0; s < 4; ++s)  // the 5x5 layer's 4 k-steps
#pragma unroll
      for (int prod = 0; prod < 3; ++prod)
#pragma unroll
        for (int t = 0; t < TILES; ++t) {
          if (SPLIT && prod < 2) mma_tf32(acc2[t], a, b);
          else mma_tf32(acc[t], a, b);
        }
    a[0] += 1;  // a new item's operands
  }
  float sum = 0.f;
#pragma unroll
  for (int t = 0; t < TILES; ++t)
#pragma unroll
    for (int k = 0; k < 4; ++k) sum += acc[t][k] + acc2[t][k];
  if (sum == 1.2345e-30f) out[threadIdx.x] = sum;
}

template <int TILES, int SPLIT>
void run(const char* name, int sms, int clock_khz) {
  float* out;
  cudaMalloc(&out, 1024 * sizeof(float));
  const int items = 2000, blocks = 2 * sms;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  probe<TILES, SPLIT><<<blocks, 256>>>(out, 10, 1);
  float best = 1e30f;
  for (int r = 0; r < 5; ++r) {
    cudaEventRecord(e0);
    probe<TILES, SPLIT><<<blocks, 256>>>(out, items, 3 + r);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (ms < best) best = ms;
  }
  const double mmas = double(blocks) * 8 * items * 4 * 3 * TILES;  // 8 warps per block
  const double per_sm_clk = mmas / sms / (best * 1e-3 * clock_khz * 1e3);
  printf("%-44s %8.3f ms  %.3f MMA/clk/SM (at the %d MHz max clock)\n", name, best, per_sm_clk,
         clock_khz / 1000);
  cudaFree(out);
}

int main() {
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  int clk = 0;
  cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
  printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
  run<4, 0>("4 tiles, 3 dependent products (the kernel)", p.multiProcessorCount, clk);
  run<4, 1>("4 tiles, corrections in their own tiles", p.multiProcessorCount, clk);
  run<8, 0>("8 tiles, 3 dependent products", p.multiProcessorCount, clk);
  run<2, 0>("2 tiles, 3 dependent products", p.multiProcessorCount, clk);
  run<1, 0>("1 tile", p.multiProcessorCount, clk);
  return 0;
}
