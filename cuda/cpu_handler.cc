// CPU FFI handler: the direct convolution in C++ (double accumulation), any layout/stride.
// Output rows (n, m, oh) are spread over XLA's intra-op thread pool; every output is summed
// in the same order (c, kh, kw) whatever the threads, so the result is the same bits.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "ffi_conv_attrs.h"

namespace fastconv {
namespace {

// First and one-past-last filter tap k with 0 <= o*stride + k - pad < extent.
inline void TapRange(int64_t o, int64_t stride, int64_t pad, int64_t extent, int64_t k_size,
                     int64_t* k0, int64_t* k1) {
  const int64_t base = o * stride - pad;
  *k0 = std::max<int64_t>(0, -base);
  *k1 = std::min<int64_t>(k_size, extent - base);
}

// First and one-past-last output column o whose tap k lands in the map:
// 0 <= o*stride + k - pad < extent (the same pairs (o, k) as TapRange, seen from k).
inline void ColumnRange(int64_t k, int64_t stride, int64_t pad, int64_t extent, int64_t n_out,
                        int64_t* o0, int64_t* o1) {
  const int64_t lo = pad - k, hi = extent - 1 + pad - k;   // lo <= o*stride <= hi
  *o0 = lo <= 0 ? 0 : (lo + stride - 1) / stride;
  *o1 = hi < 0 ? 0 : std::min<int64_t>(n_out, hi / stride + 1);
}

// Output row (n, m, oh): a tap at a time over the whole row (the inner loop runs along ow,
// contiguous for NCHW input at stride 1), each of the OW sums in the order c, kh, kw.
void ConvRow(const ConvParams& p, const float* x, const float* w, float* y, int64_t row,
             double* acc) {
  const int64_t oh = row % p.OH, m = (row / p.OH) % p.M, n = row / (p.OH * p.M);
  std::fill(acc, acc + p.OW, 0.0);
  int64_t kh0, kh1;
  TapRange(oh, p.stride_h, p.pad_top, p.H, p.KH, &kh0, &kh1);
  const int64_t step = p.stride_w * p.x_sw;
  for (int64_t c = 0; c < p.C; ++c) {
    const float* xc = x + n * p.x_sn + c * p.x_sc;
    const float* wc = w + m * p.w_so + c * p.w_si;
    for (int64_t kh = kh0; kh < kh1; ++kh) {
      const float* x_row = xc + (oh * p.stride_h - p.pad_top + kh) * p.x_sh;
      for (int64_t kw = 0; kw < p.KW; ++kw) {
        int64_t o0, o1;
        ColumnRange(kw, p.stride_w, p.pad_left, p.W, p.OW, &o0, &o1);
        if (o0 >= o1) continue;
        const double wv = static_cast<double>(wc[kh * p.w_sh + kw * p.w_sw]);
        const float* xs = x_row + (o0 * p.stride_w - p.pad_left + kw) * p.x_sw;
        double* a = acc + o0;
        const int64_t len = o1 - o0;
        if (step == 1) {
          for (int64_t i = 0; i < len; ++i) a[i] += static_cast<double>(xs[i]) * wv;
        } else {
          for (int64_t i = 0; i < len; ++i) a[i] += static_cast<double>(xs[i * step]) * wv;
        }
      }
    }
  }
  float* y_row = y + n * p.y_sn + m * p.y_sc + oh * p.y_sh;
  for (int64_t ow = 0; ow < p.OW; ++ow) y_row[ow * p.y_sw] = static_cast<float>(acc[ow]);
}

// Rows handed out in chunks to whoever asks: the caller and the pool's tasks alike. The caller
// waits only for tasks that took a chunk, never for one that has not started, so a busy pool
// cannot deadlock it; a task that starts after the last chunk touches nothing but this state.
struct RowQueue {
  ConvParams p;
  const float* x;
  const float* w;
  float* y;
  int64_t rows, chunk;
  std::atomic<int64_t> next{0};
  std::mutex mu;
  std::condition_variable done;
  int64_t working = 0;   // guarded by mu

  void Work() {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++working;
    }
    std::vector<double> acc(p.OW);
    for (int64_t r0; (r0 = next.fetch_add(chunk)) < rows;)
      for (int64_t r = r0; r < std::min(rows, r0 + chunk); ++r) ConvRow(p, x, w, y, r, acc.data());
    std::lock_guard<std::mutex> lock(mu);
    if (--working == 0) done.notify_all();
  }
};

// Below this many multiply-adds one thread does it all (tasks cost more than they save).
constexpr int64_t kMinParallelMacs = 1 << 20;

void DirectConvCpu(ffi::ThreadPool pool, const ConvParams& p, const float* x, const float* w,
                   float* y) {
  const int64_t rows = p.N * p.M * p.OH;
  const int64_t macs = rows * p.OW * p.C * p.KH * p.KW;
  const int64_t threads = macs < kMinParallelMacs ? 1 : std::max<int64_t>(1, pool.num_threads());
  auto q = std::make_shared<RowQueue>();
  q->p = p;
  q->x = x;
  q->w = w;
  q->y = y;
  q->rows = rows;
  q->chunk = std::max<int64_t>(1, rows / (8 * threads));   // ~8 chunks per thread: balance
  for (int64_t t = 1; t < std::min(threads, rows); ++t) pool.Schedule([q] { q->Work(); });
  q->Work();
  std::unique_lock<std::mutex> lock(q->mu);
  q->done.wait(lock, [&] { return q->working == 0; });
}

ffi::Error ConvCpuImpl(ffi::ThreadPool pool, ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> w,
                       ffi::ResultBuffer<ffi::F32> y, I64Span dims, I64Span conv, I64Span xs,
                       I64Span ws, I64Span ys, I64Span plan) {
  ConvParams p;
  ffi::Error err = DecodeConvParams(x, w, y, dims, conv, xs, ws, ys, plan, &p);
  if (err.failure()) return err;
  DirectConvCpu(pool, p, x.typed_data(), w.typed_data(), y->typed_data());
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(ConvCpu, ConvCpuImpl,
                              BindConvAttrs(ffi::Ffi::Bind()
                                                .Ctx<ffi::ThreadPool>()
                                                .Arg<ffi::Buffer<ffi::F32>>()
                                                .Arg<ffi::Buffer<ffi::F32>>()
                                                .Ret<ffi::Buffer<ffi::F32>>()));

}  // namespace fastconv
