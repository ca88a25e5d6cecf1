// Probe: how fast does an SM issue FFMAs, by the shape of the FFMA stream? (single-channel
// notes, round 23). Each kernel keeps 32 independent accumulators per thread (no dependency
// stalls) and runs kIters trips of 800 FFMAs; one block of kThreads per SM (2 warps per
// scheduler, as the batch-1 512^2 launches). Printed: FFMA per SM per ns against 128 x clock.
//   reads1  acc[k] = fma(a, b, acc[k])                    a, b the same in consecutive FFMAs
//   reads2  acc[k] = fma(a[k % 8], b, acc[k])             b shared by consecutive FFMAs
//   reads3  acc[k] = fma(a[(k + t) % 8], b[(k/8 + t) % 8], acc[k])
//   item    the 8 x 4 register tile's 5x5 taps, acc[i][j] += w[i] * v[j + kw] (compute_item's
//           FFMAs), operands in registers
//   itemlds the item with each tap's 8 weights read from shared memory (two LDS.128)
//   itemrow the item with each filter row's 8 inputs read from shared memory too (two LDS.128
//           per row), as compute_item reads them
//   item64  the item compiled for up to 1024 threads a block (at most 64 registers)
// What ptxas made of each: `cuobjdump -sass ffma_operand_probe | python3 sass_ffma_reads.py`
// (how many FFMAs read all three sources from the register file, no operand-reuse hit).
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o ffma_operand_probe ffma_operand_probe.cu
#include "probe_timing.cuh"

constexpr int kThreads = 256, kIters = 2000;

__device__ __forceinline__ float flip(float x) { return __int_as_float(__float_as_int(x) ^ 1); }

template <int FORM, int MAXT>
__global__ void __launch_bounds__(MAXT) probe(float* out, float seed, int iters) {
  __shared__ float4 sw[25 * 2 + 1], sv[6 * 32];
  if (FORM >= 5) {
    for (int e = threadIdx.x; e < 51; e += blockDim.x) sw[e] = make_float4(seed + e, seed - e, 0.5f * e, 1.f);
    for (int e = threadIdx.x; e < 6 * 32; e += blockDim.x) sv[e] = make_float4(seed * e, 1.f, seed, 0.25f * e);
    __syncthreads();
  }
  float acc[32], a[8], b[8];
#pragma unroll
  for (int k = 0; k < 32; ++k) acc[k] = 0.f;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    a[k] = seed * (k + 1) + threadIdx.x;
    b[k] = seed - 0.5f * k + blockIdx.x + 1e-3f * threadIdx.x;  // per lane: no uniform registers
  }
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int t = 0; t < 25; ++t) {
#pragma unroll
      for (int k = 0; k < 32; ++k) {
        if (FORM == 1) acc[k] = fmaf(a[t % 8], b[t % 8], acc[k]);
        if (FORM == 2) acc[k] = fmaf(a[k % 8], b[t % 8], acc[k]);
        if (FORM == 3) acc[k] = fmaf(a[(k + t) % 8], b[(k / 8 + t) % 8], acc[k]);
        if (FORM == 4) acc[k] = fmaf(a[k / 4], b[k % 4 + t % 5], acc[k]);  // i = k/4, j = k%4, kw = t%5
      }
      if (FORM >= 5) {
        const int o = it & 1;  // a trip-dependent address: the loads stay in the loop
        const float4 w0 = sw[2 * t + o], w1 = sw[2 * t + 1 + o];
        const float w[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
        if (FORM == 6 && t % 5 == 0) {  // a new input row per filter row (compute_item's window)
          const float4 v0 = sv[(t / 5 + o) * 32 + (threadIdx.x & 31) % 16 * 2];
          const float4 v1 = sv[(t / 5 + o) * 32 + (threadIdx.x & 31) % 16 * 2 + 1];
          b[0] = v0.x; b[1] = v0.y; b[2] = v0.z; b[3] = v0.w; b[4] = v1.x; b[5] = v1.y; b[6] = v1.z; b[7] = v1.w;
        }
#pragma unroll
        for (int k = 0; k < 32; ++k) acc[k] = fmaf(w[k / 4], b[k % 4 + t % 5], acc[k]);
      }
    }
#pragma unroll
    for (int k = 0; k < 8; ++k) { a[k] = flip(a[k]); b[k] = flip(b[k]); }
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 32; ++k) s += acc[k];
  if (s == 1.2345f) out[0] = s;  // never true: keeps the sums live
}

template <int FORM, int MAXT = kThreads>
int measure(const char* name, float* out, int sms, double peak) {
  return report_fma_rate(name, 800.0 * kIters * kThreads, peak, [&](cudaStream_t s) {
    probe<FORM, MAXT><<<sms, kThreads, 0, s>>>(out, 1.f, kIters);
  });
}

int main() {
  float* out = nullptr;
  int sms = 0;
  double peak = 0;
  if (fma_probe_setup(&out, &sms, &peak, kThreads)) return 1;
  return measure<1>("reads1", out, sms, peak) || measure<2>("reads2", out, sms, peak) ||
         measure<3>("reads3", out, sms, peak) || measure<4>("item", out, sms, peak) ||
         measure<5>("itemlds", out, sms, peak) || measure<6>("itemrow", out, sms, peak) || measure<4, 1024>("item64", out, sms, peak);
}
