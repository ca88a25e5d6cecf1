"""Fit the planner's split-through-global-memory constants (MC_GLOBAL_SPLIT_STEPS_TC,
MC_GLOBAL_SPLIT_COST_TC) to a driver sweep: for each layer the model picks the least-cost variant
among the cluster plan and the global (tile, ranks) variants; the fit minimises the geometric
mean of picked / best measured time (then its worst case) over a grid of constants.

    python3 benchmarks/fit_split_global.py benchmarks/results/sweeps/split-global-sweep-*.txt
"""
from __future__ import annotations

import collections
import itertools
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from jax_fastconv import planner as pl  # noqa: E402

N_SM = 132
BLOCKS = {128: 3, 64: 4, 32: 4}   # tensor-core instances at S = 64 B (planner residency, H200)


def load(paths):
    """{(N, C, HW, K, layout): {variant: us}}; variants 'g_<W'x>_<ranks>' and 'c_<W'x>_<cs>'."""
    d = collections.defaultdict(dict)
    for path in paths:
        for line in open(path):
            if line.startswith("#") or not line.strip():
                continue
            t = line.split()
            us = float(t[t.index("us") - 1])
            key = (int(t[3][1:]), int(t[4][1:]), int(t[5].split("x")[0]), int(t[7][1:]), t[2][:4])
            v = t[0]
            if v.startswith("planned"):
                v = f"c_{int(t[8].split('x')[0])}_{int(t[8].split('cs')[1].split('+')[0])}"
            d[key][v] = min(us, d[key].get(v, math.inf))
    return d


def cost(layer, variant, steps_g, factor):
    N, C, HW, K, _ = layer
    kind, wx, cs = variant.split("_")
    wx, cs = int(wx), int(cs)
    OH = HW - K + 1
    tiles = -(-N * OH * OH // wx) * -(-C // 64)
    steps = -(-C // 16) * K * K
    if kind == "c":
        return pl._mc_grid_cost(tiles, steps, wx, cs, BLOCKS[wx], N_SM, tc=True)
    return factor * pl._mc_grid_cost(tiles, steps, wx, cs, BLOCKS[wx], N_SM,
                                     split_steps=steps_g, tc=True)


def evaluate(d, steps_g, factor):
    logs, worst = [], 1.0
    for layer, r in d.items():
        pick = min(r, key=lambda v: cost(layer, v, steps_g, factor))
        ratio = r[pick] / min(r.values())
        logs.append(math.log(ratio))
        worst = max(worst, ratio)
    return math.exp(sum(logs) / len(logs)), worst


def fit(paths):
    d = load(paths)
    grid = (0, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24)
    best = None
    for a, b, c in itertools.product(grid, grid, grid):
        for f in (0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0, 1.1):
            e = evaluate(d, {128: a, 64: b, 32: c}, f)
            if best is None or e < best[0]:
                best = (e, {128: a, 64: b, 32: c}, f)
    return d, best


if __name__ == "__main__":
    d, (e, steps_g, f) = fit(sys.argv[1:])
    print(f"{len(d)} layers: MC_GLOBAL_SPLIT_STEPS_TC = {steps_g}, MC_GLOBAL_SPLIT_COST_TC = {f}: "
          f"picked / best {e[0]:.4f} geomean, worst {e[1]:.3f}")
    planner_e = evaluate(d, pl.MC_GLOBAL_SPLIT_STEPS_TC, pl.MC_GLOBAL_SPLIT_COST_TC)
    print(f"the planner's constants: {planner_e[0]:.4f} geomean, worst {planner_e[1]:.3f}")
