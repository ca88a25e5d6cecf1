// Probe: do tensor-core instructions on an SM slow that SM's streaming stores, and through what?
// (single-channel notes, round 26: beside the Toeplitz kernel's wgmmas the SM's stores drain at
// ~3.5 TB/s against ~4.5 TB/s alone, and the SM clock reads ~1.76 GHz against ~1.98.)
// One CTA of 256 threads per SM: warps 0-3 only store (16-byte streaming stores of the CTA's
// share of a 33 MB output, the b1 512^2 M = 32 layers' size), warps 4-7 (one warpgroup) only
// compute, KIND: 1 mma.sync m16n8k8 tf32 with every operand in registers (no shared memory),
// 2 FFMA chains in registers, 3 wgmma m64n128k8 tf32 with both operands in shared memory (6 KB
// read per instruction, as the Toeplitz kernel), 4 the same with A from registers (4 KB read);
// KINDS bit 16: the store data from a shared-memory ring, by ld.shared or by bulk copies (SRC). Per configuration: the time per launch (graph
// of 20 launches over rotating outputs, median of 7 replays), the stores' span (median over
// CTAs of the store warpgroup's first to last issue), and the SM clock (%clock64 over
// %globaltimer across the store warpgroup's work, median over CTAs; on a row without stores
// that span is empty and its clock meaningless).
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Icuda -o store_mma_probe benchmarks/notes/store_mma_probe.cu
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "probe_timing.cuh"
#include "wgmma_tf32.cuh"    // (cuda/, -Icuda) split_tf32, desc, the wgmma shapes
using fastconv::desc;
using fastconv::split_tf32;
using fastconv::wgmma_m64n128k8;
using fastconv::wgmma_rs_m64n128k8;

constexpr int kThreads = 256;

__device__ __forceinline__ void mma_tf32(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// stamps per CTA: [0, 1] store warpgroup first / last issue (globaltimer), [2, 3] kernel entry
// (globaltimer, clock64) of thread 0, [4, 5] the same at the end of thread 0's work.
// SRC: where the store warpgroup's data comes from. 0 registers (a constant); 1 a 32 KB
// shared-memory ring, one 16-byte ld.shared per 16-byte store (as a warp-specialized kernel's
// store warps would read the MMA warps' outputs); 2 the same ring written out by the bulk-copy
// engine (cp.async.bulk, 4 KB per copy, issued by one thread, at most 8 copies unread).
template <int KIND, int SRC = 0>
__global__ void __launch_bounds__(kThreads, 1) probe(float4* __restrict__ y, size_t n4, int iters,
                                                     unsigned long long* st, float* sink) {
  __shared__ __align__(128) float ops[3 * 1024];  // wgmma: A 64 x 8 (2 KB), B 128 x 8 (4 KB)
  __shared__ __align__(128) float4 ring[SRC ? 2048 : 1];
  const int tid = threadIdx.x;
  unsigned long long* s = st + blockIdx.x * 6;
  if (tid == 0) { s[2] = globaltimer(); s[3] = clock64(); }
  if (tid < 128) {  // the store warpgroup: this CTA's contiguous share
    const size_t per = (n4 + gridDim.x - 1) / gridDim.x, b = blockIdx.x * per, e = min(n4, b + per);
    const float4 v = make_float4(1.f, 2.f, 3.f, float(tid));
    if constexpr (SRC > 0) {
      for (int i = tid; i < 2048; i += 128) ring[i] = make_float4(float(i), 1.f, 2.f, 3.f);
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      asm volatile("bar.sync 2, 128;\n" ::: "memory");
    }
    if (tid == 0) s[0] = globaltimer();
    if constexpr (SRC == 0) {
      for (size_t i = b + tid; i < e; i += 128) __stcs(y + i, v);
    } else if constexpr (SRC == 1) {
      for (size_t i = b + tid; i < e; i += 128) __stcs(y + i, ring[(i - b) & 2047]);
    } else if (tid == 0) {
      const uint32_t sring = static_cast<uint32_t>(__cvta_generic_to_shared(ring));
      for (size_t off = b; off < e; off += 256) {  // 256 float4 = 4 KB per copy
        const uint32_t bytes = uint32_t((e - off < 256 ? e - off : 256) * 16);
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(y + off),
                     "r"(sring + uint32_t(((off - b) & 2047) * 16)), "r"(bytes) : "memory");
        asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 7;\n" ::: "memory");
      }
      asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
    }
    if (tid == 0) { s[1] = globaltimer(); s[4] = globaltimer(); s[5] = clock64(); }
    return;
  }
  const int t = tid - 128;
  if constexpr (KIND == 1) {
    uint32_t a[4], bb[2];
    for (int i = 0; i < 4; ++i) a[i] = __float_as_uint(1.f + 0.001f * (t + i));
    for (int i = 0; i < 2; ++i) bb[i] = __float_as_uint(0.5f + 0.001f * (t - i));
    float c[8][4] = {};
    for (int it = 0; it < iters; ++it)
#pragma unroll
      for (int j = 0; j < 8; ++j) mma_tf32(c[j], a, bb);
    float acc = 0.f;
    for (int j = 0; j < 8; ++j) acc += c[j][0] + c[j][1] + c[j][2] + c[j][3];
    if (acc == 1234.5f) sink[t] = acc;
  } else if constexpr (KIND == 2) {
    float c[32];
    for (int j = 0; j < 32; ++j) c[j] = 0.001f * (t + j);
    const float a = 1.0001f, b = 0.999f;
    for (int it = 0; it < iters; ++it)
#pragma unroll
      for (int j = 0; j < 32; ++j) c[j] = fmaf(c[j], a, b);
    float acc = 0.f;
    for (int j = 0; j < 32; ++j) acc += c[j];
    if (acc == 1234.5f) sink[t] = acc;
  } else if constexpr (KIND == 3 || KIND == 4) {
    for (int i = t; i < 3 * 1024; i += 128) ops[i] = __uint_as_float(__float_as_uint(1.f + 0.001f * i) & 0xffffe000u);
    asm volatile("bar.sync 1, 128;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    float d[64] = {};
    const uint64_t da = desc(ops, 128, 256), db = desc(ops + 512, 2048, 128);
    uint32_t a[4];  // KIND 4: A from registers (only B, 4 KB, read from shared memory)
    for (int i = 0; i < 4; ++i) a[i] = __float_as_uint(1.f + 0.001f * (t + i)) & 0xffffe000u;
    for (int it = 0; it < iters; ++it) {
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if constexpr (KIND == 3) wgmma_m64n128k8(d, da, db, 1);
        else wgmma_rs_m64n128k8(d, a, db, 1);
      }
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    }
    float acc = 0.f;
    for (int j = 0; j < 64; ++j) acc += d[j];
    if (acc == 1234.5f) sink[t] = acc;
  }
}

template <int KIND, int SRC = 0>
static int run_kind(const char* name, int sms, float4* ybig, size_t n4, int nrot, const std::vector<int>& iters_list,
                    unsigned long long* dst, float* sink, cudaStream_t s) {
  for (int iters : iters_list)
    for (int stores : {0, 1}) {
      if (!stores && iters == 0) continue;
      const size_t m4 = stores ? n4 : 0;
      float us = 0.f;
      if (time_graph(s, 20, 7, [&](int i) {
            probe<KIND, SRC><<<sms, kThreads, 0, s>>>(ybig + (i % nrot) * n4, m4, iters, dst, sink);
          }, &us))
        return 1;
      // one more launch for the stamps
      CK(cudaMemset(dst, 0, sms * 6 * 8));
      probe<KIND, SRC><<<sms, kThreads, 0, s>>>(ybig, m4, iters, dst, sink);
      CK(cudaStreamSynchronize(s));
      std::vector<unsigned long long> h(sms * 6);
      CK(cudaMemcpy(h.data(), dst, h.size() * 8, cudaMemcpyDeviceToHost));
      std::vector<double> span, mhz;
      for (int b = 0; b < sms; ++b) {
        const unsigned long long* q = &h[b * 6];
        if (stores) span.push_back((q[1] - q[0]) * 1e-3);
        if (q[4] > q[2]) mhz.push_back(1e3 * double(q[5] - q[3]) / double(q[4] - q[2]));
      }
      std::sort(span.begin(), span.end());
      std::sort(mhz.begin(), mhz.end());
      printf("%-22s iters %5d stores %d | %8.2f us per launch | stores' span %6.2f us (%5.2f TB/s) | clock %4.0f MHz\n",
             name, iters, stores, us, span.empty() ? 0.0 : span[span.size() / 2],
             span.empty() ? 0.0 : n4 * 16.0 / (span[span.size() / 2] * 1e6),  // all CTAs' spans overlap
             mhz.empty() ? 0.0 : mhz[mhz.size() / 2]);
      fflush(stdout);
    }
  return 0;
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t bytes = size_t(508) * 508 * 32 * 4, n4 = bytes / 16;  // b1 512^2 K5 M32 output
  const size_t rot = size_t(400) << 20;
  const int nrot = int(rot / bytes);
  float4* ybig;
  unsigned long long* dst;
  float* sink;
  CK(cudaMalloc(&ybig, nrot * bytes));
  CK(cudaMalloc(&dst, sms * 6 * 8));
  CK(cudaMalloc(&sink, 128 * 4));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  printf("%d SMs, %zu-byte output (b1 512^2 K5 M32), one CTA of %d threads per SM\n", sms, bytes, kThreads);
  const int sel = getenv("KINDS") ? atoi(getenv("KINDS")) : 31;  // bit k-1: run KIND k
  if (run_kind<0>("stores only", sms, ybig, n4, nrot, {0}, dst, sink, s)) return 1;
  if ((sel & 1) && run_kind<1>("mma.sync tf32 (regs)", sms, ybig, n4, nrot, {500, 1000, 2000}, dst, sink, s)) return 1;
  if ((sel & 2) && run_kind<2>("ffma (regs)", sms, ybig, n4, nrot, {250, 500, 1000}, dst, sink, s)) return 1;
  if ((sel & 4) && run_kind<3>("wgmma tf32 (smem)", sms, ybig, n4, nrot, {50, 100, 200}, dst, sink, s)) return 1;
  if ((sel & 8) && run_kind<4>("wgmma tf32 RS", sms, ybig, n4, nrot, {50, 100, 200}, dst, sink, s)) return 1;
  if (sel & 16) {  // the store data from shared memory (SRC 1) or by bulk copies (SRC 2)
    if (run_kind<0, 1>("ld.shared stores only", sms, ybig, n4, nrot, {0}, dst, sink, s)) return 1;
    if (run_kind<3, 1>("ld.shared + wgmma SS", sms, ybig, n4, nrot, {100}, dst, sink, s)) return 1;
    if (run_kind<4, 1>("ld.shared + wgmma RS", sms, ybig, n4, nrot, {100}, dst, sink, s)) return 1;
    if (run_kind<0, 2>("bulk stores only", sms, ybig, n4, nrot, {0}, dst, sink, s)) return 1;
    if (run_kind<3, 2>("bulk + wgmma SS", sms, ybig, n4, nrot, {100}, dst, sink, s)) return 1;
    if (run_kind<4, 2>("bulk + wgmma RS", sms, ybig, n4, nrot, {100}, dst, sink, s)) return 1;
  }
  return 0;
}
