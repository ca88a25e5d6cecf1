"""The single-channel plan (jax_fastconv/plan_single_channel.py): paper section 3.1 on the
kernel that runs. Pure Python, no GPU."""
import itertools

import numpy as np
import pytest

from _helpers import assert_partition

from jax_fastconv import hardware as hwm
from jax_fastconv import plan_single_channel as ps
from jax_fastconv.spec import spec_from_logical

GTX = hwm.PRESETS["gtx1080ti"]


def sc(N, H, M, K, pad="VALID", W=None, KW=None, layout="NCHW"):
    return spec_from_logical(N, 1, H, W or H, M, K, KW or K, padding=pad, layout=layout)


# ---------------------------------------------------------------- GTX 1080Ti, by hand
# 1080Ti: N_sm = 28, two blocks per SM -> N_block = 56; N_FMA = 258 x 128 x 2 = 66,048, per
# block 33,024; S_shared per block = 96 KB / 2 = 49,152 B; input buffer 48 KB = 12,288 floats.
# A shared line holds SW = roundup4(OW + KW - 1 + 8) floats. D = 4 (K^2 MB + (RB+K-1) SW),
# Th = K^2 MB RB OW. Prefetch needs 2 D <= S_shared (double buffer).
# Division 1: MB1 = roundup8(ceil(M / 56)); division 2: RB2 = ceil(N OH / 56) (whole lines).
GTX_CASES = {
    # 224^2, M64, K3: OH = OW = 222, SW = 232.
    # D1: MB1 = r8(2) = 8; Th1 = 9*8*rows*222 = 15984 rows >= 33024 -> rows >= 3 -> P <= 110
    #     (ceil(222/110) = 3); 2*4*(72 + (rows+2)*232) <= 49152 -> rows <= 24 -> P >= 10
    #     (ceil(222/10) = 23); D1(10) = 4*(72 + 25*232) = 23488, Th1 = 15984*23 = 367632.
    # D2: RB2 = ceil(222/56) = 4; Q = 1: MB = 64, D2 = 4*(576 + 6*232) = 7872 (x2 fits),
    #     Th2 = 9*64*4*222 = 511488; MB = 8 still gives 63936 >= 33024 -> Q <= 64.
    # Both prefetch; D2 < D1 -> division 2, Q = 1, MB = 64, RB = 4; items 4*56*8 -> 256 thr.
    "224/64/3": (sc(1, 224, 64, 3), 10, 110, 1, 64, 23488, 367632, 7872, 511488,
                 (1, 2, 1, 1, 64, 4, 1, 256)),
    # 28^2, M512, K3: OH = OW = 26, SW = 36.
    # D1: MB1 = r8(ceil(512/56) = 10) = 16; Th1 = 9*16*26*rows = 3744 rows >= 33024 ->
    #     rows >= 9 -> P <= 3; P = 1 fits (2*4*(144 + 28*36) = 9216): D1 = 4608, Th1 = 97344.
    # D2: RB2 = 1; MB <= 128 -> Q >= 4: D2 = 4*(9*128 + 3*36) = 5040, Th2 = 9*128*26 = 29952
    #     < 33024 for every Q (Q_upper none) -> division 2 only by volume.
    # Division 1 prefetches -> division 1, P = 1, MB = 16, RB = 26 (items 26*7*2 -> 256 thr).
    "28/512/3": (sc(1, 28, 512, 3), 1, 3, 4, None, 4608, 97344, 5040, 29952,
                 (1, 1, 1, 1, 16, 26, 1, 256)),
    # 1024^2, M32, K1: OH = OW = 1024, SW = 1032.
    # D1: MB1 = 8; Th1 = 8*1024*rows = 8192 rows >= 33024 -> rows >= 5 -> P <= 255;
    #     2*4*(8 + rows*1032) <= 49152 -> rows <= 5 -> P >= 205 (ceil(1024/205) = 5):
    #     D1 = 4*(8 + 5*1032) = 20672, Th1 = 40960.
    # D2: RB2 = ceil(1024/56) = 19 -> 11 (whole lines: 11*1032 <= 12288); D2 = 4*(32 +
    #     11*1032) = 45536: two do not fit -> Q_lower none (volume), Th2 = 32*11*1024 = 360448,
    #     Q_upper = 32 (MB = 8 still >= N_FMA).
    # Only division 1 prefetches -> division 1, P = 205, MB = 8, RB = 5.
    "1024/32/1": (sc(1, 1024, 32, 1), 205, 255, None, 32, 20672, 40960, 45536, 360448,
                  (1, 1, 205, 1, 8, 5, 1, 256)),
    # 512^2, M32, K5: OH = OW = 508, SW = 520.
    # D1: MB1 = 8; Th1 = 25*8*508*rows = 101600 rows -> any P <= 508 reaches N_FMA;
    #     2*4*(200 + (rows+4)*520) <= 49152 -> rows <= 7 -> P >= 73: D1 = 4*(200 + 11*520)
    #     = 23680, Th1 = 711200.
    # D2: RB2 = ceil(508/56) = 10; D2 = 4*(800 + 14*520) = 32320 (x2 > 49152, and at MB = 8
    #     too) -> volume, Th2 = 25*32*10*508 = 4064000; Q_upper = 32.
    # Division 1 (prefetch): P = 73, RB = 7.
    "512/32/5": (sc(1, 512, 32, 5), 73, 508, None, 32, 23680, 711200, 32320, 4064000,
                 (1, 1, 73, 1, 8, 7, 1, 256)),
    # 56^2, M256, K5: OH = OW = 52, SW = 64.
    # D1: MB1 = r8(5) = 8; Th1 = 25*8*52*rows = 10400 rows >= 33024 -> rows >= 4 -> P <= 17;
    #     P = 1 fits: D1 = 4*(200 + 56*64) = 15136, Th1 = 540800.
    # D2: RB2 = 1; MB <= 128 -> Q >= 2: D2 = 4*(25*128 + 5*64) = 14080, Th2 = 25*128*52 =
    #     166400; Th2 >= 33024 needs MB >= 32, i.e. ceil(256/Q) >= 25 -> Q <= 10.
    # Both prefetch; D2 < D1 -> division 2, Q = 2, MB = 128, RB = 1 (items 13*16 -> 224 thr).
    "56/256/5": (sc(1, 56, 256, 5), 1, 17, 2, 10, 15136, 540800, 14080, 166400,
                 (1, 2, 1, 2, 128, 1, 1, 224)),
    # SAME padding: 224 x 224 out, SW = roundup4(224 + 2 + 8) = 236.
    # D1 at P = 10 (rows 23): 4*(72 + 25*236) = 23888; Th1 = 72*23*224 = 370944; P <= 111.
    # D2: RB2 = 4: 4*(576 + 6*236) = 7968, Th2 = 9*64*4*224 = 516096.
    "224/64/3 SAME": (sc(1, 224, 64, 3, "SAME"), 10, 111, 1, 64, 23888, 370944, 7968, 516096,
                      (1, 2, 1, 1, 64, 4, 1, 256)),
}


@pytest.mark.parametrize("case", sorted(GTX_CASES))
def test_gtx1080ti_hand_computed(case):
    spec, plo, phi, qlo, qhi, d1, th1, d2, th2, attrs = GTX_CASES[case]
    plan = ps.plan_for(spec, GTX)
    none = lambda v: "none" if v is None else v
    assert plan.method == "single_channel", plan.reason
    assert plan["N_FMA"] == 66048 and plan["N_FMA_block"] == 33024
    assert plan["S_shared"] == 49152 and plan["N_block"] == 56
    assert (plan["P_lower"], plan["P_upper"]) == (none(plo), none(phi))
    assert (plan["Q_lower"], plan["Q_upper"]) == (none(qlo), none(qhi))
    assert (plan["D1"], plan["Th1"], plan["D2"], plan["Th2"]) == (d1, th1, d2, th2)
    assert plan.kernel_attrs == attrs
    assert plan["rule"] == "paper"                       # no Hopper override on Pascal
    assert plan["division"] == attrs[1] and plan["P"] == attrs[2] and plan["Q"] == attrs[3]
    assert plan["mode"] == ("prefetch" if attrs[6] else "volume")


def test_batch_counts_in_division_2():
    # N = 8, 112^2, M128, K3 on the 1080Ti: RB2 = ceil(8*110/56) = 16 rows per block (eq. 7
    # with W_y -> N OH), D2 = 4*(9*128 + 18*120) = 13248 (SW = roundup4(110+2+8) = 120).
    plan = ps.plan_for(sc(8, 112, 128, 3), GTX)
    assert plan["D2"] == 13248 and plan["Th2"] == 9 * 128 * 16 * 110
    assert plan.kernel_attrs == (1, 2, 1, 1, 128, 16, 1, 256)
    assert plan["tiles"] == 8 * 7 * 1 * 1


# ---------------------------------------------------------------- invariants, every preset
GRID = ([sc(N, H, M, K, pad) for N in (1, 3, 32, 64) for H in (7, 28, 29, 56, 224, 1024)
         for M in (1, 13, 32, 512) for K in (1, 3, 5, 7) for pad in ("VALID", "SAME")
         if H >= K and not (H == 1024 and N > 3)]
        + [sc(N, H, M, KH, pad, W=W, KW=KW, layout=lay)
           for N, H, W, M, KH, KW, pad, lay in [
               (2, 31, 17, 40, 3, 5, "SAME", "NHWC"), (5, 1, 3000, 9, 1, 7, "VALID", "NCHW"),
               (1, 600, 5, 70, 7, 1, "SAME", "NCHW"), (64, 13, 57, 200, 2, 2, "VALID", "NHWC"),
               (1, 9, 4000, 3, 7, 7, "SAME", "NHWC"), (7, 3, 3, 1, 3, 3, "SAME", "NCHW"),
               (1, 1, 1, 1, 1, 1, "VALID", "NCHW"), (16, 100, 1, 33, 5, 1, "SAME", "NHWC")]])


@pytest.mark.parametrize("preset", sorted(hwm.PRESETS))
def test_every_plan_is_a_launch_the_kernel_runs(preset):
    hw = hwm.PRESETS[preset]
    reserve = 1024 if hw.compute_capability >= (8, 0) else 0
    for spec in GRID:
        plan = ps.plan_for(spec, hw)
        hash(plan)
        d = spec.dims
        if plan.method == "direct":
            # the kernel's column tile fills a 48 KB input buffer: on Pascal (48 KB per block)
            # one row piece plus filters cannot fit; the planner says so and falls back
            assert hw is GTX and "does not fit" in plan.reason, (spec.describe(), plan.reason)
            continue
        assert plan.method == "single_channel", (spec.describe(), plan.reason)
        a = plan.kernel_attrs
        assert len(a) == 8 and all(type(v) is int for v in a) and a[0] == 1
        if ps.is_pointwise(a):
            assert_pointwise_plan(spec, plan, hw)
            continue
        _, division, P, Q, MB, RB, prefetch, T = a
        # the kernel's supported ranges: the kernel runs this plan exactly
        assert ps.valid_attrs(spec, a, hw) == [], (spec.describe(), a)
        assert MB % 8 == 0 and 8 <= MB <= 128 and 1 <= RB <= min(d["OH"], 64)
        assert T % 32 == 0 and 64 <= T <= 256 and T <= hw.max_threads_per_block
        assert 2 * T <= hw.max_threads_per_sm                      # two blocks per SM
        assert (P, Q) == ((-(-d["OH"] // RB), 1) if division == 1 else (1, -(-d["M"] // MB)))
        # shared memory: what the kernel allocates, two blocks per SM
        L = ps.launch_of(spec, plan)
        assert L["shared"] == plan["shared_bytes_per_block"] <= plan["S_shared"]
        assert plan["S_shared"] <= hw.shared_per_block_optin
        assert 2 * (plan["S_shared"] + reserve) <= hw.shared_per_sm
        rows_in = RB + d["KH"] - 1
        assert rows_in * L["SW"] <= ps.IN_BUDGET                   # the 48 KB input buffer
        # registers (ptxas) at this block size, two blocks per SM
        assert plan["regs_per_thread"] == ps.kernel_regs(d["KH"], d["KW"])
        assert plan["regs_per_thread"] * 256 * 2 <= hw.regs_per_sm
        assert plan["regs_per_thread"] <= hw.max_regs_per_thread
        # the division covers the output exactly once: per-axis partitions, tiles = product
        r = ps.tile_ranges(spec, plan)
        for axis, extent in (("n", d["N"]), ("m", d["M"]), ("oh", d["OH"]), ("ow", d["OW"])):
            assert_partition(r[axis], extent)
        ntiles = len(r["n"]) * len(r["m"]) * len(r["oh"]) * len(r["ow"])
        assert ntiles == plan["tiles"] == L["tiles"]
        assert plan["blocks_used"] == (min(ntiles, 2 * hw.sm_count) if prefetch else ntiles)
        assert plan["Th"] == d["KH"] * d["KW"] * MB * RB * L["CB"]


def assert_pointwise_plan(spec, plan, hw):
    """S6: a pointwise plan is a 1x1 layer under POINTWISE_MAX_OUT outputs on Hopper, with the
    kernel's exact attributes, no shared memory, and one output box per image."""
    d = spec.dims
    assert hw.compute_capability >= (9, 0) and d["KH"] == d["KW"] == 1
    assert d["N"] * d["M"] * d["OH"] * d["OW"] < ps.POINTWISE_MAX_OUT
    assert plan.kernel_attrs == (1, 3, 1, 1, 0, 0, 0, 256)
    assert ps.valid_attrs(spec, plan.kernel_attrs, hw) == []
    assert (plan["division"], plan["mode"], plan["shared_bytes_per_block"]) == (3, "pointwise", 0)
    assert plan["rule"] == "measured (Hopper, 1x1: pointwise)" and "S6" in plan.reason
    r = ps.tile_ranges(spec, plan)
    assert r["n"] == tuple((n, n + 1) for n in range(d["N"]))
    assert (r["m"], r["oh"], r["ow"]) == (((0, d["M"]),), ((0, d["OH"]),), ((0, d["OW"]),))
    assert plan["tiles"] == ps.launch_of(spec, plan)["tiles"] == d["N"]


@pytest.mark.parametrize("preset", ["h100", "h200"])
@pytest.mark.parametrize("N,H,M,lay", [(1, 28, 512, "NHWC"), (1, 112, 128, "NCHW"),
                                       (1, 224, 64, "NCHW"), (1, 512, 32, "NHWC"),
                                       (32, 28, 512, "NCHW"), (3, 9, 5, "NHWC")])
def test_1x1_layers_get_the_pointwise_kernel_by_size(preset, N, H, M, lay):
    """S6: small 1x1 layers plan the pointwise kernel and measure the staged plans after it;
    large ones plan the staged kernel and measure the pointwise one after it; 3x3 and Pascal
    never the pointwise one."""
    hw = hwm.PRESETS[preset]
    spec = sc(N, H, M, 1, layout=lay)
    plan = ps.plan_for(spec, hw)
    cands = ps.candidate_plans(spec, hw, plan)
    pointwise = [c for c in cands if ps.is_pointwise(c.kernel_attrs)]
    assert len({c.kernel_attrs for c in cands}) == len(cands)
    assert all(ps.valid_attrs(spec, c.kernel_attrs, hw) == [] for c in cands)
    if N * M * H * H < ps.POINTWISE_MAX_OUT:
        assert len(pointwise) == 1 and cands[0] is pointwise[0] is plan
        assert_pointwise_plan(spec, plan, hw)
        staged = cands[1]   # the plan without S6, then its variants
        assert staged.kernel_attrs == ps.single_channel_plan(
            spec, hw, __import__("jax_fastconv.planner").planner.latency_model(hw),
            pointwise=False).kernel_attrs
        assert staged["mode"] == "volume" and "staged kernel" in staged["rule"]
    else:
        assert len(pointwise) == 1 and cands[0] is plan and plan["mode"] != "pointwise"
        assert cands[1] is pointwise[0] and "measured" in pointwise[0]["rule"]
    assert ps.is_pointwise(ps.plan_for(sc(N, H, M, 1, layout=lay), hw).kernel_attrs) == (
        N * M * H * H < ps.POINTWISE_MAX_OUT)
    assert not any(ps.is_pointwise(c.kernel_attrs)
                   for c in ps.candidate_plans(sc(N, H, M, 3, layout=lay), hw,
                                               ps.plan_for(sc(N, H, M, 3, layout=lay), hw)))
    assert not ps.is_pointwise(ps.plan_for(spec, GTX).kernel_attrs)


def test_pointwise_attrs_are_checked():
    assert ps.valid_attrs(sc(1, 28, 32, 1), (1, 3, 1, 1, 0, 0, 0, 256), GTX) == []
    assert ps.valid_attrs(sc(1, 28, 32, 3), (1, 3, 1, 1, 0, 0, 0, 256), GTX) == ["pointwise"]
    assert ps.valid_attrs(sc(1, 28, 32, 1), (1, 3, 1, 1, 0, 0, 0, 128), GTX) == ["pointwise"]
    assert ps.valid_attrs(sc(1, 28, 32, 1), (1, 3, 1, 1, 8, 0, 0, 256), GTX) == ["pointwise"]


@pytest.mark.parametrize("preset", sorted(hwm.PRESETS))
def test_tiles_cover_small_outputs_exactly_once(preset):
    hw = hwm.PRESETS[preset]
    for N, H, W, M, KH, KW, pad in [(3, 9, 11, 13, 3, 2, "SAME"), (2, 30, 7, 70, 5, 5, "VALID"),
                                    (1, 4, 300, 9, 1, 3, "SAME"), (5, 17, 17, 1, 7, 7, "SAME")]:
        spec = sc(N, H, M, KH, pad, W=W, KW=KW)
        d = spec.dims
        plan = ps.plan_for(spec, hw)
        r = ps.tile_ranges(spec, plan)
        count = np.zeros((d["N"], d["M"], d["OH"], d["OW"]), np.int32)
        for (n0, n1), (m0, m1), (h0, h1), (w0, w1) in itertools.product(
                r["n"], r["m"], r["oh"], r["ow"]):
            count[n0:n1, m0:m1, h0:h1, w0:w1] += 1
        assert (count == 1).all()


def test_hopper_rule_is_measured_and_says_so():
    h200 = hwm.PRESETS["h200"]
    for spec in (sc(32, 1024, 32, 3), sc(1, 28, 512, 3), sc(1, 224, 64, 5)):
        plan = ps.plan_for(spec, h200)
        assert plan["rule"] == "measured (Hopper)" and "measured" in plan.reason
        assert plan["paper_choice"].startswith("division")      # the paper's choice is shown
        # >= N_sm / 2 tiles before more rows per tile, <= 2048 items per tile, MB <= 32
        assert plan["tiles"] >= 66 or plan["rows_per_block"] == 1
        assert plan["filters_per_block"] <= 32 and plan["mode"] == "volume"


@pytest.mark.parametrize("N, H, M, K, layout, MB, tile", [
    (1, 28, 512, 5, "NHWC", 32, (4, 4)),      # NHWC 5x5: 4 filters (pick_tm)
    (1, 28, 512, 5, "NHWC", 64, (4, 8)),      # ... and 8 columns with >= 64 filters a tile
    (1, 224, 64, 5, "NHWC", 32, (4, 8)),      # ... or on maps of >= 2^15 pixels (pick_tp)
    (1, 56, 256, 3, "NHWC", 32, (4, 4)),      # NHWC 3x3 under 2^24 outputs
    (32, 224, 64, 3, "NHWC", 32, (8, 4)),     # ... not from 2^24 outputs
    (1, 28, 512, 1, "NHWC", 32, (8, 4)),
    (1, 28, 512, 5, "NCHW", 32, (8, 4)),      # NCHW: 8 x 4 whatever the kernel size
    (1, 224, 64, 5, "NCHW", 64, (8, 4)),
])
def test_register_tile_is_the_kernels(N, H, M, K, layout, MB, tile):
    assert ps.register_tile(sc(N, H, M, K, layout=layout), MB) == tile


@pytest.mark.parametrize("H, M, K", [(28, 512, 3), (28, 512, 5), (56, 256, 3), (56, 256, 5),
                                     (112, 128, 5), (31, 26, 3)])
@pytest.mark.parametrize("preset", ["h100", "h200"])
def test_planned_threads_cover_the_kernels_items(H, M, K, preset):
    """One thread per work item of a tile as the kernel counts them (4-filter items on NHWC-like
    5x5 and small 3x3 layers: twice the 8-filter count), up to 256."""
    hw = hwm.PRESETS[preset]
    for layout in ("NCHW", "NHWC"):
        spec = sc(1, H, M, K, layout=layout)
        plan = ps.plan_for(spec, hw)
        _, division, _, _, MB, RB, _, T = plan.kernel_attrs
        assert division in (1, 2), plan.reason
        tm, tp = ps.register_tile(spec, MB)
        items = RB * -(-ps.launch_of(spec, plan)["CB"] // tp) * (MB // tm)
        assert T == max(64, min(256, -(-items // 32) * 32)), (layout, plan.kernel_attrs, items)
        assert plan["register_tile"] == f"{tm} filters x {tp} columns per thread"
    # b1 28x28 K5: the NHWC plan runs twice the threads of the NCHW one (96 -> 192 on Hopper)
    nchw, nhwc = (ps.plan_for(sc(1, 28, 512, 5, layout=lay), hw).kernel_attrs[7]
                  for lay in ("NCHW", "NHWC"))
    assert nhwc == 2 * nchw


def test_invalid_attrs_are_named():
    spec = sc(1, 64, 32, 3)
    assert "MB" in ps.valid_attrs(spec, (1, 2, 1, 1, 12, 4, 0, 256), GTX)
    assert "threads" in ps.valid_attrs(spec, (1, 2, 1, 1, 32, 4, 0, 512), GTX)
    assert "P/Q" in ps.valid_attrs(spec, (1, 1, 1, 1, 32, 4, 0, 256), GTX)
    assert "RB" in ps.valid_attrs(spec, (1, 2, 1, 1, 32, 65, 0, 256), GTX)


def test_export_writes_the_planned_cases(tmp_path):
    path = tmp_path / "plans.txt"
    assert ps.main(["--export", str(path), "--hardware", "h200", "--random", "20"]) == 0
    lines = [l.split() for l in path.read_text().splitlines() if not l.startswith("#")]
    assert sum(l[0].startswith("paper_") for l in lines) == 72
    assert all(len(l) == 19 for l in lines)


@pytest.mark.parametrize("OH,RB", [(1, 1), (24, 24), (54, 54), (64, 64), (65, 33), (108, 54),
                                   (220, 55), (510, 64), (1020, 64)])
def test_band_rows_are_the_fewest_equal_bands(OH, RB):
    assert ps.band_rows(OH) == RB
    bands = -(-OH // RB)
    assert RB <= ps.RB_MAX and bands == -(-OH // ps.RB_MAX)
    assert OH - (bands - 1) * RB >= RB - bands  # the last band is not half empty


@pytest.mark.parametrize("H,M,K,lay", [(28, 512, 5, "NHWC"), (28, 512, 3, "NCHW"),
                                       (56, 256, 5, "NCHW"), (112, 128, 5, "NHWC")])
def test_band_variants_cover_whole_maps(H, M, K, lay):
    hw = hwm.PRESETS["h200"]
    spec = spec_from_logical(32, 1, H, H, M, K, K, padding="VALID", layout=lay)
    plan = ps.plan_for(spec, hw)
    OH = H - K + 1
    bands = {c.kernel_attrs[4]: c for c in ps.candidate_plans(spec, hw, plan)
             if c.kernel_attrs[5] == ps.band_rows(OH) and "whole-map bands" in c.reason}
    assert sorted(bands) == [32, 64, 128]
    for MB, c in bands.items():
        _, division, P, Q, _, RB, prefetch, T = c.kernel_attrs
        assert (division, P, Q, prefetch, T) == (2, 1, -(-M // MB), 0, 256)
        assert ps.valid_attrs(spec, c.kernel_attrs, hw) == []
        assert ps.launch_of(spec, c)["tiles"] == 32 * -(-OH // RB) * -(-M // MB)


# ---------------------------------------------------------------- S7: strides > 1
def scs(N, H, M, K, stride, pad="SAME", W=None, KW=None, layout="NHWC"):
    return spec_from_logical(N, 1, H, W or H, M, K, KW or K, stride=stride, padding=pad,
                             layout=layout)


@pytest.mark.parametrize("M,KH,KW,mb", [
    (1, 3, 3, 4), (4, 3, 3, 4), (5, 3, 3, 8), (64, 7, 7, 64), (100, 3, 3, 128),
    (512, 7, 7, 128),                 # 49 x 128 x 4 B = 25 KB
    (512, 11, 11, 64),                # 121 x 128 > 12288 floats: halved once
    (64, 20, 20, 16), (64, 55, 55, 4), (64, 56, 56, 0)])   # 3136 taps x 4 > 12288: none
def test_strided_filters(M, KH, KW, mb):
    assert ps.strided_filters(M, KH, KW) == mb
    if mb:
        assert KH * KW * mb * 4 <= 48 * 1024 and mb & (mb - 1) == 0


@pytest.mark.parametrize("preset", sorted(hwm.PRESETS))
@pytest.mark.parametrize("N,H,W,M,K,KW,stride,pad,layout", [
    (1, 224, 224, 64, 7, 7, (2, 2), "SAME", "NHWC"),     # a grayscale stem
    (32, 1024, 1024, 32, 3, 3, (2, 2), "SAME", "NCHW"),
    (2, 31, 17, 13, 5, 3, (3, 2), ((2, -1), (0, 3)), "NCHW"),
    (1, 64, 64, 96, 4, 4, (4, 4), "VALID", "NHWC"),      # patches
    (3, 40, 9, 8, 1, 1, (1, 2), "VALID", "NHWC"),        # one axis strided, 1x1
    (2, 50, 50, 6, 3, 3, (2, 2), "SAME", "NHWC"),        # M % 4 != 0: the column order
    (1, 33, 33, 3, 3, 3, (2, 2), "VALID", "NCHW"),       # a slab of 4: 4 filters per thread
])
def test_strided_layers_plan_the_strided_kernel(preset, N, H, W, M, K, KW, stride, pad, layout):
    hw = hwm.PRESETS[preset]
    spec = scs(N, H, M, K, stride, pad, W=W, KW=KW, layout=layout)
    d = spec.dims
    plan = ps.plan_for(spec, hw)
    assert plan.method == "single_channel" and ps.is_strided(plan.kernel_attrs), plan.reason
    assert plan.kernel_attrs == (1, 4, 1, 1, 0, 0, 0, 256)
    assert ps.valid_attrs(spec, plan.kernel_attrs, hw) == []
    mb = ps.strided_filters(M, K, KW)
    assert (plan["division"], plan["mode"], plan["filters_per_block"]) == (4, "strided", mb)
    assert plan["shared_bytes_per_block"] == 4 * K * KW * mb
    # 4 filters per thread where the output's filters are its fastest axis in runs of 4, for
    # slabs of 4 and for kernels of < 9 taps; 8 where that keeps 256 threads per SM or >= 25 taps
    threads8 = N * d["OH"] * -(-d["OW"] // 4) * (mb // 8) * -(-M // mb)
    tm = 4 if ((layout == "NHWC" and M % 4 == 0) or mb < 8 or K * KW < 9
               or (K * KW < 25 and threads8 < 256 * hw.sm_count)) else 8
    assert plan["filters_per_thread"] == tm == ps.strided_filters_per_thread(spec, mb, hw.sm_count)
    assert plan["work_items"] == N * d["OH"] * -(-d["OW"] // 4) * mb // tm * -(-M // mb)
    assert plan["FMA_per_item"] == K * KW * tm * 4
    assert f"stride {stride}" in plan.reason and "S7" in plan.reason
    assert ps.candidate_plans(spec, hw, plan) == [plan]     # nothing to measure against
    r = ps.tile_ranges(spec, plan)
    assert_partition(r["m"], M) and assert_partition(r["oh"], d["OH"])
    assert all(hi - lo <= mb for lo, hi in r["m"])
    assert ps.launch_of(spec, plan)["tiles"] == N * -(-M // mb)


@pytest.mark.parametrize("M,C,KH,KW,mb", [
    (64, 3, 7, 7, 64),                # an RGB stem: 147 x 64 x 4 B = 37.6 KB
    (64, 3, 11, 11, 32),              # 363 x 64 > 12288 floats: halved once
    (8, 7, 20, 20, 4), (8, 7, 21, 21, 0)])   # 3087 taps x 4 > 12288 floats: none
def test_strided_filters_count_the_channels(M, C, KH, KW, mb):
    assert ps.strided_filters(M, KH, KW, C) == mb


@pytest.mark.parametrize("preset", ["h100", "gtx1080ti"])
@pytest.mark.parametrize("N,C,H,M,K,stride,layout", [
    (32, 3, 224, 64, 7, (2, 2), "NHWC"),     # ResNet's stem
    (1, 3, 224, 64, 3, (1, 1), "NCHW"),      # VGG-16's first layer: stride 1 too
    (8, 3, 224, 96, 4, (4, 4), "NCHW"),      # ConvNeXt's patchify stem
    (2, 7, 33, 13, 5, (2, 2), "NHWC"),
    (4, 2, 64, 8, 2, (2, 2), "NHWC"),
])
def test_few_channel_layers_plan_the_strided_kernel(preset, N, C, H, M, K, stride, layout):
    """1 < C < 8 (S8): the strided kernel, each channel's share summed in registers."""
    from jax_fastconv import planner as pl
    hw = hwm.PRESETS[preset]
    spec = spec_from_logical(N, C, H, H, M, K, K, stride=stride, padding="SAME", layout=layout)
    d = spec.dims
    plan = pl.make_plan(spec, hw)
    assert plan.method == "single_channel" and ps.is_strided(plan.kernel_attrs), plan.reason
    assert ps.valid_attrs(spec, plan.kernel_attrs, hw) == []
    mb = ps.strided_filters(M, K, K, C)
    assert plan["filters_per_block"] == mb and plan["shared_bytes_per_block"] == 4 * C * K * K * mb
    assert plan["rule"] == "few channels (S8)" and "S8" in plan.reason
    assert f"C = {C} < 8" in plan.reason and f"{C}x{K}x{K} weights" in plan.reason
    tm = plan["filters_per_thread"]
    assert tm == ps.strided_filters_per_thread(spec, mb, hw.sm_count)
    assert plan["FMA_per_item"] == C * K * K * tm * 4
    # the bound it names is the larger of the two floors on this hardware's numbers
    fma_us = spec.flops / 2 / (hw.sm_count * hw.cores_per_sm * hw.fma_per_core_per_clock
                               * hw.clock_hz) * 1e6
    assert plan["FMA_floor_us"] == pytest.approx(fma_us, abs=0.01)
    assert plan["byte_floor_us"] == pytest.approx(spec.min_bytes / hw.bandwidth_bytes_per_s * 1e6,
                                                  abs=0.01)
    assert (f"bound by its {C * K * K} FMAs per output" in plan.reason) == (
        plan["FMA_floor_us"] > plan["byte_floor_us"])
    r = pl.division_ranges(spec, plan)
    assert r["c"] == ((0, C),)
    assert_partition(r["m"], M)


@pytest.mark.parametrize("C,K,KW,stride", [
    (3, 16, 16, (16, 16)),    # ViT-B/16's patchify stem: measured slower than lax
    (4, 1, 1, (1, 1)), (2, 5, 3, (2, 2)), (3, 3, 3, (1, 2)), (5, 9, 9, (1, 1))])
def test_few_channel_layers_without_a_compiled_instance_run_lax(C, K, KW, stride):
    from jax_fastconv import planner as pl
    spec = spec_from_logical(2, C, 64, 64, 32, K, KW, stride=stride, padding="SAME")
    assert ps.strided_supported(spec) is None and not ps.few_channel_instance(spec)
    plan = pl.make_plan(spec, hwm.PRESETS["h100"])
    assert plan.method == "direct" and "no compiled instance" in plan.reason
    assert f"C = {C}, stride {stride}" in plan.reason


def test_strided_plans_name_the_larger_floor():
    """The RGB stem at batch 32 is bound by its 147 FMAs per output on an H100; a C = 1 3x3/2
    layer by its output's stores."""
    from jax_fastconv import planner as pl
    hw = hwm.PRESETS["h100"]
    stem = pl.make_plan(spec_from_logical(32, 3, 224, 224, 64, 7, 7, stride=(2, 2),
                                          padding="SAME", layout="NHWC"), hw)
    assert stem["FMA_floor_us"] > 2 * stem["byte_floor_us"]
    assert "bound by its 147 FMAs per output" in stem.reason
    gray = pl.make_plan(scs(32, 1024, 32, 3, (2, 2)), hw)
    assert gray["byte_floor_us"] > 2 * gray["FMA_floor_us"]
    spec = scs(32, 1024, 32, 3, (2, 2))
    assert f"bound by its {spec.min_bytes} B of traffic, the output's " \
           f"{4 * 32 * 32 * 512 * 512} B of stores the most" in gray.reason
    assert 4 * 32 * 32 * 512 * 512 > spec.min_bytes / 2


def test_strided_kernel_limits_and_attrs():
    from jax_fastconv import planner as pl
    hw = hwm.PRESETS["h100"]
    huge_k = scs(1, 200, 64, 56, (2, 2), "VALID")            # 56x56 taps: no slab fits 48 KB
    plan = pl.make_plan(huge_k, hw)
    assert plan.method == "direct" and "48 KB slab" in plan.reason
    assert ps.strided_supported(huge_k) is not None
    assert ps.strided_supported(sc(1, 28, 8, 3)) is not None        # stride 1: not this kernel
    many = spec_from_logical(1, 1, 1 << 16, 1 << 16, 128, 1, 1, stride=(2, 2), padding="VALID")
    assert "work items" in pl.make_plan(many, hw).reason               # 2^15 x 2^13 x 32 items
    ok = scs(1, 28, 8, 3, (2, 2))
    assert ps.strided_supported(ok) is None
    assert ps.valid_attrs(ok, (1, 4, 1, 1, 0, 0, 0, 256), hw) == []
    assert ps.valid_attrs(ok, (1, 4, 1, 1, 0, 0, 0, 128), hw) == ["strided"]
    assert ps.valid_attrs(sc(1, 28, 8, 3), (1, 4, 1, 1, 0, 0, 0, 256), hw) == ["strided"]
    assert not ps.is_strided(ps.plan_for(sc(1, 28, 8, 3), hw).kernel_attrs)
    import jax_fastconv as fc
    ex = fc.explain((1, 1, 64, 64), (16, 1, 3, 3), (2, 2), "SAME", hardware="h100")
    assert ex.plan.method == "single_channel" and "mode = strided" in str(ex)


def test_strided_support_is_the_kernels(tmp_path):
    """The planner's mirror of the strided kernel's host checks (strided_filters,
    strided_supported, strided_filters_per_thread) answers as cuda/single_channel_strided.h
    does, built on the host."""
    import random
    import subprocess
    from _helpers import build_host_check
    exe = build_host_check("strided_support_check", tmp_path)
    rng = random.Random(11)
    specs = []
    for i in range(600):
        big = i % 5 == 0
        H = rng.choice([1, 7, 64, 1 << 12, (1 << 30) - 3, 1 << 30]) if big else rng.randint(1, 300)
        W = rng.choice([1, 9, 1 << 16, (1 << 30) + 5]) if big else rng.randint(1, 300)
        KH, KW = (rng.choice([1, 3, 40, 56, 64]), rng.choice([1, 7, 55, 64])) if big else \
            (rng.randint(1, 9), rng.randint(1, 9))
        st = (rng.randint(1, 4), rng.randint(1, 4)) if i % 7 else (1, 1)
        M = rng.choice([1, 5, 64, 300, 1 << 20, (1 << 30) + 1]) if big else rng.randint(1, 300)
        N = rng.choice([1, 3, 1 << 12]) if big else rng.randint(1, 40)
        C = 1 if i % 3 else rng.choice([2, 3, 5, 7, 8, 64])
        pads = tuple((rng.randint(-2, 4), rng.randint(-2, 4)) for _ in range(2))
        if H + pads[0][0] + pads[0][1] < KH or W + pads[1][0] + pads[1][1] < KW:
            pads = ((KH, KH), (KW, KW))
        specs.append(spec_from_logical(N, C, H, W, M, KH, KW, stride=st, padding=pads,
                                       layout=rng.choice(["NHWC", "NCHW"])))
    lines, sms = [], [rng.choice([20, 132, 1000]) for _ in specs]
    for s, n_sm in zip(specs, sms):
        d = s.dims
        (pt, _), (pl, _) = s.padding
        lines.append(" ".join(str(v) for v in (d["N"], d["C"], d["H"], d["W"], d["M"], d["KH"],
                                               d["KW"], d["OH"], d["OW"], *s.window_strides,
                                               pt, pl, *s.out_strides, n_sm)))
    out = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True,
                         text=True, timeout=60, check=True).stdout.split("\n")
    n_ok, tms = 0, set()
    for s, n_sm, line in zip(specs, sms, out):
        d = s.dims
        mb, ok, tm = (int(v) for v in line.split())
        assert mb == ps.strided_filters(d["M"], d["KH"], d["KW"], d["C"]), (s.describe(), line)
        assert bool(ok) == (ps.strided_supported(s) is None), (s.describe(), line)
        if ok:
            assert tm == ps.strided_filters_per_thread(s, mb, n_sm), (s.describe(), line)
            tms.add(tm)
        n_ok += ok
    assert len(out) >= len(specs) and 300 < n_ok < len(specs)   # both answers are exercised
    assert tms == {4, 8}
