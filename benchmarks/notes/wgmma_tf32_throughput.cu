// wgmma m64n64k8 TF32 throughput probe (operands from shared memory through no-swizzle
// descriptors; the values are meaningless: throughput only), for planning a wgmma mainloop of the
// multi-channel kernel (notes: multi_channel.md round 19).
// Build: nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -o /tmp/wgmma \
//          benchmarks/notes/wgmma_tf32_throughput.cu
// H200 (1980 MHz, session 16): 1 warpgroup per SM 287-405 TFLOP/s TF32 (1-4 accumulator chains),
// 2 per SM 453-473 TFLOP/s, i.e. 151-158 TFLOP/s of float32 work as 3xTF32; mma.sync m16n8k8
// measured 0.57-0.60 MMA/clk/SM (~316 TFLOP/s TF32, session 15).
#include <cstdio>
#include <cstdint>
__device__ __forceinline__ uint64_t desc(const void* smem, int lbo, int sbo) {
  uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint64_t d = 0;
  d |= (uint64_t)((a >> 4) & 0x3fff);
  d |= (uint64_t)((lbo >> 4) & 0x3fff) << 16;
  d |= (uint64_t)((sbo >> 4) & 0x3fff) << 32;
  return d;  // swizzle none (bits 62-63 = 0), base offset 0
}
#define ACC32(x) "+f"(x[0]), "+f"(x[1]), "+f"(x[2]), "+f"(x[3]), "+f"(x[4]), "+f"(x[5]), "+f"(x[6]), "+f"(x[7]), \
  "+f"(x[8]), "+f"(x[9]), "+f"(x[10]), "+f"(x[11]), "+f"(x[12]), "+f"(x[13]), "+f"(x[14]), "+f"(x[15]), \
  "+f"(x[16]), "+f"(x[17]), "+f"(x[18]), "+f"(x[19]), "+f"(x[20]), "+f"(x[21]), "+f"(x[22]), "+f"(x[23]), \
  "+f"(x[24]), "+f"(x[25]), "+f"(x[26]), "+f"(x[27]), "+f"(x[28]), "+f"(x[29]), "+f"(x[30]), "+f"(x[31])
__device__ __forceinline__ void wgmma64(float* d, uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
      "%32, %33, p, 1, 1;\n}\n"
      : ACC32(d)
      : "l"(da), "l"(db));
}
template <int CH>
__global__ void __launch_bounds__(128) k(float* out, int iters) {
  __shared__ __align__(128) float sa[64 * 8 * CH], sb[64 * 8 * CH];
  for (int i = threadIdx.x; i < 64 * 8 * CH; i += 128) { sa[i] = i * 1e-3f; sb[i] = i * 2e-3f; }
  __syncthreads();
  float acc[CH][32] = {};
  uint64_t da[CH], db[CH];
  for (int c = 0; c < CH; ++c) { da[c] = desc(sa + c * 512, 128, 256); db[c] = desc(sb + c * 512, 128, 256); }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  for (int i = 0; i < iters; ++i) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int c = 0; c < CH; ++c) { wgmma64(acc[c], da[c], db[c]); wgmma64(acc[c], da[c], db[c]); wgmma64(acc[c], da[c], db[c]); }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  }
  float s = 0;
  for (int c = 0; c < CH; ++c) for (int j = 0; j < 32; ++j) s += acc[c][j];
  if (s == 1.2345f) out[0] = s;
}
template <int CH> void run(int blocks_per_sm, int sms) {
  float* o; cudaMalloc(&o, 4);
  int iters = 2048;
  dim3 grid(sms * blocks_per_sm), block(128);
  k<CH><<<grid, block>>>(o, 8);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); exit(1); }
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  cudaEventRecord(e0); k<CH><<<grid, block>>>(o, iters); cudaEventRecord(e1); cudaEventSynchronize(e1);
  float ms; cudaEventElapsedTime(&ms, e0, e1);
  double flop = double(grid.x) * iters * CH * 3 * 2.0 * 64 * 64 * 8;
  printf("wgmma m64n64k8 tf32: chains %d, blocks/SM %d: %.3f ms, %.1f TFLOP/s tf32 (3xTF32: %.1f fp32-equivalent)\n",
         CH, blocks_per_sm, ms, flop / (ms * 1e-3) / 1e12, flop / 3 / (ms * 1e-3) / 1e12);
  cudaFree(o);
}
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  run<1>(1, sms); run<1>(2, sms); run<2>(1, sms); run<2>(2, sms); run<4>(1, sms); run<4>(2, sms);
  return 0;
}
