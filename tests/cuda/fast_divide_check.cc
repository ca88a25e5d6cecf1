// Host check of cuda/fast_divide.h (the kernels' division by launch constants): for every
// divisor the kernels can see, FastDiv::div(n) == n / d for 0 <= n < 2^31. Exhaustive in n
// below 2^17 for d <= 4096, then the quotient boundaries (k*d - 1, k*d, k*d + 1) up to 2^31,
// then random (d, n) pairs over the whole range. Prints "ok <checks>" or the first mismatch
// and exits 1. Built and run by tests/test_fast_divide.py with the host C++ compiler.
#include <cstdint>
#include <cstdio>

#include "fast_divide.h"

static int check(uint32_t d, uint32_t n, uint64_t* count) {
  const fastconv::FastDiv f(d);
  ++*count;
  if (f.div(n) != n / d) {
    std::printf("mismatch d=%u n=%u got %u want %u\n", d, n, f.div(n), n / d);
    return 1;
  }
  return 0;
}

int main() {
  const uint32_t kMax = 0x7fffffffu;  // n < 2^31: the documented range
  uint64_t count = 0;
  for (uint32_t d = 1; d <= 4096; ++d) {
    for (uint32_t n = 0; n < (1u << 17); ++n)
      if (check(d, n, &count)) return 1;
    for (uint64_t q = (1u << 17) / d; q * d <= kMax; q += 1 + q / 64) {
      const uint64_t base = q * d;
      for (int64_t delta = -1; delta <= 1; ++delta) {
        const int64_t n = int64_t(base) + delta;
        if (n >= 0 && n <= kMax && check(d, uint32_t(n), &count)) return 1;
      }
    }
    if (check(d, kMax, &count)) return 1;
  }
  uint64_t s = 0x9e3779b97f4a7c15ull;  // splitmix64: random divisors and numerators
  for (int i = 0; i < 2000000; ++i) {
    s += 0x9e3779b97f4a7c15ull;
    uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const uint32_t d = uint32_t(z % kMax) + 1, n = uint32_t((z >> 32) % (uint64_t(kMax) + 1));
    if (check(d, n, &count) || check(d, kMax - n % d, &count)) return 1;
  }
  std::printf("ok %llu\n", (unsigned long long)count);
  return 0;
}
