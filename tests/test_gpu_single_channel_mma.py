"""GPU tests of the single-channel tensor-core kernel (plan division 5, cuda/single_channel_mma.cu,
plan_single_channel S9): float32 accuracy against lax HIGHEST on every tile the planner offers,
same bits on repeated runs, float32 semantics for non-finite inputs (inf x 0 in the 3xTF32
split products: the kernel recomputes such items with FFMAs), and the autotuner's measured
choice with the kernel among its candidates. Marked `gpu`; skipped cleanly without a CUDA
device or the CUDA extension.
"""
from __future__ import annotations

import numpy as np
import pytest
import jax

import jax_fastconv as fc

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


# the paper's K = 3 / 5 layers on small maps, both layouts (the missed layers' shapes)
PAPER = [ConvConfig(n, 1, m, h, h, k, k, (1, 1), "VALID", lay, 9500 + 10 * h + k)
         for n, h, m in ((1, 112, 128), (32, 28, 512)) for k in (3, 5) for lay in ("NCHW", "NHWC")]
RANDOM = random_single_channel_layers(
    60, 9100, [(3, 3), (5, 5), (7, 7), (1, 2), (2, 1), (3, 5), (8, 8), (1, 9), (4, 6), None], 9000,
    taps_ok=lambda kh, kw: 2 <= kh * kw <= ps.MMA_MAX_TAPS)


def _mma_plans(cfg):
    """The layer's tensor-core plans: the tiles candidate_plans offers, as plans of the layer."""
    ex = cfg.explain()
    assert ex.path == "fastconv-cuda" and ex.plan.method == "single_channel", ex.reason
    hw = hardware.current_hardware()
    why = ps.mma_supported(ex.spec, hw)
    if why is not None:
        pytest.skip(f"the tensor-core kernel does not run this layer: {why}")
    plans = [p for p in ps.candidate_plans(ex.spec, hw, ex.plan) if ps.is_mma(p.kernel_attrs)]
    assert len(plans) == min(ps.MMA_TRIES, len(plans)) and plans, ex.spec.describe()
    return ex, plans


def _run(ex, plan, x, w):
    return np.asarray(jax.jit(
        lambda a, b: conv_p.bind(a, b, spec=ex.spec, plan=plan, precision=None))(x, w))


@pytest.mark.parametrize("cfg", PAPER + RANDOM, ids=lambda c: c.id)
def test_tensor_core_tiles_vs_lax(cfg):
    ex, plans = _mma_plans(cfg)
    x, w = cfg.arrays()
    ref = np.asarray(ref_conv(x, w, **cfg.kwargs()))
    ffma = _run(ex, ex.plan, x, w)
    for plan in plans:
        out = _run(ex, plan, x, w)
        assert_close(out, ref, what=f"{cfg.id} {plan.kernel_attrs}")
        np.testing.assert_array_equal(out, _run(ex, plan, x, w))   # same bits again
    # the plan naming the tensor cores runs them: 3xTF32 sums differ from the FFMA kernel's in
    # the last bits on any layer with a few taps and filters
    if cfg.kh * cfg.kw >= 9 and cfg.m >= 16 and min(cfg.out_shape()) > 0:
        assert not np.array_equal(out, ffma), "the tensor-core kernel did not run"


NON_FINITE = [ConvConfig(2, 1, 32, 40, 44, 5, 5, (1, 1), "SAME", "NHWC", 9601),
              ConvConfig(3, 1, 20, 37, 36, 3, 3, (1, 1), "VALID", "NCHW", 9602),
              ConvConfig(1, 1, 64, 30, 300, 7, 7, (1, 1), ((3, 2), (1, 4)), "NCHW-OIHW-NHWC", 9603)]


@pytest.mark.parametrize("cfg", NON_FINITE, ids=lambda c: c.id)
def test_tensor_cores_keep_float32_semantics_for_non_finite_inputs(cfg):
    ex, plans = _mma_plans(cfg)
    for plan in plans:
        assert_float32_non_finite_semantics(
            lambda a, b, plan=plan: conv_p.bind(a, b, spec=ex.spec, plan=plan, precision=None), cfg)


def test_tensor_cores_under_vmap_and_grad():
    # vmap folds into the batch; the gradients run their own convolutions
    cfg = ConvConfig(2, 1, 32, 48, 52, 5, 5, (1, 1), "SAME", "NHWC", 9700)
    ex, plans = _mma_plans(cfg)
    x, w = cfg.arrays()
    run = lambda a, b: conv_p.bind(a, b, spec=ex.spec, plan=plans[0], precision=None)
    xb = np.stack([np.asarray(x), np.asarray(x)[::-1]])
    out, _ = jit_checked(jax.vmap(run, in_axes=(0, None)), xb, w, target=CUDA_TARGET,
                         expect_calls=1)
    ref = jax.vmap(lambda a, b: ref_conv(a, b, **cfg.kwargs()), in_axes=(0, None))(xb, w)
    assert_close(out, ref, what="vmap")


def test_autotune_measures_the_tensor_cores(monkeypatch, tmp_path):
    # A layer past autotune.PLAN_MIN_BYTES: the first trace times the planned FFMA launch, its
    # variants and the tensor-core tiles on this device and keeps the fastest (any of them:
    # which one wins is the device's answer, not this test's).
    monkeypatch.setenv(autotune.ENV, "1")
    monkeypatch.setenv("JAX_FASTCONV_CACHE_DIR", str(tmp_path))
    autotune.clear_memory()
    cfg = ConvConfig(1, 1, 32, 512, 512, 5, 5, (1, 1), "VALID", "NHWC", 9800)
    ex = cfg.explain()
    assert ex.path == "fastconv-cuda" and ex.measured is not None, ex.reason
    timed = [tuple(a) for a, _ in ex.measured.plan_us]
    mma = [a for a in timed if ps.is_mma(a)]
    assert len(mma) == ps.MMA_TRIES, timed
    assert all(us > 0 for _, us in ex.measured.plan_us)
    x, w = cfg.arrays()
    out, _ = jit_checked(lambda a, b: fc.conv_general_dilated(a, b, **cfg.kwargs()), x, w,
                         target=CUDA_TARGET, expect_calls=1)
    assert_close(out, ref_conv(x, w, **cfg.kwargs()), what=f"chosen {ex.plan.kernel_attrs}")
    autotune.clear_memory()
