// Host check of cuda/single_channel_strided.h for tests/test_plan_single_channel.py: reads one
// layer per line, "N C H W M KH KW OH OW SH SW PAD_TOP PAD_LEFT Y_SN Y_SC Y_SH Y_SW SMS" (the
// output's element strides, the device's SMs), and answers "SLAB_FILTERS SUPPORTED
// FILTERS_PER_THREAD" (strided::slab_filters, strided::supported, strided::filters_per_thread
// of an aligned output).
#include <cstdio>

#include "single_channel_strided.h"

int main() {
  fastconv::ConvParams p{};
  long long v[18];
  for (;;) {
    int got = 0;
    for (long long& x : v) got += std::scanf("%lld", &x) == 1;
    if (got != 18) break;
    p.N = v[0]; p.C = v[1]; p.H = v[2]; p.W = v[3]; p.M = v[4]; p.KH = v[5]; p.KW = v[6];
    p.OH = v[7]; p.OW = v[8]; p.stride_h = v[9]; p.stride_w = v[10];
    p.pad_top = v[11]; p.pad_left = v[12];
    p.y_sn = v[13]; p.y_sc = v[14]; p.y_sh = v[15]; p.y_sw = v[16];
    const int mb = fastconv::strided::slab_filters(p);
    const bool ok = fastconv::strided::supported(p);  // (filters per thread only where it runs)
    std::printf("%d %d %d\n", mb, int(ok),
                ok ? fastconv::strided::filters_per_thread(p, mb, true, int(v[17])) : 0);
  }
  return 0;
}
