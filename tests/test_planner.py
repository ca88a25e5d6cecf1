"""The trace-time planner: the paper's model (sections 2.2, 3.1, 3.2) on the presets.

Pure Python, no GPU. Expected values for the GTX 1080Ti are hand-computed from the formulas
documented in jax_fastconv/planner.py (the arithmetic is in the comments next to each case).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pytest

from _helpers import assert_partition

from jax_fastconv import hardware as hwm, planner as pl
from jax_fastconv import plan_single_channel as psc
from jax_fastconv.spec import normalize, spec_from_logical

GTX = hwm.PRESETS["gtx1080ti"]


def sc(H, M, K, padding="VALID", N=1):
    return spec_from_logical(N, 1, H, H, M, K, K, padding=padding)


# ---------------------------------------------------------------- Table 1 / section 2.2
def test_table1_gtx1080ti_exact():
    lat = pl.latency_model(GTX)
    assert lat["latency_cycles"] == 258
    assert lat["bytes_per_clock"] == 327
    assert lat["N_FMA"] == 66048
    assert lat["data_requirement"] == 84366
    assert lat["threads_required"] == 21120
    assert lat["threads_per_SM"] == 768
    assert lat["warps_per_SM"] == 24
    assert lat["bytes_per_SM"] == 3072
    assert lat["V_s"] == 86016
    assert lat["loads_in_flight_per_thread"] == 1


@pytest.mark.parametrize("name,n_fma,bpc,threads_per_sm", [
    ("h100", 650 * 128 * 2, 1691, 2112),   # 3.35e12/1.98e9 = 1691.9; ceil(1691*650/4/32/132)=66 warps
    ("h200", 690 * 128 * 2, 2424, 3168),   # 4.8e12/1.98e9 = 2424.2; 2424*690/4 -> 99 warps/SM
])
def test_latency_model_hopper(name, n_fma, bpc, threads_per_sm):
    hw = hwm.PRESETS[name]
    lat = pl.latency_model(hw)
    assert lat["N_FMA"] == n_fma
    assert lat["bytes_per_clock"] == bpc
    assert lat["threads_per_SM"] == threads_per_sm
    assert lat["V_s"] == threads_per_sm * 4 * 132
    # more threads than an SM holds: each thread keeps several loads in flight
    assert lat["loads_in_flight_per_thread"] == math.ceil(threads_per_sm / 2048) >= 2


def test_calibrated_fma_rate_enters_n_fma():
    hw = GTX.replace(fma_per_core_per_clock=0.5)
    assert pl.latency_model(hw)["N_FMA"] == 33024


# Section 3.1 (single channel) is planned in jax_fastconv/plan_single_channel.py and tested,
# hand-computed on the GTX 1080Ti and against every preset's limits, in
# tests/test_plan_single_channel.py.


# ---------------------------------------------------------------- section 3.2, hand-computed
# The kernel's menu on the 1080Ti (98,304 B shared/SM, 49,152 B/block, 64K registers, no
# reserved shared memory below sm_80, no clusters below sm_90), N_FMA 66,048. Registers are
# allocated 8 per thread; shared bytes per block = 4 x max(STAGES x stage, W'x (M'+1)) + 16 W'x
# with stage = W'x (S_e + 4) + S_e (M' + 4) floats:
#   128x64/S64  : 168 regs x 128 thr = 21,504 -> 3 by regs; stage 4(128*20 + 16*68) = 14,592 B,
#                 block 4*max(3*3,648, 8,320) + 2,048 = 45,824 B -> 98,304 // 45,824 = 2: b = 2
#   128x64/S32  : stage 4(128*12 + 8*68) = 8,320 B, block 4*max(6,240, 8,320) + 2,048 = 35,328 B
#                 -> b = 2
#   32x64/S64   : 118 -> 120 regs x 128 = 15,360 -> 4; stage 4(32*20 + 16*68) = 6,912 B, block
#                 27,648 + 512 = 28,160 B -> 3: b = 3
#   128x128/S32 : block 4*128*129 + 2,048 = 68,096 B > 49,152: not on the 1080Ti's menu.
# Requirement per SM: b x M' x S_e x min(W'x, P) >= 66,048. 128x64/S64: 2*64*16*128 = 262,144.
# Preference: smallest M' (64), largest W'x (128), S = 64 B first -> 128x64/S64 whenever
# P >= 128 (M'_lower = ceil(66048 / (2*16*128)) = 17 <= 64).
# These specs are NCHW/OIHW (spec_from_logical's default): kernel_attrs[7] = 2 where the
# filter-staging rule holds (KH*KW x pixel tiles x filter bytes >= 300e6, >= 2 tiles):
#   224/64->256/3: 9 x 392 x 589,824 B; 14/256->256/3: 9 x 5 x 2.4 MB = 106e6 -> not staged;
#   256/64->128/5: 25 x 497 x 819,200 B.
# fields: S, W'x, W'y, M', stage_bytes, shared_bytes_per_block, blocks_per_SM, output_tiles,
#         c_split, kernel_attrs
MULTI_CASES = {
    # SAME: P = 224*224 = 50,176; tiles ceil(50176/128) * ceil(256/64) = 392*4 = 1,568 >= 56.
    "224/64->256/3": (spec_from_logical(1, 64, 224, 224, 256, 3, 3, padding="SAME"),
                      64, 128, 3, 64, 14592, 45824, 2, 1568, 1, (2, 16, 64, 128, 3, 1, 128, 2)),
    # VALID: OH = OW = 12, P = 144: 128x64 meets N_FMA (2*64*16*128) but gives 2*4 = 8 tiles
    # < 2 x 28. Grid rule, target 3 x 28 = 84: 128x64 needs split 11, 64x64 (12 tiles) 7,
    # 32x64 (20 tiles) 5, all > 1 (no clusters on sm_61) -> last resort 32x64/S64, split 1.
    "14/256->256/3": (spec_from_logical(1, 256, 14, 14, 256, 3, 3), 64, 32, 3, 64, 6912,
                      28160, 3, 20, 1, (2, 16, 64, 32, 3, 1, 128, 0)),
    # K=1: P = 784, tiles ceil(784/128) * 8 = 7*8 = 56 >= 2 x 28: no split, 128x64/S64.
    "28/512->512/1": (spec_from_logical(1, 512, 28, 28, 512, 1, 1), 64, 128, 1, 64, 14592,
                      45824, 2, 56, 1, (2, 16, 64, 128, 1, 1, 128, 0)),
    # K=5 VALID: P = 252*252 = 63,504 -> ceil(63504/128) = 497 (496.1) x 2 = 994 tiles.
    "256/64->128/5": (spec_from_logical(1, 64, 256, 256, 128, 5, 5), 64, 128, 5, 64, 14592,
                      45824, 2, 994, 1, (2, 16, 64, 128, 5, 1, 128, 2)),
}


@pytest.mark.parametrize("case", sorted(MULTI_CASES))
def test_multi_channel_hand_computed(case):
    spec, S, wx, wy, mp, stage, shared, b, tiles, c_split, attrs = MULTI_CASES[case]
    plan = pl.make_plan(spec, GTX)
    assert plan.method == "multi_channel", plan.reason
    assert plan["S"] == S
    assert plan["W'x"] == wx
    assert plan["W'y"] == wy
    assert plan["M'"] == mp
    assert plan["stage_bytes"] == stage
    assert plan["shared_bytes_per_block"] == shared
    assert plan["blocks_per_SM"] == b
    assert plan["output_tiles"] == tiles
    assert plan["c_split"] == c_split
    assert plan.kernel_attrs == attrs


def test_multi_channel_paper_best_is_smallest_m_prime():
    plan = pl.make_plan(MULTI_CASES["224/64->256/3"][0], GTX)
    mp, s_e, wx, b = plan["M'"], plan["S_elems"], plan["W'x"], plan["blocks_per_SM"]
    assert plan["Th_SM"] == b * mp * s_e * wx >= 66048        # per SM, all resident blocks
    assert plan["M'_lower"] == math.ceil(66048 / (b * s_e * wx)) == 17 <= mp
    assert mp == min(c[1] for c in pl.MC_CONFIGS)              # the smallest M' on the menu
    assert plan["Th_stage"] == mp * s_e * wx


@pytest.mark.parametrize("preset", ["h100", "h200"])
def test_multi_channel_hopper_big_layers_get_the_papers_best(preset):
    # 3 x 64 x 16 x 128 = 393,216 >= N_FMA (166,400 / 176,640); b = 3 by registers (168 x 128).
    hw = hwm.PRESETS[preset]
    for spec in (spec_from_logical(1, 64, 224, 224, 64, 3, 3, padding="SAME", layout="NHWC"),
                 spec_from_logical(32, 128, 28, 28, 128, 3, 3, padding="SAME", layout="NHWC"),
                 spec_from_logical(1, 64, 512, 512, 64, 5, 5)):
        plan = pl.make_plan(spec, hw)
        assert (plan["M'"], plan["W'x"], plan["S"], plan["c_split"]) == (64, 128, 64, 1), plan.reason
        assert plan["blocks_per_SM"] == 3 == plan["blocks_by_regs"]
        assert plan["Th_SM"] == 3 * 64 * 16 * 128 >= plan["N_FMA"]


def test_multi_channel_h200_grid_model(monkeypatch):
    # b1 112x112x64 -> 64, K3 VALID: P = 110*110 = 12,100; C = 64 -> S = 64 B, 4 segments x 9
    # taps = 36 steps. cost = c_tile x per_SM x (ceil(36 / cs) + s0_tile [cs > 1]) x W'x / 128
    # x f(min(per_SM, b)), per_SM = ceil(tiles x cs / 132). The layer runs on the tensor cores,
    # so the *_TC constants (c_tile 1 / 1.07 / 1.38, s0 4.1 / 3.0 / 3.0, f 1.50 / 1.07):
    #   128x64, 95 tiles (b = 3): cs1 1 x 36 x 1.5 = 54; cs2 2 x 22.1 x 1.07 = 47.29;
    #                             cs4 3 x 13.1 = 39.3; cs8 6 x 9.1 = 54.6
    #   64x64, 190 tiles (b = 4): cs1 1.07 x 2 x 36 x 0.5 x 1.07 = 41.22;
    #                             cs2 1.07 x 3 x 21 x 0.5 = 33.71  <- the least
    #   32x64, 379 tiles (b = 4): cs1 1.38 x 3 x 36 x 0.25 = 37.26
    # (with the FFMA constants the same pick: 64x64 cs2 38.87 against 128x64 unsplit 49.68)
    plan = pl.make_plan(spec_from_logical(1, 64, 112, 112, 64, 3, 3, layout="NHWC"), H200)
    assert plan.kernel_attrs == (2, 16, 64, 64, 3, 2, 128, pl.MC_TENSOR_CORES), plan.reason
    assert plan["output_tiles"] == 190 and plan["c_split"] == 2
    assert "tensor-core constants" in plan.reason and "cost 34 vs 54 for 128x64 unsplit" in plan.reason
    assert pl._mc_grid_cost(190, 36, 64, 2, 4, 132, tc=True) == pytest.approx(1.07 * 3 * 21 * 0.5)
    assert pl._mc_grid_cost(95, 36, 128, 4, 3, 132, tc=True) == pytest.approx(3 * 13.1)
    assert pl._mc_grid_cost(379, 36, 32, 1, 4, 132, tc=True) == pytest.approx(1.38 * 3 * 36 * 0.25)
    assert pl._mc_grid_cost(190, 36, 64, 2, 4, 132) == pytest.approx(1.24 * 3 * 20.9 * 0.5)
    assert pl._mc_grid_cost(95, 36, 128, 4, 3, 132) == pytest.approx(3 * 13.7)
    assert pl._mc_grid_cost(379, 36, 32, 1, 4, 132) == pytest.approx(1.48 * 3 * 36 * 0.25)
    # b32 7x7x512 K3 VALID (NHWC): 800 pixels, 288 steps; the tensor-core constants pick 64x64
    # (measured 97 us) where the FFMA ones picked 128x64 split 8 (139 us); 104 tiles x 4 blocks
    # per SM: 5 ranks through global memory fill one wave (132 x 4 // 104), cost 138 against
    # 146 for the cluster of 8 (measured 85.6 against 88.9 us device, bench 20261122)
    spec = spec_from_logical(32, 512, 7, 7, 512, 3, 3, layout="NHWC")
    plan = pl.make_plan(spec, H200)
    assert plan.kernel_attrs == (2, 16, 64, 64, 3, 5, 128,
                                 pl.MC_TENSOR_CORES | pl.MC_SPLIT_GLOBAL), plan.reason
    assert "104 tiles x 5 ranks, cost 138" in plan.reason and "cost 146" in plan.reason
    monkeypatch.setattr(pl, "MC_GLOBAL_ONE_WAVE", False)  # the listed counts only: the cluster
    assert pl.make_plan(spec, H200).kernel_attrs == (2, 16, 64, 64, 3, 8, 128, pl.MC_TENSOR_CORES)
    monkeypatch.undo()
    # b1 7x7x512 K3 VALID: P = 25, 8 tiles of every size, 32 x 9 = 288 steps: 32x64 with the
    # non-portable cluster of 16: 128 blocks, 1 per SM, 18 + 3.0 steps: 1.38 x 21 x 0.25 x
    # 1.5 = 10.9 (split 8: 20.2; 128x64 split 8: 60.2).
    # (NCHW/OIHW: the tensor cores read the OIHW filters in place, plan[7] = 4 | 32)
    plan = pl.make_plan(spec_from_logical(1, 512, 7, 7, 512, 3, 3), H200)
    assert plan.kernel_attrs == (2, 16, 64, 32, 3, 16, 128, 36), plan.reason
    assert plan["steps_per_rank"] == 18 and "beyond the paper" in plan.reason
    # big layers: the paper's tile unsplit stands (grid_cost is its cost, no grid text)
    plan = pl.make_plan(spec_from_logical(32, 64, 112, 112, 64, 3, 3), H200)
    assert plan.kernel_attrs[2:6] == (64, 128, 3, 1) and "grid model" not in plan.reason
    assert plan["grid_cost"] > 0


@pytest.mark.parametrize("N,C,H,K", [(1, 64, 56, 3), (1, 512, 14, 1), (32, 512, 7, 3),
                                     (32, 256, 28, 5), (1, 64, 512, 3)])
def test_multi_channel_grid_choice_is_the_least_cost(N, C, H, K):
    plan = pl.make_plan(spec_from_logical(N, C, H, H, C, K, K, layout="NHWC"), H200)
    P = N * (H - K + 1) ** 2
    steps = -(-C // 16) * K * K
    costs = {}
    tc = K >= 3   # NHWC, C % 4 == 0 on an H200: the tensor cores, and their constants
    assert bool(plan["tensor_cores"]) == tc
    glob = {}     # the split through global memory (tensor cores only)
    for wx, b in ((128, 3), (64, 4), (32, 4)):
        tiles = -(-P // wx) * -(-C // 64)
        for cs in pl.MC_SPLITS:
            if cs <= min(16 if wx == 32 else 8, steps):
                costs[(wx, cs)] = pl._mc_grid_cost(tiles, steps, wx, cs, b, 132, tc=tc)
        for cs in pl.mc_global_split_counts(tiles, b, 132) if tc else ():
            if cs <= steps:
                glob[(wx, cs)] = pl._mc_global_split_cost(tiles, steps, wx, cs, b, 132)
    best = min(costs.values())
    if plan["split_global"]:   # taken only with a clear margin over the best cluster plan
        assert glob[(plan["W'x"], plan["c_split"])] == pytest.approx(min(glob.values()))
        assert min(glob.values()) < pl.MC_GLOBAL_SPLIT_MARGIN * best
    else:
        assert costs[(plan["W'x"], plan["c_split"])] == pytest.approx(best)
        assert not glob or min(glob.values()) >= pl.MC_GLOBAL_SPLIT_MARGIN * best


# ---------------------------------------------------------------- filter staging (plan[7])
H200 = hwm.PRESETS["h200"]


@pytest.mark.parametrize("hw,layout,N,C,H,M,K,tile,staged", [
    # without tensor cores (GTX 1080 Ti): score = KH*KW x pixel tiles x filter bytes >= 300e6
    # and >= 2 tiles -> staged
    ("gtx1080ti", "NCHW", 1, 512, 14, 512, 3, 32, True),    # 9 x 5 x 9.4 MB
    ("gtx1080ti", "NCHW", 1, 128, 28, 128, 5, 32, True),    # 25 x 18 x 1.6 MB
    ("gtx1080ti", "NCHW", 1, 512, 7, 512, 3, 32, False),    # one pixel tile (5 x 5 outputs)
    ("gtx1080ti", "NCHW", 1, 256, 14, 256, 3, 32, False),   # 9 x 5 x 2.4 MB = 106e6
    ("gtx1080ti", "NCHW", 1, 64, 56, 64, 3, 128, False),    # 9 x 23 x 147 kB
    # H200: wherever staging lets the tensor cores run (M' = 64 tiles, >= 9 taps) and the copy
    # weighs little beside the layer (else the OIHW order: test_oihw_order_rule) ...
    ("h200", "NCHW", 32, 512, 14, 512, 3, 128, True),
    ("h200", "NCHW", 32, 256, 14, 256, 3, 64, True),
    ("h200", "NCHW", 1, 64, 224, 64, 3, 128, True),
    ("h200", "NCHW", 32, 256, 28, 256, 1, 128, True),       # 1x1, C >= 256, full unsplit grid
    ("h200", "NCHW", 1, 512, 7, 512, 3, 32, False),         # the OIHW order instead
    # ... else by the score; K = 1: pixel tiles x filter bytes >= 30e6 (channel-contiguous rows)
    ("h200", "NCHW", 1, 512, 14, 512, 1, 32, False),   # 7 x 1 MB
    ("h200", "NCHW", 32, 128, 112, 128, 1, 128, True),  # 3136 x 64 kB = 205e6
    ("h200", "NCHW", 1, 128, 256, 128, 1, 128, True),   # 512 x 64 kB = 33.5e6
    ("h200", "NCHW", 32, 64, 56, 64, 1, 128, False),   # the streamed 1x1 kernel: no copy
    ("h200", "NCHW", 32, 128, 28, 128, 1, 128, False),  # ... the OIHW order (784 tiles, 64 kB)
    ("h200", "NCHW", 32, 128, 21, 128, 1, 128, False),  # ... not at OH*OW % 4 != 0 (the park)
    ("h200", "NCHW", 1, 64, 56, 64, 1, 32, False),     # 98 tiles x 16 kB, fewer tiles than SMs
    ("h200", "NCHW", 1, 64, 112, 64, 1, 32, False),    # 392 x 16 kB: the copy costs more
    ("h200", "NHWC", 1, 512, 14, 512, 3, 32, False),   # HWIO filters: nothing to stage
    ("h200", "NCHW", 1, 512, 14, 510, 3, 32, False),   # M % 4 != 0: no 16-byte filter loads
])
def test_filter_staging_rule(hw, layout, N, C, H, M, K, tile, staged):
    spec = spec_from_logical(N, C, H, H, M, K, K, layout=layout)
    plan = pl.make_plan(spec, hwm.PRESETS[hw])
    assert plan.method == "multi_channel" and plan["W'x"] == tile, plan.reason
    assert plan.kernel_attrs[7] & pl.MC_STAGE_FILTERS == plan["filter_staging"] == (pl.MC_STAGE_FILTERS if staged else 0)
    assert ("copied to HWIO" in plan.reason) == staged
    assert pl.workspace_elems(spec, plan) == (-(-(M * C * K * K) // 4) * 4 if staged else 0)
    if staged and hw == "h200" and C % 4 == 0:   # the staged layers run on the tensor cores
        assert plan.kernel_attrs[7] & pl.MC_TENSOR_CORES or K == 1 and C < 256


def test_filter_staging_with_oihw_filters_and_nhwc_input():
    # the rule reads the filters only: NHWC input with OIHW filters is staged like NCHW
    spec = normalize((1, 14, 14, 512), (512, 512, 3, 3), (1, 1), "VALID",
                     dimension_numbers=("NHWC", "OIHW", "NHWC"))
    plan = pl.make_plan(spec, H200)
    assert plan.kernel_attrs[7] & pl.MC_STAGE_FILTERS == pl.MC_STAGE_FILTERS
    assert pl.workspace_elems(spec, plan) == 512 * 512 * 9


@pytest.mark.parametrize("dn,N,C,H,M,K,tile,tc", [
    (("NHWC", "HWIO", "NHWC"), 32, 64, 56, 64, 3, 128, True),
    (("NHWC", "HWIO", "NHWC"), 32, 256, 14, 256, 5, 64, True),
    (("NHWC", "HWIO", "NHWC"), 1, 64, 112, 64, 3, 64, True),
    (("NHWC", "OIHW", "NHWC"), 32, 64, 56, 64, 3, 128, True),     # staged to HWIO first
    (("NHWC", "HWIO", "NCHW"), 32, 64, 56, 64, 3, 128, True),     # the output layout is free
    (("NHWC", "HWIO", "NHWC"), 1, 128, 28, 128, 3, 32, True),     # the 32x64 tile
    (("NHWC", "HWIO", "NHWC"), 32, 64, 56, 64, 1, 128, True),     # K = 1, C >= 64, stored
    (("NHWC", "HWIO", "NHWC"), 32, 128, 56, 128, 1, 128, True),   # ... from the fragments
    (("NHWC", "HWIO", "NHWC"), 32, 32, 56, 32, 1, 128, False),    # ... C = 32: not measured
    (("NCHW", "HWIO", "NCHW"), 32, 128, 21, 128, 1, 128, False),  # ... OH*OW % 4: the park
    (("NHWC", "HWIO", "NCHW"), 32, 128, 28, 128, 1, 128, False),  # ... NHWC in, NCHW out: park
    (("NCHW", "HWIO", "NCHW"), 32, 256, 21, 256, 1, 128, True),   # ... C >= 256 even so
    (("NHWC", "HWIO", "NHWC"), 32, 256, 28, 256, 1, 128, True),   # K = 1, C >= 256: faster
    (("NCHW", "OIHW", "NCHW"), 1, 64, 112, 64, 1, 32, False),     # K = 1, staging costs more
    (("NCHW", "HWIO", "NCHW"), 1, 64, 112, 64, 1, 32, False),     # ... HWIO, but 32x64 NCHW: park
    (("NHWC", "HWIO", "NHWC"), 1, 64, 112, 64, 1, 32, True),      # ... 32x64 NHWC: direct
    (("NCHW", "HWIO", "NCHW"), 1, 64, 224, 64, 1, 128, True),     # ... 128x64 NCHW: direct
    (("NCHW", "OIHW", "NCHW"), 32, 512, 7, 512, 1, 32, True),     # ... staged, 32x64
    (("NHWC", "HWIO", "NHWC"), 1, 256, 28, 256, 1, 32, False),    # ... fewer tiles than SMs
    (("NHWC", "HWIO", "NHWC"), 1, 512, 14, 512, 1, 32, False),    # ... split grid
    (("NCHW", "OIHW", "NCHW"), 32, 64, 56, 64, 3, 128, True),     # channel-major tile, staged
    (("NCHW", "HWIO", "NCHW"), 32, 64, 56, 64, 3, 128, True),
    (("NCHW", "OIHW", "NCHW"), 1, 128, 28, 128, 3, 32, True),     # OIHW staged for them
    (("NCHW", "OIHW", "NCHW"), 1, 512, 7, 512, 3, 32, True),      # ... even on one pixel tile
    (("NHWC", "HWIO", "NHWC"), 32, 62, 56, 64, 3, 128, False),    # C % 4: 4-byte input loads
    (("NHWC", "HWIO", "NHWC"), 32, 64, 56, 62, 3, 128, False),    # M % 4: 4-byte filter loads
])
def test_tensor_core_rule(dn, N, C, H, M, K, tile, tc):
    def shape(layout, sizes):
        return tuple(sizes[ch] for ch in layout)
    lhs = shape(dn[0], dict(N=N, C=C, H=H, W=H))
    rhs = shape(dn[1], dict(O=M, I=C, H=K, W=K))
    spec = normalize(lhs, rhs, (1, 1), "VALID", dimension_numbers=dn)
    plan = pl.make_plan(spec, H200)
    assert plan.method == "multi_channel" and plan["W'x"] == tile, plan.reason
    assert bool(plan.kernel_attrs[7] & pl.MC_TENSOR_CORES) == tc == bool(plan["tensor_cores"])
    assert ("3xTF32 on the tensor cores" in plan.reason) == tc
    assert plan.kernel_attrs[7] & pl.MC_STAGE_FILTERS == plan["filter_staging"]
    if tc:  # the reason names the rule that applied to this kernel size, not the other one
        assert (f"{K * K} taps here" in plan.reason) == (K > 1)
        assert ("1x1 kernels with >= " in plan.reason) == (K == 1)
        assert (f"C = {C} here" in plan.reason) == (K == 1)


@pytest.mark.parametrize("dn,N,C,H,W,M,padding,streamed", [
    (("NHWC", "HWIO", "NHWC"), 32, 64, 112, 112, 64, "VALID", True),
    (("NCHW", "OIHW", "NCHW"), 32, 64, 112, 112, 64, "VALID", True),   # no filter copy then
    (("NHWC", "HWIO", "NHWC"), 32, 64, 56, 56, 64, "SAME", True),      # 1x1 SAME: no padding
    (("NHWC", "HWIO", "NHWC"), 8, 32, 112, 112, 64, "VALID", True),    # C = 32
    (("NCHW", "HWIO", "NCHW"), 1, 64, 512, 512, 256, "VALID", True),   # filters: any strides
    (("NHWC", "HWIO", "NHWC"), 1, 64, 224, 224, 64, "VALID", False),   # 50176 < 65536 pixels
    (("NHWC", "HWIO", "NHWC"), 32, 128, 56, 56, 128, "VALID", False),  # C = 128: measured slower
    (("NHWC", "HWIO", "NHWC"), 32, 48, 56, 56, 64, "VALID", False),    # C not 32 or 64
    (("NHWC", "HWIO", "NHWC"), 32, 64, 56, 56, 60, "VALID", False),    # M % 8
    (("NHWC", "HWIO", "NCHW"), 32, 64, 56, 56, 64, "VALID", False),    # mixed layouts
    (("NCHW", "OIHW", "NCHW"), 32, 64, 57, 57, 64, "VALID", False),    # H*W % 4 (NCHW)
    (("NHWC", "HWIO", "NHWC"), 32, 64, 56, 56, 64, ((1, 1), (0, 0)), False),  # padding
])
def test_streamed_1x1_rule(dn, N, C, H, W, M, padding, streamed):
    def shape(layout, sizes):
        return tuple(sizes[ch] for ch in layout)
    lhs = shape(dn[0], dict(N=N, C=C, H=H, W=W))
    rhs = shape(dn[1], dict(O=M, I=C, H=1, W=1))
    spec = normalize(lhs, rhs, (1, 1), padding, dimension_numbers=dn)
    plan = pl.make_plan(spec, H200)
    assert plan.method == "multi_channel", plan.reason
    assert bool(plan.kernel_attrs[7] & pl.MC_POINTWISE) == streamed == bool(plan["pointwise"])
    assert ("the streamed 1x1 kernel" in plan.reason) == streamed
    if streamed:  # the general plan stays behind it, without the filter copy or a workspace
        assert plan.kernel_attrs[7] & pl.MC_STAGE_FILTERS == 0 == plan["filter_staging"]
        assert pl.workspace_elems(spec, plan) == 0
        assert "else the general kernel" in plan.reason
    assert not pl.make_plan(spec, hwm.PRESETS["gtx1080ti"]).kernel_attrs[7] & pl.MC_POINTWISE


@pytest.mark.parametrize("C,K,stride,padding,layout,method", [
    (256, 1, (2, 2), "VALID", "NHWC", "multi_channel"),   # ResNet's projection shortcut
    (512, 1, (2, 2), "SAME", "NCHW", "multi_channel"),
    (64, 1, (2, 2), ((0, 1), (1, 0)), "NHWC", "multi_channel"),  # padding reached
    (128, 3, (2, 2), "SAME", "NHWC", "multi_channel"),    # ResNet's 3x3 stride 2
    (64, 5, (3, 2), ((2, 1), (-1, 2)), "NCHW", "multi_channel"),
    (4, 3, (2, 2), "VALID", "NHWC", "single_channel"),    # 1 < C < 8: the strided kernel (S8)
    (4, 1, (2, 2), "VALID", "NHWC", "direct"),            # ... but not its generic instance
    (1, 3, (2, 2), "SAME", "NCHW", "single_channel"),     # single channel: the strided kernel
    (1, 7, (2, 2), "SAME", "NHWC", "single_channel"),
])
def test_strided_layers(C, K, stride, padding, layout, method):
    spec = spec_from_logical(8, C, 56, 56, 2 * C, K, K, stride=stride, padding=padding,
                             layout=layout)
    plan = pl.make_plan(spec, H200)
    assert plan.method == method, plan.reason
    assert f"stride {stride}" in plan.reason or "C = 4 < 8" in plan.reason
    if method == "multi_channel":  # planned for the output pixels; the streamed kernel: stride 1
        d = spec.dims
        assert plan["output_tiles"] == -(-(8 * d["OH"] * d["OW"]) // plan["W'x"]) * -(-2 * C // 64)
        assert not plan.kernel_attrs[7] & pl.MC_POINTWISE and "beyond the paper" in plan.reason


def test_strided_packed_coordinates_limit():
    # the kernel packs each window's input origin (stride x oh) in 16 bits
    ok = spec_from_logical(1, 64, 16384, 8, 64, 1, 1, stride=(2, 1))      # 2 x 8191 < 16384
    assert pl.make_plan(ok, H200).method == "multi_channel"
    edge = spec_from_logical(1, 64, 16383, 8, 64, 1, 1, stride=(3, 1))    # 3 x 5460 = 16380
    assert pl.make_plan(edge, H200).method == "multi_channel"


def test_tensor_cores_need_sm90_and_a_square_enough_kernel():
    nhwc = ("NHWC", "HWIO", "NHWC")
    spec = normalize((32, 56, 56, 64), (3, 3, 64, 64), (1, 1), "VALID", dimension_numbers=nhwc)
    assert pl.make_plan(spec, H200).kernel_attrs[7] & pl.MC_TENSOR_CORES
    assert not pl.make_plan(spec, hwm.PRESETS["gtx1080ti"]).kernel_attrs[7] & pl.MC_TENSOR_CORES
    flat = normalize((32, 56, 56, 64), (1, 3, 64, 64), (1, 1), "VALID", dimension_numbers=nhwc)
    plan = pl.make_plan(flat, H200)   # 1x3: 3 taps < MC_TENSOR_CORE_MIN_TAPS
    assert plan.method == "multi_channel" and not plan.kernel_attrs[7] & pl.MC_TENSOR_CORES


@pytest.mark.parametrize("N,C,H,M,K,oihw", [
    # tensor-core layers with NCHW input and OIHW filters: the OIHW order where the HWIO copy
    # (max(2.1 us, 2 x filter bytes / 3.4 TB/s)) is >= 5% of FLOP / 40 TFLOP/s, else staging
    (1, 512, 7, 512, 5, True),      # copy 15.4 us vs 1.7 us of FMAs (K5 VALID: 3 x 3 outputs)
    (1, 512, 14, 512, 3, True),     # 5.6 vs 17
    (32, 512, 7, 512, 5, True),     # 15.4 vs 94 (16%)
    (32, 128, 28, 128, 1, True),    # 2.1 vs 20.6 (1x1)
    (1, 64, 112, 64, 3, True),      # 2.1 vs 22 (9.4%)
    (32, 512, 7, 512, 3, True),     # 5.6 vs 94 (5.9%)
    (32, 256, 14, 256, 3, False),   # 2.1 vs 136 (1.5%)
    (1, 128, 56, 128, 5, False),    # 2.1 vs 55 (3.8%)
    (32, 64, 56, 64, 3, False),     # 2.1 vs 87
])
def test_oihw_order_rule(N, C, H, M, K, oihw):
    spec = spec_from_logical(N, C, H, H, M, K, K)
    plan = pl.make_plan(spec, H200)
    f = plan.kernel_attrs[7]
    assert f & pl.MC_TENSOR_CORES, plan.reason
    assert bool(f & pl.MC_OIHW_ORDER) == oihw == bool(plan["oihw_order"])
    assert bool(f & pl.MC_STAGE_FILTERS) == (not oihw) == bool(plan["filter_staging"])
    assert ("read the OIHW filters in place" in plan.reason) == oihw
    staged = 0 if oihw else M * C * K * K
    split = plan["c_split"] if f & pl.MC_SPLIT_GLOBAL else 0
    assert pl.workspace_elems(spec, plan) == staged + split * N * (H - K + 1) ** 2 * M
    # never without the tensor cores, HWIO filters or channel-contiguous input
    others = [spec_from_logical(N, C, H, H, M, K, K, layout="NHWC"),
              normalize((N, C, H, H), (K, K, C, M), (1, 1), "VALID",
                        dimension_numbers=("NCHW", "HWIO", "NCHW")),
              normalize((N, H, H, C), (M, C, K, K), (1, 1), "VALID",
                        dimension_numbers=("NHWC", "OIHW", "NHWC"))]
    for other in others:
        assert not pl.make_plan(other, H200).kernel_attrs[7] & pl.MC_OIHW_ORDER, other.describe()
    assert not pl.make_plan(spec, hwm.PRESETS["gtx1080ti"]).kernel_attrs[7] & pl.MC_OIHW_ORDER


def test_split_through_global_memory():
    # b32 7x7x512 K5 VALID (NHWC): P = 32 x 3 x 3 = 288, 32 segments x 25 taps = 800 steps.
    # Cluster splits (tensor-core constants): the least is 32x64 split 16, 2 x 50 + 3.0 ... =
    # cost 165. Through global memory (MC_GLOBAL_SPLIT_*): 64x64, 5 x 8 = 40 tiles; 16 ranks =
    # 640 blocks, 5 per SM of 50 + 10 steps: 0.95 x 1.07 x 5 x 60 x 64/128 = 152.5; 13 ranks
    # (the one-wave count, 132 x 4 // 40) = 520 blocks, 4 per SM of 62 + 10 steps: 146.4.
    # Measured (H200): cluster -> 16 ranks 127.9 -> 106.1 us NHWC, 150.3 -> 122.5 us NCHW
    # (driver); 16 -> 13 ranks 94.1 -> 89.4 us NHWC, 108.0 -> 99.4 us NCHW (bench, device).
    spec = spec_from_logical(32, 512, 7, 7, 512, 5, 5, layout="NHWC")
    plan = pl.make_plan(spec, H200)
    flags = pl.MC_TENSOR_CORES | pl.MC_SPLIT_GLOBAL
    assert plan.kernel_attrs == (2, 16, 64, 64, 5, 13, 128, flags), plan.reason
    assert plan["split_global"] == 1 and plan["grid_cost"] == pytest.approx(146.4, abs=0.05)
    assert pl._mc_global_split_cost(40, 800, 64, 16, 4, 132) == pytest.approx(0.95 * 1.07 * 5 * 60 * 0.5)
    assert pl._mc_global_split_cost(40, 800, 64, 13, 4, 132) == pytest.approx(0.95 * 1.07 * 4 * 72 * 0.5)
    assert 13 in pl.mc_global_split_counts(40, 4, 132) and 13 not in pl.MC_GLOBAL_SPLITS
    # the one-wave count only inside the fitted range: 1 tile x 528 ranks is not offered
    assert pl.mc_global_split_counts(1, 4, 132) == pl.MC_GLOBAL_SPLITS
    assert 44 in pl.mc_global_split_counts(12, 4, 132)                # 528 // 12, inside
    assert "split through global memory instead" in plan.reason and "cost 146" in plan.reason
    assert pl.workspace_elems(spec, plan) == 13 * 288 * 512          # one partial output per rank
    nchw = spec_from_logical(32, 512, 7, 7, 512, 5, 5)               # OIHW filters in place
    plan = pl.make_plan(nchw, H200)
    assert plan.kernel_attrs[7] == flags | pl.MC_OIHW_ORDER
    assert pl.workspace_elems(nchw, plan) == 13 * 288 * 512
    # b1 7x7x512 K5: 32x64 x 32 ranks (no cluster holds more than 16)
    plan = pl.make_plan(spec_from_logical(1, 512, 7, 7, 512, 5, 5, layout="NHWC"), H200)
    assert plan.kernel_attrs[3] == 32 and plan["c_split"] == 32 and plan["split_global"] == 1


def test_split_through_global_memory_needs_a_clear_margin():
    # b32 14x14x256 K5 (NHWC): 128x64 x 6 ranks models 356 against the cluster plan's 369
    # (0.965, above MC_GLOBAL_SPLIT_MARGIN) and measured 1.20x slower: the cluster plan stays
    plan = pl.make_plan(spec_from_logical(32, 256, 14, 14, 256, 5, 5, layout="NHWC"), H200)
    assert plan["split_global"] == 0 and not plan.kernel_attrs[7] & pl.MC_SPLIT_GLOBAL
    assert plan.kernel_attrs[2:6] == (64, 64, 5, 8) and "global memory" not in plan.reason


def test_split_through_global_memory_only_on_the_tensor_cores():
    # OIHW filters with M % 4 != 0 cannot be staged: FFMA, whose split stays a cluster
    for spec, hw in ((spec_from_logical(1, 512, 7, 7, 510, 5, 5), H200),
                     (spec_from_logical(1, 512, 7, 7, 512, 5, 5, layout="NHWC"), GTX)):
        plan = pl.make_plan(spec, hw)
        assert plan.method == "multi_channel" and not plan.kernel_attrs[7] & pl.MC_SPLIT_GLOBAL
        assert plan["c_split"] <= 16 and pl.workspace_elems(spec, plan) == 0


def test_no_workspace_outside_multi_channel():
    for spec in (spec_from_logical(1, 1, 64, 64, 32, 3, 3), spec_from_logical(1, 4, 9, 9, 8, 3, 3)):
        plan = pl.make_plan(spec, H200)
        assert plan.method != "multi_channel" and pl.workspace_elems(spec, plan) == 0


def test_c_split_is_beyond_the_paper_and_said_so():
    plan = pl.make_plan(MULTI_CASES["14/256->256/3"][0], hwm.PRESETS["h100"])
    assert plan["c_split"] > 1 and "beyond the paper" in plan.reason
    assert plan["output_tiles"] * plan["c_split"] >= 132
    big = pl.make_plan(MULTI_CASES["224/64->256/3"][0], hwm.PRESETS["h100"])
    assert big["c_split"] == 1 and "beyond the paper" not in big.reason
    # no thread-block clusters below sm_90: never a split on the 1080Ti
    assert pl.make_plan(MULTI_CASES["14/256->256/3"][0], GTX)["c_split"] == 1


# ---------------------------------------------------------------- direct fallbacks
@pytest.mark.parametrize("spec,needle", [
    (spec_from_logical(1, 1, 200, 200, 8, 56, 56, stride=(2, 2)), "C = 1, stride (2, 2): a 56x56"),
    (spec_from_logical(1, 4, 64, 64, 8, 28, 28), "C = 4, stride (1, 1): C = 4 x a 28x28"),
])
def test_direct_for_uncovered_shapes(spec, needle):
    plan = pl.make_plan(spec, GTX)
    assert plan.method == "direct" and needle in plan.reason
    assert plan.kernel_attrs == (0,) * 8


def test_direct_for_dilation_and_dtype():
    from jax_fastconv.spec import normalize
    dil = normalize((1, 1, 16, 16), (4, 1, 3, 3), (1, 1), "VALID", rhs_dilation=(2, 2))
    assert pl.make_plan(dil, GTX).method == "direct"
    assert "dilation" in pl.make_plan(dil, GTX).reason
    half = normalize((1, 4, 16, 16), (4, 4, 3, 3), (1, 1), "VALID", lhs_dtype="float16")
    assert pl.make_plan(half, GTX).method == "direct"
    grouped = normalize((1, 4, 16, 16), (4, 2, 3, 3), (1, 1), "VALID", feature_group_count=2)
    assert "group" in pl.make_plan(grouped, GTX).reason


def test_no_gpu_means_direct_on_cpu():
    plan = pl.make_plan(sc(64, 8, 3), None)
    assert plan.method == "direct" and "CPU" in plan.reason and plan.kernel_attrs[0] == 0


def test_infeasible_division_falls_back_with_reason():
    tiny = GTX.replace(shared_per_sm=4096, shared_per_block_optin=2048, name="tiny")
    plan = pl.make_plan(sc(224, 64, 3), tiny)
    assert plan.method == "direct"
    assert "does not fit" in plan.reason and "S_shared" in plan.reason
    assert pl.make_plan(spec_from_logical(1, 8, 224, 224, 64, 3, 3), tiny.replace(
        shared_per_sm=1024, shared_per_block_optin=1024)).method == "direct"


# ---------------------------------------------------------------- invariants, every preset
GRID = ([sc(H, M, K, pad) for H in (7, 28, 56, 224, 1024) for M in (1, 32, 512)
         for K in (1, 3, 5) for pad in ("VALID", "SAME") if H >= K]
        + [spec_from_logical(N, C, H, H, M, K, K, padding=pad, layout=lay)
           for N in (1, 8) for C in (3, 64, 512) for H in (7, 14, 56, 224) for M in (64, 512)
           for K in (1, 3, 5) for pad, lay in (("SAME", "NHWC"), ("VALID", "NCHW"))
           if H >= K])


@pytest.mark.parametrize("preset", sorted(hwm.PRESETS))
def test_every_plan_respects_limits_and_covers_output_once(preset):
    hw = hwm.PRESETS[preset]
    reserve = 1024 if hw.compute_capability >= (8, 0) else 0
    methods = set()
    for spec in GRID:
        plan = pl.make_plan(spec, hw)
        methods.add(plan.method)
        hash(plan)
        assert len(plan.kernel_attrs) == 8 and all(type(a) is int for a in plan.kernel_attrs)
        assert plan.kernel_attrs[0] == pl.METHOD_IDS[plan.method]
        d = spec.dims
        ranges = pl.division_ranges(spec, plan)
        for axis, extent in (("n", d["N"]), ("m", d["M"]), ("oh", d["OH"]), ("ow", d["OW"]),
                             ("c", d["C"])):
            assert_partition(ranges[axis], extent)
        if plan.method == "direct":
            assert plan.reason
            continue
        if psc.is_strided(plan.kernel_attrs):   # C < 8 (S8): 256 threads, weights <= 48 KB
            assert plan["threads_per_block"] == 256 == plan.kernel_attrs[-1]
            assert plan["shared_bytes_per_block"] <= 48 * 1024
            assert psc.valid_attrs(spec, plan.kernel_attrs, hw) == []
            continue
        T, b = plan["threads_per_block"], plan["blocks_per_SM"]
        shared = plan["shared_bytes_per_block"]
        assert T % 32 == 0 and T <= hw.max_threads_per_block and b * T <= hw.max_threads_per_sm
        assert plan.kernel_attrs[-1 if plan.method == "single_channel" else 6] == T
        assert shared <= plan["S_shared"] <= hw.shared_per_block_optin
        assert b * (plan["S_shared"] + reserve) <= hw.shared_per_sm
        assert plan["regs_per_thread"] <= plan["reg_budget"] <= hw.max_regs_per_thread
        assert plan["regs_per_thread"] * T * b <= hw.regs_per_sm
        if plan.method == "single_channel":
            # the launch the kernel runs exactly (details: tests/test_plan_single_channel.py)
            assert psc.valid_attrs(spec, plan.kernel_attrs, hw) == []
        else:
            _, s_e, mp, wx, wy, c_split, _, _ = plan.kernel_attrs
            menu = {(c[0], c[1], c[2]): c for c in pl.MC_CONFIGS}
            assert (wx, mp, s_e) in menu                      # the plan names a real kernel
            _, _, _, thr, stages, regs = menu[(wx, mp, s_e)]
            assert (T, plan["STAGES"], plan["regs_per_thread"]) == (thr, stages, regs)
            assert wy == d["KH"] and plan["S"] == 4 * s_e
            assert plan["stage_bytes"] == 4 * (wx * (s_e + 4) + s_e * (mp + 4))
            assert stages * plan["stage_bytes"] <= shared <= plan["S_shared"]   # the ring fits
            assert b * (shared + reserve) <= hw.shared_per_sm
            assert -(-regs // 8) * 8 * T * b <= hw.regs_per_sm
            assert plan["Th_SM"] == b * mp * s_e * min(wx, d["N"] * d["OH"] * d["OW"])
            P = d["N"] * d["OH"] * d["OW"]
            assert plan["output_tiles"] == -(-P // wx) * -(-d["M"] // mp)
            cmax = 1 if hw.compute_capability < (9, 0) else (16 if wx == 32 else 8)
            if plan.kernel_attrs[7] & pl.MC_SPLIT_GLOBAL:   # ranks without a cluster
                assert plan.kernel_attrs[7] & pl.MC_TENSOR_CORES and c_split > 1
                counts = pl.mc_global_split_counts(plan["output_tiles"], b, hw.sm_count)
                assert c_split in counts and plan["split_global"] == 1
                cmax = max(counts)
            assert 1 <= c_split <= min(cmax, plan["reduction_steps"])
            assert plan["reduction_steps"] == -(-d["C"] // s_e) * d["KH"] * d["KW"]
            if c_split > 1:
                assert "beyond the paper" in plan.reason and "grid model" in plan.reason
            if "grid model" not in plan.reason and "no tile reaches" not in plan.reason:
                assert plan["Th_SM"] >= plan["N_FMA"]   # the paper's tile, not the grid rule's
    assert {"single_channel", "multi_channel"} <= methods


# ---------------------------------------------------------------- Plan object, cache, CLI
def test_plan_is_frozen_hashable_and_cached():
    spec = sc(224, 64, 3)
    a, b = pl.make_plan(spec, GTX), pl.make_plan(spec, GTX)
    assert a == b and hash(a) == hash(b)
    with pytest.raises(Exception):
        a.method = "direct"
    pl.plan_cached.cache_clear()
    first = pl.plan_cached(spec, GTX)
    assert pl.plan_cached(spec, GTX) is first
    assert pl.plan_cached.cache_info().hits == 1
    assert pl.plan_cached(spec, hwm.PRESETS["h100"]) != first     # per device


def test_describe_uses_paper_names():
    text = pl.make_plan(sc(224, 64, 3), GTX).describe()
    for needle in ("method: single_channel", "N_FMA = 66048", "V_s = 86016", "D1 = ",
                   "Th2 = ", "division = ", "reason:"):
        assert needle in text, needle
    mtext = pl.make_plan(MULTI_CASES["224/64->256/3"][0], GTX).describe()
    assert "M' = 64" in mtext and "W'x = 128" in mtext and "W'y = 3" in mtext


def _run_cli(argv):
    parser = argparse.ArgumentParser()
    pl.register_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_plan(capsys):
    rc = _run_cli(["plan", "--hardware", "gtx1080ti", "--input", "1,1,224,224",
                   "--filters", "64,1,3,3"])
    out = capsys.readouterr().out
    assert rc == 0 and "N_FMA = 66048" in out and "V_s = 86016" in out
    rc = _run_cli(["plan", "--hardware", "h100", "--input", "1,256,14,14", "--filters",
                   "256,256,3,3", "--padding", "SAME", "--layout", "NHWC"])
    out = capsys.readouterr().out
    assert rc == 0 and "multi_channel" in out and "N_FMA = 166400" in out
    assert _run_cli(["plan", "--hardware", "h200", "--input", "1,3,8,8",
                     "--filters", "4,2,3,3"]) == 2


@pytest.mark.parametrize("stride,runs", [("16,16", "the patch GEMM"), ("8,8", "lax")])
def test_cli_plan_says_what_runs_without_a_kernel(capsys, stride, runs):
    """ViT-B/16's stem has no kernel: patchify -> the patch GEMM, overlapping windows -> lax."""
    rc = _run_cli(["plan", "--hardware", "h100", "--input", "1,3,224,224",
                   "--filters", "768,3,16,16", "--stride", stride])
    out = capsys.readouterr().out
    assert rc == 0 and "method: direct" in out and f"runs: {runs}" in out


@pytest.mark.parametrize("inp,filters,stride,runs", [
    ("1,3,224,224", "96,3,4,4", "4,4", "this kernel, or the patch GEMM"),   # ConvNeXt stem
    ("1,96,56,56", "192,96,2,2", "2,2", "this kernel, or the patch GEMM"),  # ConvNeXt ds1
    ("1,96,56,56", "192,96,3,3", "2,2", None),                             # windows overlap
    ("1,64,28,28", "64,64,1,1", "1,1", None)])                            # 1x1: no patches
def test_cli_plan_names_the_gemm_rival_of_a_patchify_kernel(capsys, inp, filters, stride, runs):
    rc = _run_cli(["plan", "--hardware", "h100", "--input", inp, "--filters", filters,
                   "--stride", stride])
    out = capsys.readouterr().out
    assert rc == 0 and "method: direct" not in out
    assert (f"runs: {runs}" in out) if runs else ("runs:" not in out)


def test_cli_calibrate_without_extension(capsys, monkeypatch):
    monkeypatch.setattr(hwm, "_extension", lambda: None)
    monkeypatch.setattr(pl, "run_calibration", hwm.run_calibration)
    assert _run_cli(["calibrate"]) == 1
    assert "extension" in capsys.readouterr().err


# ---------------------------------------------------------------- hardware sources
H100_PROPS = dict(name="NVIDIA H100 80GB HBM3", major=9, minor=0, multiProcessorCount=132,
                  clockRate_khz=1980000, memoryClockRate_khz=2619000, memoryBusWidth=5120,
                  sharedMemPerMultiprocessor=233472, sharedMemPerBlockOptin=232448,
                  regsPerMultiprocessor=65536, maxThreadsPerMultiProcessor=2048,
                  maxThreadsPerBlock=1024, l2CacheSize=52428800)


def test_hardware_from_properties():
    hw = hwm.hardware_from_properties(H100_PROPS)
    assert hw.source == "runtime" and hw.cores_per_sm == 128 and hw.latency_cycles == 650
    assert hw.bandwidth_bytes_per_s == pytest.approx(3.352e12, rel=1e-3)
    assert hw.clock_hz == 1.98e9 and hw.compute_capability == (9, 0)
    assert hwm.cores_per_sm_for((8, 0)) == 64 and hwm.cores_per_sm_for((6, 1)) == 128


class _FakeExt:
    def __init__(self, props=H100_PROPS, fail=False):
        self.props, self.fail = props, fail

    def device_properties(self, ordinal):
        if self.fail:
            raise RuntimeError("no CUDA device")
        return dict(self.props)

    def calibrate(self, ordinal):
        return dict(latency_cycles=700.4, copy_bytes_per_s=3.0e12,
                    fma_per_s=132 * 128 * 1.9e9, clock_hz=1.9e9)


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    monkeypatch.setenv("JAX_FASTCONV_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("JAX_FASTCONV_HARDWARE", raising=False)
    hwm.clear_caches()
    yield tmp_path
    hwm.clear_caches()


def test_current_hardware_and_calibration_cache(cache_env, monkeypatch):
    monkeypatch.setattr(hwm, "_extension", lambda: _FakeExt())
    assert hwm.current_hardware().source == "runtime"
    hw, result, path = hwm.run_calibration(0)
    assert path.parent == cache_env and path.exists()
    assert json.loads(path.read_text())["latency_cycles"] == 700.4
    cur = hwm.current_hardware()
    assert cur.source == "calibrated" and cur.latency_cycles == 700.4
    assert cur.bandwidth_bytes_per_s == 3.0e12 and cur.clock_hz == 1.9e9
    assert cur.fma_per_core_per_clock == pytest.approx(1.0)
    assert pl.latency_model(cur)["N_FMA"] == math.ceil(700.4 * 128 * 2)


def test_current_hardware_none_without_device(cache_env, monkeypatch):
    monkeypatch.setattr(hwm, "_extension", lambda: _FakeExt(fail=True))
    assert hwm.current_hardware() is None
    hwm.clear_caches()
    monkeypatch.setattr(hwm, "_extension", lambda: None)
    assert hwm.current_hardware() is None and hwm.resolve_hardware() is None


def test_cache_dir_respects_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("JAX_FASTCONV_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert hwm.cache_dir() == tmp_path / "jax_fastconv"


def test_resolve_hardware_overrides(cache_env, monkeypatch, tmp_path):
    monkeypatch.setattr(hwm, "_extension", lambda: None)
    assert hwm.resolve_hardware("GTX1080Ti") is GTX
    assert hwm.resolve_hardware("h200").bandwidth_bytes_per_s == 4.8e12
    assert hwm.resolve_hardware(GTX) is GTX
    with pytest.raises(ValueError):
        hwm.resolve_hardware("rtx9090")
    monkeypatch.setenv("JAX_FASTCONV_HARDWARE", "h100")
    assert hwm.resolve_hardware() is hwm.PRESETS["h100"]
    f = tmp_path / "hw.json"
    f.write_text(json.dumps({"base": "h100", "latency_cycles": 800, "name": "my H100"}))
    monkeypatch.setenv("JAX_FASTCONV_HARDWARE", str(f))
    hw = hwm.resolve_hardware()
    assert hw.latency_cycles == 800 and hw.sm_count == 132 and hw.source == "override"
    assert pl.latency_model(hw)["N_FMA"] == 800 * 128 * 2
    with pytest.raises(ValueError):   # partial, no base, no device
        hwm.resolve_hardware({"latency_cycles": 500})
    with pytest.raises(ValueError):
        hwm.resolve_hardware({"base": "h100", "no_such_field": 1})
    full = GTX.as_dict()
    assert hwm.resolve_hardware(full).replace(source="preset") == GTX
    # partial over the current device
    monkeypatch.setattr(hwm, "_extension", lambda: _FakeExt())
    hwm.clear_caches()
    assert hwm.resolve_hardware({"latency_cycles": 500}).sm_count == 132


@pytest.mark.parametrize("C", [2, 3, 7])
def test_few_channels_are_not_the_multi_channel_kernel(C):
    """Fewer channels than one 32-byte segment: not the multi-channel kernel (its segments
    would be mostly padding) but the strided kernel per channel (S8), and the plan says so."""
    plan = pl.make_plan(spec_from_logical(1, C, 224, 224, 64, 3, 3), hwm.PRESETS["h200"])
    assert plan.method == "single_channel" and plan["rule"] == "few channels (S8)"
    assert f"C = {C} < 8" in plan.reason and "mostly padding" in plan.reason
    assert pl.make_plan(spec_from_logical(1, 8, 224, 224, 64, 3, 3),
                        hwm.PRESETS["h200"]).method == "multi_channel"


@pytest.mark.parametrize("shape", [(1, 16, 8, 20000), (1, 16, 20000, 8)])
def test_sizes_the_multi_channel_kernel_cannot_address_fall_back(shape):
    """Valid but beyond the kernel's 16-bit pixel packing: direct (-> lax on a GPU), with why."""
    N, C, H, W = shape
    plan = pl.make_plan(spec_from_logical(N, C, H, W, 16, 3, 3, padding="SAME"),
                        hwm.PRESETS["h200"])
    assert plan.method == "direct" and "16384" in plan.reason


def test_filters_beyond_32_bit_offsets_fall_back():
    spec = spec_from_logical(1, 65536, 9, 9, 4096, 3, 3)   # 2.4e9 filter elements
    plan = pl.make_plan(spec, hwm.PRESETS["h200"])
    assert plan.method == "direct" and "2^31" in plan.reason
