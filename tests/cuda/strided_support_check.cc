// Host check of cuda/single_channel_strided.h for tests/test_plan_single_channel.py: reads one
// layer per line, "N C H W M KH KW OH OW SH SW PAD_TOP PAD_LEFT", and answers
// "SLAB_FILTERS SUPPORTED" (strided::slab_filters, strided::supported).
#include <cstdio>

#include "single_channel_strided.h"

int main() {
  fastconv::ConvParams p{};
  long long v[13];
  while (std::scanf("%lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld", &v[0],
                    &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11],
                    &v[12]) == 13) {
    p.N = v[0]; p.C = v[1]; p.H = v[2]; p.W = v[3]; p.M = v[4]; p.KH = v[5]; p.KW = v[6];
    p.OH = v[7]; p.OW = v[8]; p.stride_h = v[9]; p.stride_w = v[10];
    p.pad_top = v[11]; p.pad_left = v[12];
    std::printf("%d %d\n", fastconv::strided::slab_filters(p), int(fastconv::strided::supported(p)));
  }
  return 0;
}
