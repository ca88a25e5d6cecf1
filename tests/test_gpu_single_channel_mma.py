"""GPU tests of the single-channel tensor-core kernel (plan division 5, cuda/single_channel_mma.cu,
plan_single_channel S9): float32 accuracy against lax HIGHEST on every tile the planner offers,
same bits on repeated runs, float32 semantics for non-finite inputs (inf x 0 in the 3xTF32
split products: the kernel recomputes such items with FFMAs), and the autotuner's measured
choice with the kernel among its candidates. Marked `gpu`; skipped cleanly without a CUDA
device or the CUDA extension.
"""
from __future__ import annotations

import pytest

from _helpers import skip_module_without_cuda

skip_module_without_cuda()

from jax_fastconv import autotune  # noqa: E402
from jax_fastconv import plan_single_channel as ps  # noqa: E402
from _helpers import (ConvConfig, assert_chosen_plan_matches_lax,  # noqa: E402
                      assert_plans_keep_non_finite_semantics, assert_plan_vmaps_into_one_call,
                      assert_plans_match_lax, measured_plan_choice, random_single_channel_layers,
                      single_channel_candidates)

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _kernels_always(monkeypatch):
    monkeypatch.setenv(autotune.ENV, "0")


# the paper's K = 3 / 5 layers on small maps, both layouts (the missed layers' shapes)
PAPER = [ConvConfig(n, 1, m, h, h, k, k, (1, 1), "VALID", lay, 9500 + 10 * h + k)
         for n, h, m in ((1, 112, 128), (32, 28, 512)) for k in (3, 5) for lay in ("NCHW", "NHWC")]
RANDOM = random_single_channel_layers(
    60, 9100, [(3, 3), (5, 5), (7, 7), (1, 2), (2, 1), (3, 5), (8, 8), (1, 9), (4, 6), None], 9000,
    taps_ok=lambda kh, kw: 2 <= kh * kw <= ps.MMA_MAX_TAPS)


def _mma_plans(cfg):
    """The layer's tensor-core plans: the tiles candidate_plans offers, as plans of the layer."""
    ex, plans = single_channel_candidates(cfg, ps.mma_supported, ps.is_mma, "the tensor-core kernel")
    assert len(plans) <= ps.MMA_TRIES, ex.spec.describe()
    return ex, plans


@pytest.mark.parametrize("cfg", PAPER + RANDOM, ids=lambda c: c.id)
def test_tensor_core_tiles_vs_lax(cfg):
    ex, plans = _mma_plans(cfg)
    # the plans naming the tensor cores run them: 3xTF32 sums differ from the FFMA kernel's in
    # the last bits on any layer with a few taps and filters
    assert_plans_match_lax(cfg, ex, plans, "the tensor-core kernel",
                           differ=cfg.kh * cfg.kw >= 9 and cfg.m >= 16 and min(cfg.out_shape()) > 0)


NON_FINITE = [ConvConfig(2, 1, 32, 40, 44, 5, 5, (1, 1), "SAME", "NHWC", 9601),
              ConvConfig(3, 1, 20, 37, 36, 3, 3, (1, 1), "VALID", "NCHW", 9602),
              ConvConfig(1, 1, 64, 30, 300, 7, 7, (1, 1), ((3, 2), (1, 4)), "NCHW-OIHW-NHWC", 9603)]


@pytest.mark.parametrize("cfg", NON_FINITE, ids=lambda c: c.id)
def test_tensor_cores_keep_float32_semantics_for_non_finite_inputs(cfg):
    ex, plans = _mma_plans(cfg)
    assert_plans_keep_non_finite_semantics(cfg, ex.spec, plans)


def test_tensor_cores_under_vmap_and_grad():
    # vmap folds into the batch; the gradients run their own convolutions
    cfg = ConvConfig(2, 1, 32, 48, 52, 5, 5, (1, 1), "SAME", "NHWC", 9700)
    ex, plans = _mma_plans(cfg)
    assert_plan_vmaps_into_one_call(cfg, ex.spec, plans[0])


def test_autotune_measures_the_tensor_cores(monkeypatch, tmp_path):
    # A layer past autotune.PLAN_MIN_BYTES: the first trace times the planned FFMA launch, its
    # variants and the tensor-core tiles on this device and keeps the fastest (any of them:
    # which one wins is the device's answer, not this test's).
    cfg = ConvConfig(1, 1, 32, 512, 512, 5, 5, (1, 1), "VALID", "NHWC", 9800)
    ex, timed = measured_plan_choice(cfg, monkeypatch, tmp_path)
    mma = [a for a in timed if ps.is_mma(a)]
    assert len(mma) == ps.MMA_TRIES, timed
    assert all(us > 0 for _, us in ex.measured.plan_us)
    assert_chosen_plan_matches_lax(cfg, ex)
