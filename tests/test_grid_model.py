"""The multi-channel grid model exists twice: in the planner (Python, trace time) and in the
kernel's fallback for plans without a split (cuda/grid_model.h). Both must choose alike: the
header is built with the host compiler and asked the same questions as the planner."""
import random
import subprocess

import pytest

from _helpers import ROOT, build_host_check
from jax_fastconv import hardware as hwm
from jax_fastconv import planner as pl
from jax_fastconv.spec import spec_from_logical

H200 = hwm.PRESETS["h200"]
TILE = {128: 1, 64: 2, 32: 3}          # W'x -> the kernel's tile index
RESIDENCY = {128: 3, 64: 4, 32: 4}     # cuda/grid_model.h kGridBlocksPerSM, by W'x


@pytest.fixture(scope="module")
def grid_check(tmp_path_factory):
    exe = build_host_check("grid_model_check", tmp_path_factory.mktemp("grid"))

    def ask(lines):
        out = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True,
                             text=True, timeout=60, check=True)
        return out.stdout.split("\n")[:len(lines)]
    return ask


def test_the_kernels_residency_is_the_planners():
    # cuda/grid_model.h kGridBlocksPerSM: the planner's b for the grid tiles on the H200
    for Wx, Mp, Se, T, stages, regs in pl.MC_CONFIGS:
        if Mp == 64 and Se == 16:
            _, shared = pl._mc_shared_bytes(Wx, Mp, Se, stages)
            b = pl._mc_blocks_per_sm(H200, T, regs, shared)["b"]
            assert b == RESIDENCY[Wx]


def test_cost_is_the_planners(grid_check):
    rng = random.Random(7)
    qs = []
    for _ in range(400):
        tiles, steps = rng.randint(1, 5000), rng.randint(1, 900)
        Wx, cs, sms = rng.choice((128, 64, 32)), rng.choice(pl.MC_SPLITS), rng.choice((28, 114, 132))
        qs.append((tiles, steps, Wx, cs, sms, rng.randint(0, 1)))
    got = grid_check([f"cost {t} {s} {TILE[w]} {c} {n} {tc}" for t, s, w, c, n, tc in qs])
    for (t, s, w, c, n, tc), line in zip(qs, got):
        want = pl._mc_grid_cost(t, s, w, c, RESIDENCY[w], n, tc=bool(tc))
        assert float(line) == pytest.approx(want, rel=1e-9), (t, s, w, c, n, tc)
    # the two constant sets differ (else the tc column above would test nothing)
    assert pl._mc_grid_cost(104, 288, 64, 8, 4, 132) != pl._mc_grid_cost(104, 288, 64, 8, 4, 132, tc=True)


@pytest.mark.parametrize("seed", range(4))
def test_pick_is_the_planners(grid_check, seed):
    rng = random.Random(seed)
    layers, qs = [], []
    while len(layers) < 60:
        N, C, M = rng.choice((1, 1, 2, 8, 32)), rng.choice((16, 24, 64, 128, 256, 512)), rng.choice((40, 64, 128, 512))
        H, K = rng.choice((7, 9, 14, 28, 56, 112)), rng.choice((1, 3, 5))
        if H < K:
            continue
        plan = pl.make_plan(spec_from_logical(N, C, H, H, M, K, K, layout="NHWC"), H200)
        if plan.method != "multi_channel" or plan["split_global"]:
            continue  # (a split through global memory needs the workspace: never the fallback's)
        layers.append(plan)
        se = 16 if C >= 32 and C % 16 == 0 else 8
        steps = -(-C // se) * K * K
        tc = int(bool(plan["tensor_cores"]) and K * K >= pl.MC_TENSOR_CORE_MIN_TAPS)
        qs.append(f"pick {N * (H - K + 1) ** 2} {M} {steps} 132 8 8 16 -1 {tc}")
    for plan, line in zip(layers, grid_check(qs)):
        tile, cs = map(int, line.split())
        assert (TILE[plan["W'x"]], plan["c_split"]) == (tile, cs), plan.reason


@pytest.mark.parametrize("sweep,timings,suffix", [
    ("grid-sweep-nvidia-h200-20261121-nhwc.txt", 1118, ""),         # FFMA
    ("grid-sweep-tc-nvidia-h200-20261121-nhwc.txt", 442, "_TC"),    # 3xTF32 tensor cores
])
def test_constants_are_the_fit_of_the_committed_sweep(sweep, timings, suffix):
    """MC_TILE_COST, MC_SPLIT_STEPS and MC_FEW_BLOCKS_COST (and their _TC twins) are the
    least-squares fit of benchmarks/results/sweeps/ (benchmarks/fit_grid_model.py), rounded as
    written."""
    import importlib.util
    pytest.importorskip("scipy")
    spec = importlib.util.spec_from_file_location("fit_grid_model",
                                                  ROOT / "benchmarks" / "fit_grid_model.py")
    fgm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fgm)
    f = fgm.fit([ROOT / "benchmarks" / "results" / "sweeps" / sweep])
    assert f["timings"] == timings and f["rms"] < 0.12
    for name, digits in (("MC_TILE_COST", 2), ("MC_SPLIT_STEPS", 1), ("MC_FEW_BLOCKS_COST", 2)):
        planner = getattr(pl, name + suffix)
        assert set(f[name]) == set(planner)
        for k, v in f[name].items():
            assert planner[k] == pytest.approx(v, abs=0.5 * 10 ** -digits + 1e-9), (name, k, v)


def test_global_split_constants_pick_the_best_of_the_committed_sweep():
    """MC_GLOBAL_SPLIT_STEPS_TC / _COST_TC (split through global memory) against the committed
    sweep (benchmarks/fit_split_global.py): the model's pick per layer is within 1% of the
    best measured variant on average and 2% at worst (the cluster plans alone: 10.5% off)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("fit_split_global",
                                                  ROOT / "benchmarks" / "fit_split_global.py")
    fsg = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fsg)
    d = fsg.load([ROOT / "benchmarks" / "results" / "sweeps" /
                  "split-global-sweep-nvidia-h200-20261121.txt"])
    assert len(d) == 14 and all(len(r) == 31 for r in d.values())
    geo, worst = fsg.evaluate(d, pl.MC_GLOBAL_SPLIT_STEPS_TC, pl.MC_GLOBAL_SPLIT_COST_TC)
    assert geo < 1.01 and worst < 1.02
    cluster_only = {k: {v: us for v, us in r.items() if v.startswith("c_")} for k, r in d.items()}
    best = {k: min(r.values()) for k, r in d.items()}
    import math
    off = math.exp(sum(math.log(min(cluster_only[k].values()) / best[k]) for k in d) / len(d))
    assert off > 1.05   # the sweep is one where the split through global memory matters
