// The multi-channel kernel's grid model: which tile (W'x x M' = 128x64, 64x64, 32x64) and which
// split of the channel reduction over a thread-block cluster.  The SAME model as
// jax_fastconv/planner.py (docstring item 8, _mc_grid_cost; constants MC_TILE_COST,
// MC_SPLIT_STEPS, MC_FEW_BLOCKS_COST, fitted on an H200: benchmarks/fit_grid_model.py):
//   cost = c_tile * ceil(tiles * cs / sms) * (ceil(steps / cs) + s0_tile [cs > 1]) * W'x / 128
//          * f(min(ceil(tiles * cs / sms), b_tile)),  cs in {1, 2, 4, 8, 16}.
// Host-only arithmetic (no CUDA): tests/test_grid_model.py checks it against the planner.
#pragma once

namespace fastconv {
namespace mc {

// The kernel's tiles by index (W'x = BM pixels, M' = BN filters); 0: 128x128, not on the grid
// model's menu.  multi_channel.cu launches by these too.
constexpr int kTileBM[4] = {128, 128, 64, 32};
constexpr int kTileBN[4] = {128, 64, 64, 64};
constexpr int kGridBlocksPerSM[4] = {2, 3, 4, 4};            // the planner's residency on sm_90
constexpr int kGridSplits[5] = {1, 2, 4, 8, 16};
// The fitted constants by tile index (MC_TILE_COST, MC_SPLIT_STEPS, MC_FEW_BLOCKS_COST), and
// their *_TC twins for the tensor-core instances: layers with >= kGridTensorCoreMinTaps taps
// whose plan asks for them (MC_TENSOR_CORE_MIN_TAPS).
struct GridConstants {
  double tile_cost[4], split_steps[4], few_blocks_cost1, few_blocks_cost2;
};
constexpr GridConstants kGridFFMA{{1.0, 1.0, 1.24, 1.48}, {4.7, 4.7, 2.9, 2.2}, 1.38, 1.12};
constexpr GridConstants kGridTC{{1.0, 1.0, 1.07, 1.38}, {4.1, 4.1, 3.0, 3.0}, 1.50, 1.07};
constexpr int kGridTensorCoreMinTaps = 9;

inline long long cdiv(long long a, long long b) { return (a + b - 1) / b; }

inline double grid_cost(long long tiles, long long steps, int tile, int cs, int sms,
                        bool tc = false) {
  const GridConstants& k = tc ? kGridTC : kGridFFMA;
  const long long per_sm = cdiv(tiles * cs, sms);
  const double rank = (double)cdiv(steps, cs) + (cs > 1 ? k.split_steps[tile] : 0.0);
  const long long conc = per_sm < kGridBlocksPerSM[tile] ? per_sm : kGridBlocksPerSM[tile];
  const double few = conc == 1 ? k.few_blocks_cost1 : conc == 2 ? k.few_blocks_cost2 : 1.0;
  return k.tile_cost[tile] * (double)per_sm * rank * kTileBM[tile] / 128.0 * few;
}

struct GridPick {
  int tile;  // 1: 128x64, 2: 64x64, 3: 32x64
  int cs;
};

// The least cost over tiles 1..3 (only_tile >= 1: that tile alone) and the splits allowed
// (tc: the tensor-core constants):
// cs <= max_split[tile] (the device's cluster limit) and cs <= steps.  Ties: the larger tile,
// then the smaller split (the planner's order).  P output pixels, M filters (M' = 64).
inline GridPick grid_pick(long long P, long long M, long long steps, int sms,
                          const int max_split[4], int only_tile, bool tc = false) {
  GridPick best{only_tile >= 1 ? only_tile : 1, 1};
  double best_cost = -1;
  for (int t = 1; t <= 3; ++t) {
    if (only_tile >= 1 && t != only_tile) continue;
    const long long tiles = cdiv(P, kTileBM[t]) * cdiv(M, kTileBN[t]);
    for (int cs : kGridSplits) {
      if (cs > max_split[t] || cs > steps) continue;
      const double c = grid_cost(tiles, steps, t, cs, sms, tc);
      if (best_cost < 0 || c < best_cost) {
        best = GridPick{t, cs};
        best_cost = c;
      }
    }
  }
  return best;
}

}  // namespace mc
}  // namespace fastconv
