"""The measured choice between the kernel and lax HIGHEST (jax_fastconv/autotune.py): the
timing itself (run on the CPU kernel here), the per-process and on-disk caches, and how
conv_general_dilated / explain() follow the choice on the GPU path (routed with a preset
hardware and a stand-in choice, so it runs without a GPU)."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import jax

import jax_fastconv as fc
from jax_fastconv import _ffi, autotune, planner
from jax_fastconv.spec import normalize
from _helpers import StreamStampStandIn, assert_close, pretend_cuda, randn, ref_conv

needs_cpu_module = pytest.mark.skipif(_ffi.cpu_module is None, reason="CPU extension not built")

DN = ("NHWC", "HWIO", "NHWC")


def _spec(c=3, h=9, m=4, k=3):
    return normalize((1, h, h, c), (k, k, c, m), (1, 1), "SAME", None, None, DN)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JAX_FASTCONV_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(autotune.ENV, raising=False)
    autotune.clear_memory()
    yield tmp_path
    autotune.clear_memory()


@needs_cpu_module
@pytest.mark.parametrize("shape", [(3, 9, 4, 3), (1, 12, 8, 5)])
def test_measure_times_both_candidates(shape):
    spec = _spec(*shape)
    choice = autotune.measure(spec, planner.plan_cached(spec, None), rounds=3, warmup=1)
    assert choice.kernel_us > 0 and choice.lax_us > 0
    assert 2 <= choice.R <= autotune.MAX_R
    assert choice.use_kernel == (choice.lax_us >= choice.kernel_us * (1 - autotune.TIE))
    assert "kernel" in choice.describe() and "lax HIGHEST" in choice.describe()


@needs_cpu_module
@pytest.mark.parametrize("rival,kernel_us,rival_us,use_kernel", [
    ("lax", 10.0, 5.0, False), ("lax", 10.0, 9.8, True), ("gemm", 4.0, 6.0, True)])
def test_measure_by_the_stream_clock(monkeypatch, rival, kernel_us, rival_us, use_kernel):
    """JAX_FASTCONV_AUTOTUNE_CLOCK=stream: both candidates run between stamps (slots 32 and 34)
    and are compared by the events' time / R, not by the wall clock; the choice says so."""
    spec = _spec() if rival == "lax" else normalize((1, 8, 8, 3), (2, 2, 3, 4), (2, 2), "VALID",
                                                    None, None, DN)
    plan = planner.plan_cached(spec, None)
    budget = 1 << 20
    R = int(max(2, min(autotune.MAX_R, budget // spec.min_bytes)))
    fake = StreamStampStandIn({32: kernel_us, 34: rival_us}, R)
    monkeypatch.setattr(autotune, "stream_stamp", fake)
    monkeypatch.delenv(autotune.CLOCK_ENV, raising=False)
    assert not autotune.stream_clock()                  # wall clock unless asked for
    monkeypatch.setenv(autotune.CLOCK_ENV, "stream")
    assert autotune.stream_clock()
    choice = autotune.measure(spec, plan, rival=rival, rounds=2, warmup=1, budget_bytes=budget)
    assert fake.slots == [32, 34] and choice.R == R
    assert choice.kernel_us == pytest.approx(kernel_us)
    assert choice.rival_us == pytest.approx(rival_us) and choice.rival == rival
    assert choice.use_kernel is use_kernel and choice.note == autotune.STREAM_NOTE
    assert "of device time (stream span)" in choice.describe()


def test_stream_clock_choices_are_cached_apart(cache, monkeypatch):
    """Choices timed by the stream clock do not reuse wall-clock entries, nor the reverse."""
    monkeypatch.setattr(autotune, "stream_stamp", StreamStampStandIn({}, 1))
    clocks = []

    def fake_measure(spec, plan, **kw):
        clocks.append(autotune.stream_clock())
        return autotune.Choice(True, 5.0, 9.0, 8)
    monkeypatch.setattr(autotune, "measure", fake_measure)
    spec = _spec()
    plan = planner.plan_cached(spec, None)
    autotune.choose(spec, plan)
    monkeypatch.setenv(autotune.CLOCK_ENV, "stream")
    autotune.choose(spec, plan)
    autotune.choose(spec, plan)
    assert clocks == [False, True]
    keys = list(json.loads(next(cache.glob("autotune-*.json")).read_text()))
    assert len(keys) == 2 and sum(k.endswith(" | clock=stream") for k in keys) == 1


def test_stream_clock_needs_the_stamps(monkeypatch):
    from jax_fastconv import stream_stamp
    if stream_stamp.available():
        pytest.skip("the stamps run here")
    monkeypatch.setenv(autotune.CLOCK_ENV, "stream")
    assert autotune.stream_clock() is False   # no GPU backend or no CUDA module: wall clock


@needs_cpu_module
def test_measure_runs_while_an_outer_jit_traces():
    spec = _spec()
    seen = []

    def f(x):
        seen.append(autotune.measure(spec, planner.plan_cached(spec, None), rounds=1, warmup=0))
        return x * 2

    np.testing.assert_allclose(jax.jit(f)(np.ones(3, np.float32)), 2.0)
    assert seen and seen[0].kernel_us > 0


@pytest.mark.parametrize("R,lhs,rhs", [(4, (2, 5, 5, 3), (3, 3, 3, 2)), (17, (1, 1, 9, 7), (4, 1, 2, 2))])
def test_random_pairs_are_distinct_concrete_draws_even_under_jit(R, lhs, rhs):
    """timing.random_pairs (the autotuner's and the benchmark's inputs): R separate concrete
    arrays with the stacked draw's values for the seed, also when called while an outer jit
    traces (eager there too: no tracer leaks out, nothing is staged into the outer call)."""
    from jax_fastconv.timing import random_pairs
    k1, k2 = jax.random.split(jax.random.PRNGKey(9))
    want_x = np.asarray(jax.random.normal(k1, (R,) + lhs, "float32"))
    want_w = np.asarray(jax.random.normal(k2, (R,) + rhs, "float32"))
    got = []

    def f(x):
        got.append(random_pairs(lhs, rhs, R, seed=9))
        return x + 1

    jaxpr = str(jax.make_jaxpr(f)(np.float32(1)))
    assert "random" not in jaxpr and "threefry" not in jaxpr      # nothing staged
    for xs, ws in [got[0], random_pairs(lhs, rhs, R, seed=9)]:
        assert len(xs) == len(ws) == R and isinstance(xs[0], jax.Array)
        np.testing.assert_array_equal(np.stack([np.asarray(x) for x in xs]), want_x)
        np.testing.assert_array_equal(np.stack([np.asarray(w) for w in ws]), want_w)
    assert len({float(np.asarray(x).ravel()[0]) for x in got[0][0]}) == R
    other = random_pairs(lhs, rhs, R, seed=10)[0][0]
    assert not np.array_equal(np.asarray(other), want_x[0])


def test_choose_caches_in_memory_and_on_disk(cache, monkeypatch):
    calls = []

    def fake_measure(spec, plan, **kw):
        calls.append(spec)
        return autotune.Choice(False, 20.0, 10.0, 8)

    monkeypatch.setattr(autotune, "measure", fake_measure)
    spec = _spec()
    plan = planner.plan_cached(spec, None)
    first = autotune.choose(spec, plan)
    assert first.use_kernel is False and len(calls) == 1
    assert autotune.choose(spec, plan) == first and len(calls) == 1     # memory
    files = list(cache.glob("autotune-*.json"))
    assert len(files) == 1
    stored = json.loads(files[0].read_text())
    assert list(stored.values())[0]["lax_us"] == 10.0
    autotune.clear_memory()
    assert autotune.choose(spec, plan) == first and len(calls) == 1     # disk
    other = _spec(c=5)
    autotune.choose(other, planner.plan_cached(other, None))
    assert len(calls) == 2                                              # new key


def test_failed_measurement_keeps_the_kernel_and_is_not_stored(cache, monkeypatch):
    def boom(spec, plan, **kw):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(autotune, "measure", boom)
    spec = _spec()
    choice = autotune.choose(spec, planner.plan_cached(spec, None))
    assert choice.use_kernel and "out of memory" in choice.note
    assert not list(cache.glob("autotune-*.json"))


@pytest.fixture
def gpu_route(monkeypatch, cache):
    """Route _decide as on a GPU (preset H200 hardware), without running anything on one."""
    pretend_cuda(monkeypatch, "h200", autotune=True)
    calls = []

    def route(choice):
        def fake_choose(spec, plan):
            calls.append(spec)
            return choice
        monkeypatch.setattr(autotune, "choose", fake_choose)
        return calls
    return route


# NHWC and NCHW multi-channel layers inside autotune.worth_measuring (K3, C >= 32, >= 1 GFLOP).
ROUTED = [((8, 32, 32, 64), (3, 3, 64, 128), DN),
          ((8, 64, 32, 32), (128, 64, 3, 3), ("NCHW", "OIHW", "NCHW"))]
# Outside it: single channel; K = 1; C < 32; under 1 GFLOP.
NOT_MEASURED = [((1, 64, 64, 1), (3, 3, 1, 32), DN),
                ((32, 32, 32, 256), (1, 1, 256, 256), DN),
                ((64, 16, 32, 32), (64, 16, 3, 3), ("NCHW", "OIHW", "NCHW")),
                ((1, 14, 14, 256), (3, 3, 256, 256), DN)]


@needs_cpu_module
@pytest.mark.parametrize("lhs_shape,rhs_shape,dn", ROUTED)
def test_lax_choice_runs_lax_at_highest(gpu_route, lhs_shape, rhs_shape, dn):
    calls = gpu_route(autotune.Choice(False, 30.0, 12.0, 16))
    e = fc.explain(lhs_shape, rhs_shape, (1, 1), "SAME", dimension_numbers=dn)
    assert e.path == "lax" and e.measured is not None
    assert "lax HIGHEST was faster" in e.reason and "12.0 us" in e.reason
    assert "autotune:" in str(e)
    rng = np.random.default_rng(0)
    x, w = randn(rng, lhs_shape), randn(rng, rhs_shape)
    f = lambda x, w: fc.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
    jaxpr = str(jax.make_jaxpr(f)(x, w))
    assert "conv_general_dilated" in jaxpr and "HIGHEST" in jaxpr   # DEFAULT was asked
    assert "fastconv_conv2d" not in jaxpr
    assert_close(jax.jit(f)(x, w), ref_conv(x, w, (1, 1), "SAME", dimension_numbers=dn))
    assert len(calls) >= 2


@pytest.mark.parametrize("lhs_shape,rhs_shape,dn", ROUTED)
def test_kernel_choice_keeps_the_kernel(gpu_route, lhs_shape, rhs_shape, dn):
    gpu_route(autotune.Choice(True, 8.0, 12.0, 16))
    e = fc.explain(lhs_shape, rhs_shape, (1, 1), "SAME", dimension_numbers=dn)
    assert e.path == "fastconv-cuda" and e.measured.use_kernel
    assert "kernel 8.0 us" in str(e)
    jaxpr = str(jax.make_jaxpr(lambda x, w: fc.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=dn))(
        np.zeros(lhs_shape, np.float32), np.zeros(rhs_shape, np.float32)))
    assert "fastconv_conv2d" in jaxpr


def test_autotune_off_never_measures(gpu_route, monkeypatch):
    calls = gpu_route(autotune.Choice(False, 30.0, 12.0, 16))
    monkeypatch.setenv(autotune.ENV, "0")
    lhs, rhs, dn = ROUTED[0]
    e = fc.explain(lhs, rhs, (1, 1), "SAME", dimension_numbers=dn)
    assert e.path == "fastconv-cuda" and e.measured is None and not calls


def test_other_hardware_is_planned_not_measured(gpu_route):
    calls = gpu_route(autotune.Choice(False, 30.0, 12.0, 16))
    lhs, rhs, dn = ROUTED[1]
    e = fc.explain(lhs, rhs, (1, 1), "SAME", dimension_numbers=dn, hardware="h100")
    assert e.path == "fastconv-cuda" and e.measured is None and not calls


def test_uncovered_arguments_are_not_measured(gpu_route):
    calls = gpu_route(autotune.Choice(True, 1.0, 2.0, 16))
    e = fc.explain((1, 8, 8, 4), (3, 3, 4, 4), (1, 1), "SAME", dimension_numbers=DN,
                   rhs_dilation=(2, 2))
    assert e.path == "lax" and e.measured is None and not calls


@pytest.mark.parametrize("lhs_shape,rhs_shape,dn", NOT_MEASURED)
def test_layers_lax_cannot_win_are_not_measured(gpu_route, lhs_shape, rhs_shape, dn):
    calls = gpu_route(autotune.Choice(False, 30.0, 12.0, 16))
    e = fc.explain(lhs_shape, rhs_shape, (1, 1), "SAME", dimension_numbers=dn)
    assert e.path == "fastconv-cuda" and e.measured is None and not calls
    assert not autotune.worth_measuring(e.spec, e.plan)


def test_worth_measuring_thresholds():
    spec = normalize((8, 32, 32, 64), (3, 3, 64, 128), (1, 1), "SAME", None, None, DN)
    plan = planner.plan_cached(spec, None)
    assert spec.flops >= autotune.MIN_FLOPS
    mc = type("P", (), {"method": "multi_channel"})()
    sc = type("P", (), {"method": "single_channel"})()
    assert autotune.worth_measuring(spec, mc) and not autotune.worth_measuring(spec, sc)
    small = normalize((1, 32, 32, 64), (3, 3, 64, 128), (1, 1), "SAME", None, None, DN)
    assert small.flops < autotune.MIN_FLOPS and not autotune.worth_measuring(small, mc)
    del plan


# -- the measured choice among launches of the single-channel kernel (autotune.choose_plan) --

from jax_fastconv import plan_single_channel as ps  # noqa: E402
from jax_fastconv.hardware import PRESETS  # noqa: E402
from jax_fastconv.spec import spec_from_logical  # noqa: E402

SC_SHAPES = [(N, H, M, K, lay) for N in (1, 32) for H, M in ((28, 512), (112, 128), (1024, 32))
             for K in (1, 3, 5) for lay in ("NHWC", "NCHW")] + [(3, 37, 70, 7, "NCHW"),
                                                                (5, 19, 9, 2, "NHWC")]


@pytest.mark.parametrize("N,H,M,K,lay", SC_SHAPES)
@pytest.mark.parametrize("hw_name", ["h200", "h100"])
def test_candidate_plans_are_valid_distinct_launches(N, H, M, K, lay, hw_name):
    hw = PRESETS[hw_name]
    spec = spec_from_logical(N, 1, H, H, M, K, K, padding="VALID", layout=lay)
    plan = planner.make_plan(spec, hw)
    cands = ps.candidate_plans(spec, hw, plan)
    assert cands[0] is plan and len(cands) >= 2
    attrs = [c.kernel_attrs for c in cands]
    assert len(set(attrs)) == len(attrs)
    for c in cands:
        assert c.method == "single_channel" and ps.valid_attrs(spec, c.kernel_attrs, hw) == []
        if ps.is_pointwise(c.kernel_attrs):   # the 1x1 kernel (S6): no tiles
            assert K == 1 and c["mode"] == "pointwise" and c["tiles"] == N
            continue
        _, division, P, Q, MB, RB, prefetch, T = c.kernel_attrs
        if ps.is_mma(c.kernel_attrs):   # the tensor-core kernel (S9): its tiles, 2+ taps only
            assert K > 1 and c["mode"] == "tensor cores (3xTF32)" and "3xTF32" in c.reason
            assert (MB, RB) in ps.mma_tiles(spec, hw) and c["tiles"] == ps.launch_of(spec, c)["tiles"]
            assert c["blocks_used"] == min(c["tiles"], 2 * hw.sm_count) and c["division"] == 5
            continue
        if ps.is_tz(c.kernel_attrs):   # the wgmma kernel (S11): NHWC or planes, 32-filter blocks
            assert K > 1 and M % 32 == 0 and c["division"] == 6
            assert lay == "NHWC" or ps.tz_planes(spec)   # planes: OW % 4 == 0 (tz_planes)
            rs = ", A from registers" if prefetch & 2 else ""
            al = ", the aligned line" if prefetch & 4 else ""
            dn = ", dense segments" if prefetch & 8 else ""
            assert c["mode"] == "wgmma over a Toeplitz band (3xTF32)" + rs + al + dn
            assert c.reason.endswith(rs + al + dn) and "Toeplitz" in c.reason
            assert not al or (rs and ps.tz_planes(spec)) and not (al and dn) and (rs or not dn)
            assert (RB, T // 128) + ps.tz_flags(prefetch)[1:] in ps.tz_launches(spec, hw) and MB == 32
            assert prefetch & 1 and (not rs or T == 256)   # staggered; registers: 2 warpgroups
            assert c["tiles"] == ps.launch_of(spec, c)["tiles"] == c["blocks_used"]
            continue
        assert (c["division"], c["filters_per_block"], c["rows_per_block"],
                c["threads_per_block"]) == (division, MB, RB, T)
        mode = "prefetch" if prefetch & 1 else "volume"
        if ps.is_f45(c.kernel_attrs):   # row-Winograd products (S10): 5x5 only, 256 threads
            assert K == 5 and T == 256 and "row-Winograd" in c.reason
            mode += ", row-Winograd F(4, 5) products"
        assert c["mode"] == mode
        assert c["tiles"] == ps.launch_of(spec, c)["tiles"]
        assert c["shared_bytes_per_block"] == ps.launch_of(spec, c)["shared"]


@pytest.mark.parametrize("N,H,M,K,lay", SC_SHAPES)
def test_candidate_plans_offer_winograd_tiles_on_5x5_layers(N, H, M, K, lay):
    hw = PRESETS["h200"]
    spec = spec_from_logical(N, 1, H, H, M, K, K, padding="VALID", layout=lay)
    plan = planner.make_plan(spec, hw)
    f45 = [c.kernel_attrs for c in ps.candidate_plans(spec, hw, plan) if ps.is_f45(c.kernel_attrs)]
    if K != 5:
        assert f45 == [] and ps.f45_supported(spec) == "not a 5x5 kernel"
        return
    if N * M * (H - 4) ** 2 >= 1 << 29:   # past the safe side of 32-bit tile offsets
        assert f45 == [] and ps.f45_supported(spec) == "outputs past 32-bit offsets"
        return
    assert ps.f45_supported(spec) is None
    # the planned tile with the products first, then F45_TILES (those valid and distinct)
    assert 2 <= len(f45) <= 1 + len(ps.F45_TILES)
    if plan.kernel_attrs[1] in (1, 2):
        assert f45[0] == plan.kernel_attrs[:6] + (plan.kernel_attrs[6] | ps.F45_FLAG, 256)
    for a in f45:
        assert a[6] in (2, 3) and a[7] == 256
        L = ps.launch_of(spec, _replace(plan, a))
        assert L["f45"] and L["prefetch"] == a[6] & 1
        assert L["shared"] == ps.f45_shared_bytes(a[5], a[4], 5, 5, spec.dims["OW"])


def _replace(plan, attrs):
    return dataclasses.replace(plan, kernel_attrs=tuple(attrs))


def test_winograd_flag_is_valid_on_5x5_single_channel_layers_only():
    hw = PRESETS["h200"]
    k5 = spec_from_logical(1, 1, 64, 64, 32, 5, 5, padding="VALID", layout="NCHW")
    k3 = spec_from_logical(1, 1, 64, 64, 32, 3, 3, padding="VALID", layout="NCHW")
    for pref in (0, 1, 2, 3):
        assert ps.valid_attrs(k5, (1, 2, 1, 1, 32, 4, pref, 256), hw) == []
    assert ps.valid_attrs(k3, (1, 2, 1, 1, 32, 4, 2, 256), hw) == ["row-Winograd products"]
    assert ps.valid_attrs(k5, (1, 2, 1, 1, 32, 4, 4, 256), hw) == ["prefetch"]
    big = spec_from_logical(64, 1, 1024, 1024, 64, 5, 5, padding="VALID", layout="NHWC")
    assert ps.f45_supported(big) == "outputs past 32-bit offsets"
    assert ps.valid_attrs(big, (1, 2, 1, 2, 32, 4, 2, 256), hw) == ["row-Winograd products"]
    # shared memory: raw patch + its transform (8 floats per 4 columns) + raw and transformed
    # filters, single buffered: RB 4, MB 32, OW 60 (CB 60, SW 72, 15 chunks)
    assert ps.f45_shared_bytes(4, 32, 5, 5, 60) == 4 * (8 * (72 + 120) + 25 * 32 + 8 * 164)


def _offered_per_preset(spec, kind, key):
    """Per preset (an H200, an H100, a GTX 1080 Ti): key(attributes) of the candidate plans of
    `kind` (ps.is_mma, ps.is_tz) that candidate_plans offers for spec, in order."""
    out = {}
    for name in ("h200", "h100", "gtx1080ti"):
        hw = PRESETS[name]
        cands = ps.candidate_plans(spec, hw, planner.make_plan(spec, hw))
        out[name] = [key(c.kernel_attrs) for c in cands if kind(c.kernel_attrs)]
    return out


@pytest.mark.parametrize("N,H,M,K,lay", [(1, 512, 32, 5, "NHWC"), (32, 28, 512, 3, "NCHW"),
                                          (3, 37, 70, 7, "NCHW"), (5, 19, 9, 2, "NHWC")])
def test_candidate_plans_offer_the_tensor_cores_where_they_run(N, H, M, K, lay):
    spec = spec_from_logical(N, 1, H, H, M, K, K, padding="VALID", layout=lay)
    tried = _offered_per_preset(spec, ps.is_mma, lambda a: tuple(a[4:6]))
    assert len(tried["h200"]) == ps.MMA_TRIES and len(set(tried["h200"])) == ps.MMA_TRIES
    assert tried["h100"] == tried["h200"]            # same SM count: same ranking
    assert tried["gtx1080ti"] == []                  # no TF32 tensor cores on sm_61
    assert ps.mma_supported(spec, PRESETS["gtx1080ti"]) == "no TF32 tensor cores (sm_80+)"


@pytest.mark.parametrize("KH,KW,why", [(1, 1, "1 taps"), (9, 9, "81 taps")])
def test_tensor_cores_leave_out_what_the_kernel_does_not_run(KH, KW, why):
    spec = spec_from_logical(2, 1, 40, 40, 16, KH, KW, padding="VALID", layout="NHWC")
    assert why in ps.mma_supported(spec, PRESETS["h200"])
    cands = ps.candidate_plans(spec, PRESETS["h200"], planner.make_plan(spec, PRESETS["h200"]))
    assert not any(ps.is_mma(c.kernel_attrs) for c in cands)
    wide = spec_from_logical(1, 1, 4, 9000, 16, 5, 5, padding="VALID", layout="NHWC")
    assert ps.mma_supported(wide, PRESETS["h200"]) == "one input row band exceeds its shared memory"


def test_tensor_core_tiles_rank_the_measured_best():
    # H100 driver grid (RB 1-32 x MB 16-128, session 30): the best tile of b32 28^2 K5 (MB 64,
    # RB 16: 16.3 us) and of b1 512^2 K5 NHWC (MB 32, RB 1-2: 14.8-14.9 us) within the top 3
    # tiles' measured times by ~1%
    hw = PRESETS["h100"]
    b32 = spec_from_logical(32, 1, 28, 28, 512, 5, 5, padding="VALID", layout="NHWC")
    b1 = spec_from_logical(1, 1, 512, 512, 32, 5, 5, padding="VALID", layout="NHWC")
    assert (64, 8) in ps.mma_tiles(b32, hw) and (32, 2) in ps.mma_tiles(b1, hw)
    for spec in (b32, b1):
        for MB, RB in ps.mma_tiles(spec, hw):
            assert ps.valid_attrs(spec, (1,) + ps.mma_attrs(MB, RB), hw) == []
            assert ps.valid_attrs(spec, (1,) + ps.mma_attrs(MB + 8, RB), hw) == ["tensor-core tile"]


@pytest.mark.parametrize("N,H,M,K,lay", [(1, 512, 32, 5, "NHWC"), (32, 56, 256, 5, "NHWC"),
                                          (32, 28, 512, 3, "NHWC"), (1, 1024, 32, 2, "NHWC"),
                                          (1, 512, 32, 5, "NCHW"), (32, 56, 256, 5, "NCHW")])
def test_candidate_plans_offer_the_wgmma_kernel_on_hopper(N, H, M, K, lay):
    spec = spec_from_logical(N, 1, H, H, M, K, K, padding="VALID", layout=lay)
    tried = _offered_per_preset(spec, ps.is_tz, lambda a: a[1:])
    hw = PRESETS["h200"]
    launches = ps.tz_launches(spec, hw)
    assert tried["h200"] == [ps.tz_attrs(s, n, 1, r, a, d) for s, n, r, a, d in launches]
    planes = lay == "NCHW"   # these NCHW layers' lines change with the alignment (OW % 8 == 4)
    n_rs = sum(rs for _, _, rs in ps.TZ_GRIDS)
    assert 2 <= len(tried["h200"]) <= len(ps.TZ_GRIDS) + (1 + planes) * n_rs
    assert tried["h100"] == tried["h200"]
    assert any(a[5] & 2 for a in tried["h200"]) and any(not a[5] & 2 for a in tried["h200"])
    assert any(a[5] & 4 for a in tried["h200"]) is planes   # the aligned line: planes only
    assert any(a[5] & 8 for a in tried["h200"])   # dense segments: either output
    assert all(a[5] & 2 for a in tried["h200"] if a[5] & 12)   # ... both with A from registers
    assert not any(a[5] & 12 == 12 for a in tried["h200"])   # ... and never together
    assert tried["gtx1080ti"] == []
    assert ps.tz_supported(spec, PRESETS["gtx1080ti"]) == "no sm_90a (wgmma) on this device"
    for spt, nwg, rs, al, dn in launches:
        tiles = ps.tz_segments(spec, al, dn) * (M // 32)
        assert spt >= nwg and ps.tz_shared_bytes(spec, spt, rs, al, dn) <= ps.TZ_SHARED
        for stagger, r in ((0, 0), (1, 0), (0, 1), (1, 1)):   # every start order, A either way
            attrs = (1,) + ps.tz_attrs(spt, nwg, stagger, r, al, dn)
            # dense segments need A from registers
            assert ps.valid_attrs(spec, attrs, hw) == ([] if r or not dn else ["wgmma launch"])
            assert ps.tz_flags(attrs[6]) == (stagger, r, al, dn)
        aligned = ps.valid_attrs(spec, (1,) + ps.tz_attrs(spt, nwg, 1, rs, 1), hw)
        assert aligned == ([] if planes else ["wgmma launch"])
        both = ps.valid_attrs(spec, (1,) + ps.tz_attrs(spt, nwg, 1, 1, 1, 1), hw)
        assert both == ["wgmma launch"]   # the aligned line with dense segments: not a launch
        assert ps.valid_attrs(spec, (1, 6, 1, 1, 32, spt, 16, 128 * nwg), hw) == ["wgmma launch"]
        assert -(-tiles // spt) <= 4 * hw.sm_count or spt == nwg   # at most 4 CTAs per SM
    spt, nwg, *_ = launches[0]
    assert ps.valid_attrs(spec, (1, 6, 1, 1, 64, spt, 0, 128 * nwg), hw) == ["wgmma launch"]
    assert ps.valid_attrs(spec, (1, 6, 1, 1, 32, spt, 0, 512), hw) == ["wgmma launch"]
    assert ps.valid_attrs(spec, (1, 6, 1, 1, 32, 1, 0, 384), hw) == ["wgmma launch"]


@pytest.mark.parametrize("N,H,W,M,KH,KW,lay,why", [
    (1, 64, 62, 32, 5, 5, "NCHW", "nor its rows whole float4s"),
    (1, 64, 64, 32, 3, 3, "NCHW", "nor its rows whole float4s"),
    (1, 64, 64, 48, 5, 5, "NHWC", "M not a multiple of 32"),
    (1, 64, 64, 32, 7, 7, "NHWC", "a 7x7 kernel"),
    (1, 64, 64, 32, 1, 1, "NHWC", "a 1x1 kernel"),
    (1, 4, 9000, 32, 5, 5, "NHWC", "exceeds its shared memory"),
    (1, 1024, 1024, 32 << 21, 3, 3, "NHWC", "over 2^31 - 1 CTAs"),
    (1, 8, 8, 32 << 22, 5, 5, "NHWC", "filter offsets past 32 bits")])
def test_wgmma_kernel_leaves_out_what_it_does_not_run(N, H, W, M, KH, KW, lay, why):
    spec = spec_from_logical(N, 1, H, W, M, KH, KW, padding="VALID", layout=lay)
    hw = PRESETS["h200"]
    assert why in ps.tz_supported(spec, hw)
    cands = ps.candidate_plans(spec, hw, planner.make_plan(spec, hw))
    assert not any(ps.is_tz(c.kernel_attrs) for c in cands)


@pytest.mark.parametrize("H,W,K,lay,planes", [
    (64, 64, 5, "NCHW", True), (64, 62, 5, "NCHW", False), (64, 64, 3, "NCHW", False),
    (30, 34, 3, "NCHW", True), (64, 64, 5, "NHWC", False)])
def test_wgmma_writes_planes_where_output_rows_are_whole_float4s(H, W, K, lay, planes):
    # NCHW outputs go to the kernel's plane stores only where each row is whole float4s
    spec = spec_from_logical(1, 1, H, W, 32, K, K, padding="VALID", layout=lay)
    assert ps.tz_planes(spec) is planes and (spec.dims["OW"] % 4 == 0 or not planes)
    hw = PRESETS["h200"]
    assert (ps.tz_supported(spec, hw) is None) is (planes or lay == "NHWC")


def test_wgmma_geometry_matches_the_kernel():
    # b32 56^2 K5 NHWC (OW 52, band rows of 56 floats): the tall stack holds 32 x 56 rows, the
    # flat pixels through its last output row in 256-pixel segments; SPT 12: 17 band rows
    spec = spec_from_logical(32, 1, 56, 56, 256, 5, 5, padding="VALID", layout="NHWC")
    assert ps.tz_segments(spec) == -(-((32 * 56 - 4) * 56) // 256)
    rows = -(-(12 * 256 + 8) // 56) + 5 + 1
    assert ps.tz_shared_bytes(spec, 12) == 4 * (5 * 2048 + 2 * rows * 56 + 256)
    assert ps.tz_shared_bytes(spec, 12, rs=1) == 4 * (5 * 2048 + rows * 56 + 256)  # one copy


@pytest.mark.parametrize("N,H,W,KH,KW,lay", [
    (32, 28, 28, 5, 5, "NCHW"), (32, 28, 28, 3, 3, "NHWC"), (1, 512, 512, 5, 5, "NCHW"),
    (3, 17, 23, 2, 4, "NHWC"), (5, 9, 40, 5, 1, "NHWC"), (2, 6, 70, 3, 5, "NCHW")])
def test_wgmma_dense_segments_match_the_kernel(N, H, W, KH, KW, lay):
    # dense segments (plan[6] & 8): 64 groups of 4 output pixels each, a row's last group partial
    # where OW % 4 != 0; every CTA's band (its groups' tall rows, KH - 1 per image boundary it
    # crosses, KH below and one more) within tz_band_rows, walked group by group as the kernel
    # places them (TzGroup::tall_row)
    spec = spec_from_logical(N, 1, H, W, 64, KH, KW, padding="VALID", layout=lay)
    d, hw = spec.dims, PRESETS["h200"]
    OH, OW = d["OH"], d["OW"]
    gpr = -(-OW // 4)
    groups = N * OH * gpr
    assert ps.tz_segments(spec, dn=1) == -(-groups // 64) <= ps.tz_segments(spec)
    line = ps.tz_line(spec)
    for spt in (2, 3, 8, 9):
        nb_max = ps.tz_band_rows(spec, spt, dn=1)
        for s0 in range(0, ps.tz_segments(spec, dn=1), spt):
            mine = range(s0 * 64, min((s0 + spt) * 64, groups))
            tall = [g // gpr + g // gpr // OH * (KH - 1) for g in mine]
            # the last float a group reads: its tall row + KH - 1, its column 4 gx + 7
            top = max((r + KH - 1 - tall[0]) * line + g % gpr * 4 + 7 for g, r in zip(mine, tall))
            assert top < nb_max * line and max(tall) - tall[0] + KH + 1 <= nb_max
        assert ps.tz_shared_bytes(spec, spt, 1, 0, 1) == 4 * (KH * 2048 + nb_max * line + 256)
    dense = [la for la in ps.tz_launches(spec, hw) if la[4]]
    assert dense and all(rs and not al for _, _, rs, al, _ in dense)
    for spt, nwg, rs, al, dn in dense:
        plan = dataclasses.replace(planner.make_plan(spec, hw),
                                   kernel_attrs=(1,) + ps.tz_attrs(spt, nwg, 1, rs, al, dn))
        assert ps.launch_of(spec, plan)["tiles"] == -(-ps.tz_segments(spec, dn=1) // spt) * 2


@pytest.mark.parametrize("N,H,W,KH,KW,lay,line,aligned", [
    (1, 512, 512, 5, 5, "NCHW", 512, 516),     # OW 508: every other row's runs start mid-sector
    (32, 28, 28, 5, 5, "NCHW", 28, 32),        # OW 24
    (1, 64, 62, 3, 3, "NHWC", 64, 64),         # filters contiguous: no plane stores to align
    (1, 64, 64, 5, 1, "NCHW", 64, 64),         # KW = 1: the line is OW already
    (2, 30, 34, 3, 3, "NCHW", 36, 40)])        # OW 32, line 34 -> 36 -> 40
def test_wgmma_aligned_line_matches_the_kernel(N, H, W, KH, KW, lay, line, aligned):
    # the .cu file's tz_line: OW + KW - 1 rounded up to 4, with plan[6] & 4 (planes) further to
    # OW mod 8; the segments, shared bytes and launch follow the line
    spec = spec_from_logical(N, 1, H, W, 64, KH, KW, padding="VALID", layout=lay)
    d, hw = spec.dims, PRESETS["h200"]
    assert (ps.tz_line(spec), ps.tz_line(spec, 1)) == (line, aligned)
    assert (aligned - d["OW"]) % 8 == 0 or not ps.tz_planes(spec)
    assert ps.tz_segments(spec, 1) == -(-((N * H - KH + 1) * aligned) // 256)
    rows = -(-(8 * 256 + 8) // aligned) + KH + 1
    assert ps.tz_shared_bytes(spec, 8, 1, 1) == 4 * (KH * 2048 + rows * aligned + 256)
    launches = ps.tz_launches(spec, hw)
    assert any(al for *_, al, _ in launches) is (aligned != line)
    for spt, nwg, rs, al, dn in launches:
        attrs = (1,) + ps.tz_attrs(spt, nwg, 1, rs, al, dn)
        L = ps.launch_of(spec, dataclasses.replace(planner.make_plan(spec, hw),
                                                 kernel_attrs=attrs))
        assert L["SW"] == (aligned if al else line)
        assert L["tiles"] == -(-ps.tz_segments(spec, al, dn) // spt) * (64 // 32)


def test_candidate_plans_leave_other_methods_alone():
    spec = _spec(c=64, h=32, m=64)
    plan = planner.make_plan(spec, PRESETS["h200"])
    assert plan.method == "multi_channel"
    assert ps.candidate_plans(spec, PRESETS["h200"], plan) == [plan]


def _sc_candidates(H=224, M=64, K=5, N=32, lay="NHWC"):
    spec = spec_from_logical(N, 1, H, H, M, K, K, padding="VALID", layout=lay)
    return spec, ps.candidate_plans(spec, PRESETS["h200"], planner.make_plan(spec, PRESETS["h200"]))


@pytest.mark.parametrize("speedup,switches", [(0.90, True), (0.985, True), (0.995, False),
                                              (1.10, False)])
def test_choose_plan_switches_only_beyond_the_tie(cache, monkeypatch, speedup, switches):
    spec, cands = _sc_candidates()
    calls = []

    def fake(spec_, plans, **kw):
        calls.append(len(plans))
        times = {tuple(p.kernel_attrs): 100.0 for p in plans}
        times[tuple(plans[-1].kernel_attrs)] = 100.0 * speedup
        return times, 8

    monkeypatch.setattr(autotune, "measure_plans", fake)
    choice = autotune.choose_plan(spec, cands)
    assert choice.plan is (cands[-1] if switches else cands[0])
    assert choice.kernel_us == pytest.approx(100.0 * speedup if switches else 100.0)
    assert choice.use_kernel and choice.lax_us is None and choice.R == 8
    assert f"measured {len(cands)} single-channel plans" in choice.describe()
    assert autotune.choose_plan(spec, cands) == choice and calls == [len(cands)]   # memory
    autotune.clear_memory()
    again = autotune.choose_plan(spec, cands)                                       # disk
    assert again.plan is choice.plan and again.plan_us == choice.plan_us and len(calls) == 1


def test_choose_plan_failure_keeps_the_planned_plan(cache, monkeypatch):
    def boom(spec, plans, **kw):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(autotune, "measure_plans", boom)
    spec, cands = _sc_candidates()
    choice = autotune.choose_plan(spec, cands)
    assert choice.plan is cands[0] and "out of memory" in choice.note
    assert "not measured" in choice.describe()
    assert not list(cache.glob("autotune-*.json"))


def test_worth_measuring_plans_region(monkeypatch):
    monkeypatch.setattr(autotune, "_on_gpu", lambda: True)
    big, cands = _sc_candidates()
    assert big.min_bytes >= autotune.PLAN_MIN_BYTES and autotune.worth_measuring_plans(big, cands[0])
    small, scands = _sc_candidates(H=56, M=32, N=1)
    assert small.min_bytes < autotune.PLAN_MIN_BYTES
    assert not autotune.worth_measuring_plans(small, scands[0])
    mc = type("P", (), {"method": "multi_channel"})()
    assert not autotune.worth_measuring_plans(big, mc)
    monkeypatch.setattr(autotune, "_on_gpu", lambda: False)
    assert not autotune.worth_measuring_plans(big, cands[0])


@needs_cpu_module
def test_plan_choice_reaches_explain_and_the_primitive(gpu_route, monkeypatch):
    """On the GPU route a large single-channel layer runs the measured plan: explain() shows
    it and the timing, and the primitive carries it (no GPU: the choice is a stand-in)."""
    gpu_route(autotune.Choice(True, 1.0, 2.0, 16))       # the lax-vs-kernel choice: not asked
    monkeypatch.setattr(autotune, "_on_gpu", lambda: True)
    picked = []

    def fake_choose_plan(spec, plans):
        picked.append(plans)
        return autotune.PlanChoice(plans[-1], tuple((p.kernel_attrs, 10.0 + i)
                                                    for i, p in enumerate(plans)), 4)

    monkeypatch.setattr(autotune, "choose_plan", fake_choose_plan)
    lhs, rhs, dn = (32, 224, 224, 1), (5, 5, 1, 64), DN
    e = fc.explain(lhs, rhs, (1, 1), "VALID", dimension_numbers=dn)
    assert e.path == "fastconv-cuda" and picked and e.plan is picked[0][-1]
    assert e.plan.kernel_attrs != picked[0][0].kernel_attrs
    assert "measured on this device" in e.reason and "single-channel plans" in str(e)
    jaxpr = str(jax.make_jaxpr(lambda x, w: fc.conv_general_dilated(
        x, w, (1, 1), "VALID", dimension_numbers=dn))(
        np.zeros(lhs, np.float32), np.zeros(rhs, np.float32)))
    assert "fastconv_conv2d" in jaxpr
    assert f"kernel_attrs={e.plan.kernel_attrs}" in jaxpr          # the measured launch
    assert f"kernel_attrs={picked[0][0].kernel_attrs}" not in jaxpr


# -- measure_plans: the device timer of the CUDA extension (cuda/plan_timer.cc), stood in for --

from jax_fastconv import primitive  # noqa: E402


class _FakeTimer:
    """Stands in for the CUDA extension: time_plans (the binding's signature) records its
    arguments and returns samples(plans), or raises `error`."""

    def __init__(self, samples=None, error=None):
        self.calls, self.samples, self.error = [], samples, error

    def time_plans(self, dims, conv, lhs_strides, rhs_strides, out_strides, plans, rounds=11,
                   ordinal=0, budget_bytes=1 << 30):
        self.calls.append(dict(dims=dims, conv=conv, lhs_strides=lhs_strides,
                               rhs_strides=rhs_strides, out_strides=out_strides, plans=plans,
                               rounds=rounds, ordinal=ordinal, budget_bytes=budget_bytes))
        if self.error is not None:
            raise self.error
        return self.samples(plans)


def _skewed(plans):
    """Samples whose min, median and mean differ: plan i has median 10 (i + 1) + 5."""
    return [[b + 5.0, b + 1.0, b + 9.0, b + 2.0, b + 100.0]
            for b in (10.0 * (i + 1) for i in range(len(plans)))]


# NCHW / NHWC, VALID / SAME (non-zero pads), odd sizes.
TIMED = [(32, 56, 64, 3, "NCHW", "VALID"), (1, 224, 64, 5, "NHWC", "SAME"),
         (3, 37, 70, 7, "NCHW", "SAME"), (8, 128, 64, 3, "NHWC", "VALID")]


def _timed_candidates(N, H, M, K, lay, padding):
    spec = spec_from_logical(N, 1, H, H, M, K, K, padding=padding, layout=lay)
    hw = PRESETS["h200"]
    return spec, ps.candidate_plans(spec, hw, planner.make_plan(spec, hw))


@pytest.mark.parametrize("N,H,M,K,lay,padding", TIMED)
def test_measure_plans_passes_the_ffi_attributes_and_takes_medians(monkeypatch, N, H, M, K, lay,
                                                                  padding):
    spec, cands = _timed_candidates(N, H, M, K, lay, padding)
    assert len(cands) >= 2
    timer = _FakeTimer(_skewed)
    monkeypatch.setattr(_ffi, "cuda_module", timer)
    monkeypatch.setattr(autotune, "_device_ordinal", lambda: 3)
    times, R = autotune.measure_plans(spec, cands, rounds=5, budget_bytes=123 << 20)
    assert len(timer.calls) == 1
    call = timer.calls[0]
    want = primitive.ffi_attributes(spec, cands[0])
    for name in ("dims", "conv", "lhs_strides", "rhs_strides", "out_strides"):
        assert call[name] == [int(v) for v in want[name]], name
        assert all(type(v) is int for v in call[name]), name     # plain ints for nanobind
    assert call["plans"] == [[int(v) for v in c.kernel_attrs] for c in cands]   # in order
    assert all(type(v) is int for p in call["plans"] for v in p)
    assert (call["rounds"], call["ordinal"], call["budget_bytes"]) == (5, 3, 123 << 20)
    assert list(times) == [tuple(c.kernel_attrs) for c in cands]
    # medians, not the minimum (b + 1) or the mean (b + 23.4)
    assert list(times.values()) == [10.0 * (i + 1) + 5.0 for i in range(len(cands))]
    assert R == 0


def test_choose_plan_goes_by_the_medians(cache, monkeypatch):
    """The planned plan has the fastest single sample, a variant the lower median by 10%:
    the variant is chosen (a minimum would keep the planned plan)."""
    spec, cands = _timed_candidates(*TIMED[0])

    def samples(plans):
        out = [[100.0, 100.0, 40.0, 100.0, 100.0]]
        out += [[120.0] * 5 for _ in plans[1:-1]] + [[90.0, 90.0, 95.0, 60.0, 90.0]]
        return out

    timer = _FakeTimer(samples)
    monkeypatch.setattr(_ffi, "cuda_module", timer)
    choice = autotune.choose_plan(spec, cands)
    assert choice.plan is cands[-1] and choice.kernel_us == 90.0 and choice.R == 0
    assert timer.calls[0]["rounds"] == autotune.ROUNDS
    assert "device time per launch" in choice.describe() and "90.0 us" in choice.describe()
    (path,) = cache.glob("autotune-*.json")
    (key,) = json.loads(path.read_text())
    assert key.startswith("plans device-time | ")


def test_choose_plan_does_not_reuse_wall_clock_entries(cache, monkeypatch):
    """An entry stored under the wall-clock timing's key (before device time) is ignored."""
    spec, cands = _timed_candidates(*TIMED[1])
    old_key = (f"plans | {spec.describe()} | " + " ".join(str(tuple(p.kernel_attrs))
                                                          for p in cands)
               + f" | {autotune._versions()}")
    path = autotune.cache_path(getattr(jax.devices()[0], "device_kind", "device"))
    path.write_text(json.dumps({old_key: {"chosen": list(cands[-1].kernel_attrs), "R": 8,
                                          "plan_us": [[list(c.kernel_attrs), 1.0]
                                                      for c in cands]}}))
    timer = _FakeTimer(lambda plans: [[50.0] * 3 for _ in plans])
    monkeypatch.setattr(_ffi, "cuda_module", timer)
    choice = autotune.choose_plan(spec, cands)
    assert len(timer.calls) == 1 and choice.plan is cands[0]     # measured: a tie keeps it
    assert choice.plan_us == tuple((tuple(c.kernel_attrs), 50.0) for c in cands)
    assert len(json.loads(path.read_text())) == 2                # the old entry is left alone


def test_choose_plan_measures_again_when_the_kernel_rules_change(cache, monkeypatch):
    """An entry stored under another KERNEL_RULES (the kernel's register-tile rules) is ignored."""
    spec, cands = _timed_candidates(*TIMED[0])
    monkeypatch.setattr(_ffi, "cuda_module", _FakeTimer(
        lambda plans: [[50.0] * 3 for _ in plans[:-1]] + [[10.0] * 3]))
    first = autotune.choose_plan(spec, cands)
    assert first.plan is cands[-1]
    autotune.clear_memory()
    timer = _FakeTimer(lambda plans: [[50.0] * 3 for _ in plans])
    monkeypatch.setattr(_ffi, "cuda_module", timer)
    assert autotune.choose_plan(spec, cands).plan is cands[-1] and not timer.calls  # cached
    autotune.clear_memory()
    monkeypatch.setattr(autotune, "KERNEL_RULES", autotune.KERNEL_RULES + "-next")
    again = autotune.choose_plan(spec, cands)
    assert len(timer.calls) == 1 and again.plan is cands[0]  # measured again: a tie keeps it
    (path,) = cache.glob("autotune-*.json")
    assert len(json.loads(path.read_text())) == 2


def test_choose_plan_measures_again_when_the_margin_changes(cache, monkeypatch):
    """A choice stored under another PLAN_TIE is measured again: a 1.5% lead switches at a 1%
    margin and not at 2%."""
    spec, cands = _timed_candidates(*TIMED[0])
    timer = _FakeTimer(lambda plans: [[100.0] * 3 for _ in plans[:-1]] + [[98.5] * 3])
    monkeypatch.setattr(_ffi, "cuda_module", timer)
    monkeypatch.setattr(autotune, "PLAN_TIE", 0.02)
    assert autotune.choose_plan(spec, cands).plan is cands[0]
    autotune.clear_memory()
    monkeypatch.setattr(autotune, "PLAN_TIE", 0.01)
    assert autotune.choose_plan(spec, cands).plan is cands[-1] and len(timer.calls) == 2
    (path,) = cache.glob("autotune-*.json")
    assert len(json.loads(path.read_text())) == 2


@pytest.mark.parametrize("N,H,M,K,lay,padding", TIMED[:2])
def test_time_plans_failure_keeps_the_planned_plan(cache, monkeypatch, N, H, M, K, lay,
                                                   padding):
    spec, cands = _timed_candidates(N, H, M, K, lay, padding)
    timer = _FakeTimer(error=RuntimeError("time_plans: plan [1, 2] failed to launch: "
                                          "cudaErrorInvalidValue"))
    monkeypatch.setattr(_ffi, "cuda_module", timer)
    choice = autotune.choose_plan(spec, cands)
    assert len(timer.calls) == 1
    assert choice.plan is cands[0] and choice.plan_us == () and choice.kernel_us is None
    assert "RuntimeError" in choice.note and "cudaErrorInvalidValue" in choice.note
    assert "the planned plan is used" in choice.note and "not measured" in choice.describe()
    assert not list(cache.glob("autotune-*.json"))                # a failure is not stored


def test_without_the_cuda_extension_the_planned_plan_is_kept(cache, monkeypatch):
    spec, cands = _timed_candidates(*TIMED[2])
    monkeypatch.setattr(_ffi, "cuda_module", None)
    with pytest.raises(RuntimeError, match="CUDA extension"):
        autotune.measure_plans(spec, cands)
    choice = autotune.choose_plan(spec, cands)
    assert choice.plan is cands[0] and "CUDA extension" in choice.note
    assert not list(cache.glob("autotune-*.json"))


def test_short_sample_lists_are_a_failure(cache, monkeypatch):
    spec, cands = _timed_candidates(*TIMED[3])
    monkeypatch.setattr(_ffi, "cuda_module", _FakeTimer(lambda plans: [[1.0]] * (len(plans) - 1)))
    choice = autotune.choose_plan(spec, cands)
    assert choice.plan is cands[0] and "sample lists" in choice.note


@pytest.mark.parametrize("hw_id,dev_id,want", [(2, 5, 2), (0, 7, 0), (None, 5, 5)])
def test_device_ordinal_is_the_default_devices_local_id(monkeypatch, hw_id, dev_id, want):
    dev = type("D", (), {"local_hardware_id": hw_id, "id": dev_id})()
    monkeypatch.setattr(jax, "devices", lambda *a: [dev])
    assert autotune._device_ordinal() == want


def test_layers_from_4_mib_are_measured(monkeypatch):
    """Device time resolves the kernels of layers between 4 and 32 MiB (the wall clock's floor
    was 32 MiB)."""
    monkeypatch.setattr(autotune, "_on_gpu", lambda: True)
    assert autotune.PLAN_MIN_BYTES == 4 << 20
    mid, cands = _timed_candidates(1, 224, 64, 5, "NHWC", "VALID")
    assert 4 << 20 <= mid.min_bytes < 32 << 20
    assert autotune.worth_measuring_plans(mid, cands[0])
    below, bcands = _timed_candidates(1, 112, 64, 3, "NCHW", "VALID")
    assert below.min_bytes < 4 << 20 and bcands[0].method == "single_channel"
    assert not autotune.worth_measuring_plans(below, bcands[0])


# -- the measured choice between a patchify kernel and the patch GEMM (autotune.choose_gemm) --

# Patchify layers a kernel covers (both layouts, C = 1 / 3 / many), and layers it does not ask.
PATCHIFY = [((1, 224, 224, 3), (4, 4, 3, 96), (4, 4), DN),                  # ConvNeXt stem
            ((4, 3, 64, 64), (96, 3, 4, 4), (4, 4), ("NCHW", "OIHW", "NCHW")),
            ((2, 28, 28, 96), (2, 2, 96, 192), (2, 2), DN),                  # ConvNeXt ds1
            ((1, 1, 28, 28), (32, 1, 4, 4), (4, 4), ("NCHW", "OIHW", "NCHW"))]
NOT_PATCHIFY = [((1, 32, 32, 8), (3, 3, 8, 8), (1, 1), "VALID"),            # stride 1
                ((2, 16, 16, 64), (1, 1, 64, 64), (1, 1), "VALID"),          # 1x1: a plain GEMM
                ((1, 15, 15, 96), (2, 2, 96, 96), (2, 2), "SAME"),           # window in padding
                ((1, 224, 224, 3), (16, 16, 3, 768), (16, 16), "VALID"),     # no kernel: GEMM
                ((1, 32, 32, 64), (3, 3, 64, 64), (2, 2), "VALID")]          # stride != kernel


def _pspec(lhs, rhs, stride, dn, padding="VALID"):
    return normalize(lhs, rhs, stride, padding, None, None, dn)


@pytest.mark.parametrize("lhs,rhs,stride,dn", PATCHIFY)
def test_worth_measuring_gemm_on_patchify_kernels(monkeypatch, lhs, rhs, stride, dn):
    spec = _pspec(lhs, rhs, stride, dn)
    plan = planner.plan_cached(spec, PRESETS["h100"])
    assert plan.method != "direct"
    monkeypatch.setattr(autotune, "_on_gpu", lambda: True)
    assert autotune.worth_measuring_gemm(spec, plan)
    monkeypatch.setattr(autotune, "_on_gpu", lambda: False)
    assert not autotune.worth_measuring_gemm(spec, plan)      # the CPU path is never timed


@pytest.mark.parametrize("lhs,rhs,stride,padding", NOT_PATCHIFY)
def test_worth_measuring_gemm_leaves_other_layers_alone(monkeypatch, lhs, rhs, stride, padding):
    monkeypatch.setattr(autotune, "_on_gpu", lambda: True)
    spec = _pspec(lhs, rhs, stride, DN, padding)
    assert not autotune.worth_measuring_gemm(spec, planner.plan_cached(spec, PRESETS["h100"]))


@needs_cpu_module
@pytest.mark.parametrize("lhs,rhs,stride,dn", [PATCHIFY[1], ((1, 12, 12, 5), (3, 3, 5, 4),
                                                             (3, 3), DN)])
def test_measure_times_the_kernel_against_the_gemm(lhs, rhs, stride, dn):
    spec = _pspec(lhs, rhs, stride, dn)
    choice = autotune.measure(spec, planner.plan_cached(spec, None), rival="gemm", rounds=3,
                              warmup=1)
    assert choice.kernel_us > 0 and choice.gemm_us > 0 and choice.lax_us is None
    assert choice.rival == "gemm" and choice.rival_us == choice.gemm_us
    assert choice.use_kernel == (choice.gemm_us >= choice.kernel_us * (1 - autotune.TIE))
    assert "the patch GEMM" in choice.describe() and "lax" not in choice.describe()


def test_gemm_and_lax_choices_are_cached_apart(cache, monkeypatch):
    rivals = []

    def fake_measure(spec, plan, rival="lax", **kw):
        rivals.append(rival)
        if rival == "gemm":
            return autotune.Choice(False, 9.0, None, 8, gemm_us=6.0)
        return autotune.Choice(True, 9.0, 12.0, 8)

    monkeypatch.setattr(autotune, "measure", fake_measure)
    spec = _pspec(*PATCHIFY[2])
    plan = planner.plan_cached(spec, None)
    g, l = autotune.choose_gemm(spec, plan), autotune.choose(spec, plan)
    assert rivals == ["gemm", "lax"] and not g.use_kernel and l.use_kernel
    stored = json.loads(next(cache.glob("autotune-*.json")).read_text())
    assert sorted(v.get("gemm_us") or 0.0 for v in stored.values()) == [0.0, 6.0]
    autotune.clear_memory()
    assert autotune.choose_gemm(spec, plan) == g and autotune.choose(spec, plan) == l
    assert len(rivals) == 2                                           # both from the disk
    # an entry stored before the GEMM rival existed (no gemm_us) still reads as a lax choice
    old = autotune._from_dict({"use_kernel": False, "kernel_us": 3.0, "lax_us": 2.0, "R": 4})
    assert old.rival == "lax" and old.gemm_us is None and "lax HIGHEST 2.0 us" in old.describe()


@pytest.fixture
def gemm_route(monkeypatch, cache):
    """Route _decide as on an H100 and stand in for the kernel-vs-GEMM timing."""
    pretend_cuda(monkeypatch, "h100", autotune=True)
    monkeypatch.setattr(autotune, "_on_gpu", lambda: True)
    monkeypatch.setattr(autotune, "choose", lambda spec, plan: pytest.fail("lax timed"))
    monkeypatch.setattr(autotune, "choose_plan", lambda spec, plans: pytest.fail("plans timed"))
    calls = []

    def route(choice):
        monkeypatch.setattr(autotune, "choose_gemm",
                            lambda spec, plan: calls.append(spec) or choice)
        return calls
    return route


@pytest.mark.parametrize("lhs,rhs,stride,dn", PATCHIFY)
def test_gemm_choice_runs_the_gemm(gemm_route, lhs, rhs, stride, dn):
    calls = gemm_route(autotune.Choice(False, 9.0, None, 16, gemm_us=6.0))
    e = fc.explain(lhs, rhs, stride, "VALID", dimension_numbers=dn)
    assert e.path == "gemm" and e.plan.method != "direct" and calls
    assert "faster than the planned kernel" in e.reason and "the patch GEMM 6.0 us" in e.reason
    rng = np.random.default_rng(3)
    x, w = randn(rng, lhs), randn(rng, rhs)
    f = lambda x, w: fc.conv_general_dilated(x, w, stride, "VALID", dimension_numbers=dn)
    jaxpr = str(jax.make_jaxpr(f)(x, w))
    assert "dot_general" in jaxpr and "fastconv_conv2d" not in jaxpr
    assert "conv_general_dilated" not in jaxpr
    assert_close(jax.jit(f)(x, w), ref_conv(x, w, stride, "VALID", dimension_numbers=dn))


@pytest.mark.parametrize("lhs,rhs,stride,dn", PATCHIFY)
def test_kernel_choice_over_the_gemm_keeps_the_kernel(gemm_route, lhs, rhs, stride, dn):
    gemm_route(autotune.Choice(True, 6.0, None, 16, gemm_us=9.0))
    e = fc.explain(lhs, rhs, stride, "VALID", dimension_numbers=dn)
    assert e.path == "fastconv-cuda" and e.measured.gemm_us == 9.0
    assert "autotune: measured on this device: kernel 6.0 us, the patch GEMM 9.0 us" in str(e)
    jaxpr = str(jax.make_jaxpr(lambda x, w: fc.conv_general_dilated(
        x, w, stride, "VALID", dimension_numbers=dn))(
        np.zeros(lhs, np.float32), np.zeros(rhs, np.float32)))
    assert "fastconv_conv2d" in jaxpr and "dot_general" not in jaxpr


def test_gemm_timing_off_or_for_other_hardware(gemm_route, monkeypatch):
    calls = gemm_route(autotune.Choice(False, 9.0, None, 16, gemm_us=6.0))
    lhs, rhs, stride, dn = PATCHIFY[0]
    e = fc.explain(lhs, rhs, stride, "VALID", dimension_numbers=dn, hardware="h200")
    assert e.path == "fastconv-cuda" and e.measured is None and not calls
    monkeypatch.setenv(autotune.ENV, "0")
    e = fc.explain(lhs, rhs, stride, "VALID", dimension_numbers=dn)
    assert e.path == "fastconv-cuda" and e.measured is None and not calls


def test_gemm_choice_under_vmap_and_grad(gemm_route):
    gemm_route(autotune.Choice(False, 9.0, None, 16, gemm_us=6.0))
    lhs, rhs, stride, dn = PATCHIFY[2]
    rng = np.random.default_rng(5)
    xs, w = randn(rng, (3,) + lhs), randn(rng, rhs)
    f = lambda x, w: fc.conv_general_dilated(x, w, stride, "VALID", dimension_numbers=dn)
    r = lambda x, w: ref_conv(x, w, stride, "VALID", dimension_numbers=dn)
    assert_close(jax.vmap(f, (0, None))(xs, w), jax.vmap(r, (0, None))(xs, w))
    loss = lambda g: lambda x, w: (g(x, w) ** 2).sum()
    got = jax.grad(loss(f), argnums=(0, 1))(xs[0], w)
    want = jax.grad(loss(r), argnums=(0, 1))(xs[0], w)
    for a, b in zip(got, want):
        assert_close(a, b)
