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

from _helpers import skip_module_without_cuda

skip_module_without_cuda()

from jax_fastconv import autotune  # noqa: E402
from jax_fastconv import plan_single_channel as ps  # noqa: E402
from _helpers import (ConvConfig, assert_chosen_plan_matches_lax, assert_close,  # noqa: E402
                      assert_plans_keep_non_finite_semantics, assert_plan_vmaps_into_one_call,
                      assert_plans_match_lax, measured_plan_choice, random_single_channel_layers,
                      ref_conv, run_plan, single_channel_candidates)

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
    return single_channel_candidates(cfg, lambda spec, hw: ps.f45_supported(spec), ps.is_f45,
                                     "the row-Winograd products")


@pytest.mark.parametrize("cfg", PAPER + RANDOM, ids=lambda c: c.id)
def test_winograd_tiles_vs_lax(cfg):
    ex, plans = _f45_plans(cfg)
    # the plans naming the products run them: their sums differ from the direct ones in the
    # last bits on any layer with a few filters and outputs
    assert_plans_match_lax(cfg, ex, plans, "the row-Winograd products",
                           differ=cfg.m >= 4 and np.prod(cfg.out_shape()) >= 64)


NON_FINITE = [ConvConfig(2, 1, 32, 40, 44, 5, 5, (1, 1), "SAME", "NHWC", 9961),
              ConvConfig(3, 1, 20, 37, 36, 5, 5, (1, 1), "VALID", "NCHW", 9962),
              ConvConfig(1, 1, 64, 30, 300, 5, 5, (1, 1), ((2, 1), (1, 3)), "NCHW-OIHW-NHWC", 9963)]


@pytest.mark.parametrize("cfg", NON_FINITE, ids=lambda c: c.id)
def test_winograd_keeps_float32_semantics_for_non_finite_inputs(cfg):
    ex, plans = _f45_plans(cfg)
    assert_plans_keep_non_finite_semantics(cfg, ex.spec, plans)


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
        out = run_plan(ex.spec, plan, x, w)
        assert np.isfinite(out).all(), plan.kernel_attrs
        assert_close(out, ref, what=f"{plan.kernel_attrs}")


def test_winograd_under_vmap():
    # vmap folds into the batch: one custom call
    cfg = ConvConfig(2, 1, 32, 48, 52, 5, 5, (1, 1), "SAME", "NCHW", 9980)
    ex, plans = _f45_plans(cfg)
    assert_plan_vmaps_into_one_call(cfg, ex.spec, plans[0])


def test_autotune_measures_the_winograd_tiles(monkeypatch, tmp_path):
    # A layer past autotune.PLAN_MIN_BYTES: the first trace times the planned launch, its
    # variants and the row-Winograd tiles on this device and keeps the fastest (which one wins
    # is the device's answer, not this test's).
    cfg = ConvConfig(32, 1, 512, 28, 28, 5, 5, (1, 1), "VALID", "NCHW", 9990)
    ex, timed = measured_plan_choice(cfg, monkeypatch, tmp_path)
    assert sum(ps.is_f45(a) for a in timed) >= len(ps.F45_TILES), timed
    assert_chosen_plan_matches_lax(cfg, ex)
