// Host check of cuda/grid_model.h for tests/test_grid_model.py: reads queries from stdin and
// answers one line each.
//   "cost TILES STEPS TILE CS SMS TC"             -> the model's cost (TC: 1 = tensor-core constants)
//   "pick P M STEPS SMS MAX1 MAX2 MAX3 ONLY TC"   -> "TILE CS" of the least cost
#include <cstdio>
#include <cstring>

#include "grid_model.h"

int main() {
  char kind[8];
  while (std::scanf("%7s", kind) == 1) {
    if (!std::strcmp(kind, "cost")) {
      long long tiles, steps;
      int tile, cs, sms, tc;
      if (std::scanf("%lld %lld %d %d %d %d", &tiles, &steps, &tile, &cs, &sms, &tc) != 6) return 2;
      std::printf("%.9g\n", fastconv::mc::grid_cost(tiles, steps, tile, cs, sms, tc != 0));
    } else if (!std::strcmp(kind, "pick")) {
      long long P, M, steps;
      int sms, only, tc, ms[4] = {1, 1, 1, 1};
      if (std::scanf("%lld %lld %lld %d %d %d %d %d %d", &P, &M, &steps, &sms, &ms[1], &ms[2],
                     &ms[3], &only, &tc) != 9)
        return 2;
      const fastconv::mc::GridPick g = fastconv::mc::grid_pick(P, M, steps, sms, ms, only, tc != 0);
      std::printf("%d %d\n", g.tile, g.cs);
    } else {
      return 2;
    }
  }
  return 0;
}
