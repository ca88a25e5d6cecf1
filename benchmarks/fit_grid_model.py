"""Refit the multi-channel grid model (jax_fastconv/planner.py, docstring item 8) to a sweep.

A sweep times every tile x split on a set of layers with the driver (tests/cuda/
multi_channel_driver.cu --plans <one plan per variant> --one ...), one line per timing:

    w<W'x>c<split> one NHWC/HWIO->NHWC N<n> C<c> <h>x<w> M<m> K<k> <config> <us> us ...

(benchmarks/results/sweeps/grid-sweep-nvidia-h200-20261121-nhwc.txt: 43 paper layers x 26
variants, H200, FFMA; grid-sweep-tc-nvidia-h200-20261121-nhwc.txt: the 3xTF32 tensor-core
instances, 34 K3/K5 paper layers x 13 variants, fitted to the planner's MC_*_TC constants:
a file name with "-tc-" selects those). The fit is least squares in log time of  t = a0 + s * cost(tile, split)  over
the splits the planner considers (MC_SPLITS), with cost = planner._mc_grid_cost and its
constants free; it prints them normalised to the 128x64 tile and how close the model's pick
comes to the best measured variant per layer, for the fitted and for the current constants.
A developer's tool (scipy, which jax depends on; tests/test_grid_model.py checks that the
planner's constants are this fit of the committed sweep):

    python3 benchmarks/fit_grid_model.py benchmarks/results/sweeps/grid-sweep-*-nhwc.txt
"""
from __future__ import annotations

import collections
import math
import re
import sys

from jax_fastconv import planner as pl

LINE = re.compile(r"^w(\d+)c(\d+) one \S+ N(\d+) C(\d+) (\d+)x(\d+) M(\d+) K(\d+) \S+\s+([\d.]+) us")
H200 = pl.PRESETS["h200"]          # the machine the committed sweep ran on
N_SM = H200.sm_count
# the planner's residency (blocks per SM) of the grid tiles (M' = 64, S = 64 B) on that machine
BLOCKS = {Wx: pl._mc_blocks_per_sm(H200, T, regs, pl._mc_shared_bytes(Wx, Mp, Se, st)[1])["b"]
          for Wx, Mp, Se, T, st, regs in pl.MC_CONFIGS if Mp == 64 and Se == 16}


def read(paths):
    rows = []
    for path in paths:
        for line in open(path):
            m = LINE.match(line)
            if m:
                wx, cs, n, c, h, w, mm, k = map(int, m.groups()[:8])
                rows.append(dict(wx=wx, cs=cs, layer=(n, c, h, w, mm, k), us=float(m.group(9))))
    return rows


def shape(layer, wx):
    n, c, h, w, m, k = layer
    tiles = -(-(n * (h - k + 1) * (w - k + 1)) // wx) * -(-m // 64)
    return tiles, -(-c // 16) * k * k            # S = 64 B: the paper layers' C % 16 == 0


def cost(r, p=None, tc=False):
    tiles, steps = shape(r["layer"], r["wx"])
    if r["cs"] > steps or r["cs"] not in pl.MC_SPLITS:
        return None
    kw = {} if p is None else dict(
        tile_cost={128: 1.0, 64: p[0], 32: p[1]}, split_steps={128: p[2], 64: p[3], 32: p[4]},
        few_cost={1: p[5], 2: p[6]})
    return pl._mc_grid_cost(tiles, steps, r["wx"], r["cs"], BLOCKS[r["wx"]], N_SM, tc=tc, **kw)


def picks(rows, p=None, tc=False):
    by = collections.defaultdict(list)
    for r in rows:
        by[r["layer"]].append(r)
    ratios = {}
    for layer, rs in by.items():
        best = min(rs, key=lambda r: r["us"])
        cand = [r for r in rs if cost(r, p) is not None]
        pick = min(cand, key=lambda r: cost(r, p, tc))
        ratios[layer] = (pick, best, pick["us"] / best["us"])
    return ratios


def fit(paths) -> dict:
    """Least-squares fit of the model's constants to the sweep files: the constants as the
    planner names them (normalised to the 128x64 tile) and the rms log error."""
    from scipy.optimize import least_squares
    rows = read(paths)
    fit_rows = [r for r in rows if cost(r) is not None]

    def resid(q):
        a0, s, *p = q
        return [math.log((a0 + s * cost(r, p)) / r["us"]) for r in fit_rows]

    x0 = [2.0, 1.0, 1.2, 1.4, 3.0, 3.0, 3.0, 1.3, 1.1]
    lo = [0.0, 1e-3, 0.5, 0.5, 0.0, 0.0, 0.0, 0.5, 0.5]
    hi = [50.0, 100.0, 3.0, 3.0, 50.0, 50.0, 50.0, 3.0, 3.0]
    q = least_squares(resid, x0, bounds=(lo, hi)).x
    e = resid(q)
    p = [float(v) for v in q[2:]]
    return dict(rows=rows, timings=len(rows), fitted=len(fit_rows), params=p,
                rms=math.sqrt(sum(v * v for v in e) / len(e)),
                MC_TILE_COST={128: 1.0, 64: p[0], 32: p[1]},
                MC_SPLIT_STEPS={128: p[2], 64: p[3], 32: p[4]},
                MC_FEW_BLOCKS_COST={1: p[5], 2: p[6]})


def main(paths):
    f = fit(paths)
    p = f["params"]
    tc = any("-tc-" in str(path) for path in paths)
    sfx = "_TC" if tc else ""
    print(f"{f['timings']} timings, {f['fitted']} on the planner's splits; rms log error "
          f"{f['rms']:.3f}")
    print(f"MC_TILE_COST{sfx} = {{128: 1.0, 64: {p[0]:.2f}, 32: {p[1]:.2f}}}")
    print(f"MC_SPLIT_STEPS{sfx} = {{128: {p[2]:.1f}, 64: {p[3]:.1f}, 32: {p[4]:.1f}}}")
    print(f"MC_FEW_BLOCKS_COST{sfx} = {{1: {p[5]:.2f}, 2: {p[6]:.2f}}}")
    for name, params in (("fitted", p), ("planner's current", None)):
        rs = picks(f["rows"], params, tc)
        g = math.exp(sum(math.log(v[2]) for v in rs.values()) / len(rs))
        worst = max(rs.items(), key=lambda kv: kv[1][2])
        print(f"{name}: pick / best measured, geomean {g:.3f}, worst {worst[1][2]:.3f} "
              f"(layer {worst[0]}: w{worst[1][0]['wx']}c{worst[1][0]['cs']} vs "
              f"w{worst[1][1]['wx']}c{worst[1][1]['cs']})")


if __name__ == "__main__":
    main(sys.argv[1:] or ["benchmarks/results/sweeps/grid-sweep-nvidia-h200-20261121-nhwc.txt"])
