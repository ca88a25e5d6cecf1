// Probe (round 39): does the H200 write b1 512^2 K5 M32's output faster when the CTAs in flight
// together write one dense stretch of each plane, rather than each CTA its own run of segments?
// 32 planes x 1008 segments x 256 floats (33.0 MB; b1 512^2 K5 NCHW is 32 x 508^2 = 33.0 MB),
// one block of 256 threads (2 "warpgroups") per SM, 8 segments per block (127 blocks, as the
// wgmma kernel's one-wave launch [8, ...]); round k, warpgroup w writes segment s(k, w):
//   own:   s = 8 b + 2 k + w          (today's order: a block's segments consecutive)
//   rr:    s = (2 k + w) * G + b      (round-robin: round k's segments are one dense stretch)
// and each segment as NHWC (one 32 KB run) or NCHW (32 runs of 1 KB, one per plane, a warp's
// store = 512 contiguous bytes of one filter). Rotated over 4 buffers (> L2), graph timing.
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o p store_footprint_probe.cu
#include "probe_timing.cuh"

constexpr int kSegs = 1008, kSeg = 256, kPlanes = 32, kSpt = 8;

__device__ __forceinline__ void st_cs(float4* p, float4 v) {
  asm volatile("st.global.cs.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v.x), "f"(v.y),
               "f"(v.z), "f"(v.w)
               : "memory");
}

template <bool RR, bool PLANES>
__global__ void __launch_bounds__(256) writer(float* y, float s0, int delay) {
  const int w = threadIdx.x / 128, l = threadIdx.x % 128, G = gridDim.x;
  for (int k = 0; k < kSpt / 2; ++k) {
    const int s = RR ? (2 * k + w) * G + blockIdx.x : kSpt * blockIdx.x + 2 * k + w;
    if (delay) {  // a stand-in for the segment's MMAs
      const long long t0 = clock64();
      while (clock64() - t0 < delay) {}
    }
    if (s >= kSegs) continue;
    const float4 v = make_float4(s0, s0 + 1.f, float(s), float(l));
#pragma unroll 4
    for (int i = 0; i < 16; ++i) {  // 16 x 128 float4 = 32 KB per segment
      float* p;
      if (PLANES) {  // warp wq = l / 32 writes filters 4 wq + (i % 4) * 16 ... one 512 B half
        const int f = (l / 32) + 4 * (i / 2), half = i % 2;
        p = y + (long long)f * kSegs * kSeg + (long long)s * kSeg + half * 128 + 4 * (l % 32);
      } else {
        p = y + (long long)s * kSeg * kPlanes + (i * 128 + l) * 4;
      }
      st_cs(reinterpret_cast<float4*>(p), v);
    }
  }
}

int main() {
  const long long bytes = 4LL * kSegs * kSeg * kPlanes;
  float* y[4];
  for (auto& b : y) CK(cudaMalloc(&b, bytes));
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  const int grid = (kSegs + kSpt - 1) / kSpt, smem = 120 * 1024;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s: %.1f MB per launch, grid %d x 256, us per launch (median of 15 graphs of 40)\n",
         prop.name, bytes / 1e6, grid);
  auto run = [&](auto kern, const char* name, int delay) -> int {
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    float us;
    if (time_graph(st, 40, 15, [&](int i) { kern<<<grid, 256, smem, st>>>(y[i & 3], 1.f, delay); }, &us))
      return 1;
    printf("%-12s delay %5d: %7.2f us (%.0f GB/s)\n", name, delay, us, bytes / us / 1e3);
    return 0;
  };
  for (int pass = 0; pass < 2; ++pass)
    for (int delay : {0, 2000, 4000}) {
      if (run(writer<false, false>, "own NHWC", delay) || run(writer<true, false>, "rr NHWC", delay) ||
          run(writer<false, true>, "own NCHW", delay) || run(writer<true, true>, "rr NCHW", delay))
        return 1;
    }
  return 0;
}
