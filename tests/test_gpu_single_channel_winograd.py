"""GPU tests of the single-channel kernel's row-Winograd products (plan[6] & F45_FLAG, 5x5
kernels, cuda/winograd_f45.cuh, plan_single_channel S10): float32 accuracy against lax HIGHEST
on every row-Winograd tile the planner offers, same bits on repeated runs, the products really
in use (bits that differ from the direct sums'), the direct convolution's infs and NaNs for
non-finite inputs (such tiles fall back to direct sums), vmap, and the autotuner timing the
tiles. Marked `gpu`; skipped cleanly without a CUDA device or the CUDA extension.
"""
from __future__ import annotations

import numpy as np
import pytest
import jax

from _helpers import skip_module_without_cuda

skip_module_without_cuda()

from jax_fastconv import autotune, hardware  # noqa: E402
from jax_fastconv import plan_single_channel as ps  # noqa: E402
from jax_fastconv.primitive import conv_p  # noqa: E402
from _helpers import (CUDA_TARGET, ConvConfig, assert_close,  # noqa: E402
                      assert_float32_non_finite_semantics, jit_checked, random_single_channel_layers,
                      ref_conv)

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _kernels_always(monkeypatch):
    monkeypatch.setenv(autotune.ENV, "0")


# the paper's 5x5 layers on small maps (b32 28^2 and 56^2: where the products pay), both layouts
PAPER = [ConvConfig(n, 1, m, h, h, 5, 5, (1, 1), "VALID", lay, 9900 + h + n)
         for n, h, m in ((1, 112, 128), (32, 28, 512), (4, 56, 256)) for lay in ("NCHW", "NHWC")]
RANDOM = random_single_channel_layers(40, 9910, [(5, 5)], 9920)


def _f45_plans(cfg):
    """The layer's row-Winograd plans: the tiles candidate_plans offers, as plans of the layer."""
    ex = cfg.explain()
    assert ex.path == "fastconv-cuda" and ex.plan.method == "single_channel", ex.reason
    why = ps.f45_supported(ex.spec)
    if why is not None:
        pytest.skip(f"the row-Winograd products do not run this layer: {why}")
    hw = hardware.current_hardware()
    plans = [p for p in ps.candidate_plans(ex.spec, hw, ex.plan) if ps.is_f45(p.kernel_attrs)]
    assert plans, ex.spec.describe()
    return ex, plans


def _run(ex, plan, x, w):
    return np.asarray(jax.jit(
        lambda a, b: conv_p.bind(a, b, spec=ex.spec, plan=plan, precision=None))(x, w))


@pytest.mark.parametrize("cfg", PAPER + RANDOM, ids=lambda c: c.id)
def test_winograd_tiles_vs_lax(cfg):
    ex, plans = _f45_plans(cfg)
    x, w = cfg.arrays()
    ref = np.asarray(ref_conv(x, w, **cfg.kwargs()))
    direct = _run(ex, ex.plan, x, w)
    for plan in plans:
        out = _run(ex, plan, x, w)
        assert_close(out, ref, what=f"{cfg.id} {plan.kernel_attrs}")
        np.testing.assert_array_equal(out, _run(ex, plan, x, w))   # same bits again
        # the plan naming the products runs them: their sums differ from the direct ones in
        # the last bits on any layer with a few filters and outputs
        if cfg.m >= 4 and np.prod(cfg.out_shape()) >= 64:
            assert not np.array_equal(out, direct), f"{plan.kernel_attrs}: direct sums ran"


NON_FINITE = [ConvConfig(2, 1, 32, 40, 44, 5, 5, (1, 1), "SAME", "NHWC", 9961),
              ConvConfig(3, 1, 20, 37, 36, 5, 5, (1, 1), "VALID", "NCHW", 9962),
              ConvConfig(1, 1, 64, 30, 300, 5, 5, (1, 1), ((2, 1), (1, 3)), "NCHW-OIHW-NHWC", 9963)]


@pytest.mark.parametrize("cfg", NON_FINITE, ids=lambda c: c.id)
def test_winograd_keeps_float32_semantics_for_non_finite_inputs(cfg):
    ex, plans = _f45_plans(cfg)
    for plan in plans:
        assert_float32_non_finite_semantics(
            lambda a, b, plan=plan: conv_p.bind(a, b, spec=ex.spec, plan=plan, precision=None), cfg)


def test_winograd_falls_back_on_huge_finite_inputs():
    # values past the transforms' range (F45_MAX) take direct sums: finite where lax is finite
    cfg = ConvConfig(1, 1, 16, 24, 28, 5, 5, (1, 1), "VALID", "NHWC", 9970)
    ex, plans = _f45_plans(cfg)
    x, w = cfg.arrays()
    x = np.array(x)
    x[0, 3, 5, 0] = 3e30
    ref = np.asarray(ref_conv(x, w, **cfg.kwargs()))
    assert np.isfinite(ref).all()
    for plan in plans:
        out = _run(ex, plan, x, w)
        assert np.isfinite(out).all(), plan.kernel_attrs
        assert_close(out, ref, what=f"{plan.kernel_attrs}")


def test_winograd_under_vmap():
    # vmap folds into the batch: one custom call
    cfg = ConvConfig(2, 1, 32, 48, 52, 5, 5, (1, 1), "SAME", "NCHW", 9980)
    ex, plans = _f45_plans(cfg)
    x, w = cfg.arrays()
    run = lambda a, b: conv_p.bind(a, b, spec=ex.spec, plan=plans[0], precision=None)
    xb = np.stack([np.asarray(x), np.asarray(x)[::-1]])
    out, _ = jit_checked(jax.vmap(run, in_axes=(0, None)), xb, w, target=CUDA_TARGET,
                         expect_calls=1)
    ref = jax.vmap(lambda a, b: ref_conv(a, b, **cfg.kwargs()), in_axes=(0, None))(xb, w)
    assert_close(out, ref, what="vmap")


def test_autotune_measures_the_winograd_tiles(monkeypatch, tmp_path):
    # A layer past autotune.PLAN_MIN_BYTES: the first trace times the planned launch, its
    # variants and the row-Winograd tiles on this device and keeps the fastest (which one wins
    # is the device's answer, not this test's).
    monkeypatch.setenv(autotune.ENV, "1")
    monkeypatch.setenv("JAX_FASTCONV_CACHE_DIR", str(tmp_path))
    autotune.clear_memory()
    cfg = ConvConfig(32, 1, 512, 28, 28, 5, 5, (1, 1), "VALID", "NCHW", 9990)
    ex = cfg.explain()
    assert ex.path == "fastconv-cuda" and ex.measured is not None, ex.reason
    timed = [tuple(a) for a, _ in ex.measured.plan_us]
    assert sum(ps.is_f45(a) for a in timed) >= len(ps.F45_TILES), timed
