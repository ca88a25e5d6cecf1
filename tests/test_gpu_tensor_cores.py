"""GPU tests of the multi-channel kernel's 3xTF32 tensor-core path (plan[7] & 4), and of its split
through global memory (plan[7] & 8): float32 accuracy against lax HIGHEST, same bits on repeated
runs, and float32 semantics for non-finite inputs (inf x 0 is NaN on the tensor cores: the
kernel recomputes such tiles with FFMAs), for channel-contiguous (NHWC) and pixel-contiguous
(NCHW) input, and of the OIHW order (plan[7] & 32).  Marked `gpu`; skipped cleanly
without a CUDA device or the CUDA extension.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import jax

import jax_fastconv as fc

from _helpers import skip_module_without_cuda

skip_module_without_cuda()

from jax_fastconv import autotune, planner  # noqa: E402
from _helpers import (CUDA_TARGET, ConvConfig, assert_close, assert_matches_lax_twice,  # noqa: E402
                      assert_float32_non_finite_semantics, jit_checked, ref_conv, run_plan)

pytestmark = pytest.mark.gpu

# Layers the H100/H200 plans put on the tensor cores: 128x64, 64x64 and 32x64 tiles, S = 32 and
# 64 B, cluster splits 1 to 8, M and C tails (C % 16 != 0, M % 64 != 0), odd padding, 1x1
# kernels with >= 64 channels on full grids; NHWC input (16-byte pixel-major A tile) and NCHW input
# (channel-major A tile) with HWIO or staged filters.
TC = [
    ConvConfig(1, 64, 64, 112, 112, 3, 3, (1, 1), "VALID", "NHWC", 7001),          # 64x64 cs2
    ConvConfig(2, 36, 44, 40, 40, 3, 3, (1, 1), ((1, 0), (2, 1)), "NHWC", 7002),   # S32 cs4
    ConvConfig(1, 64, 64, 64, 64, 3, 3, (1, 1), "SAME", "NHWC", 7003),
    ConvConfig(3, 24, 40, 48, 48, 5, 5, (1, 1), "SAME", "NHWC", 7004),             # 128x64
    ConvConfig(8, 64, 68, 56, 56, 3, 3, (1, 1), "SAME", "NHWC", 7005),
    ConvConfig(32, 64, 64, 56, 56, 3, 3, (1, 1), "VALID", "NHWC-OIHW-NCHW", 7006),  # staged
    ConvConfig(1, 128, 128, 28, 28, 3, 3, (1, 1), "VALID", "NHWC", 7104),          # 32x64 cs8
    ConvConfig(2, 36, 44, 20, 20, 3, 3, (1, 1), "SAME", "NHWC", 7106),             # 32x64 S32
    ConvConfig(8, 64, 64, 56, 56, 3, 3, (1, 1), "SAME", "NCHW", 7100),             # 64x64 staged
    ConvConfig(32, 64, 64, 56, 56, 3, 3, (1, 1), "VALID", "NCHW", 7101),           # 128x64
    ConvConfig(4, 64, 64, 28, 28, 5, 5, (1, 1), "SAME", "NCHW", 7103),             # 64x64 cs8
    ConvConfig(2, 40, 36, 30, 32, 3, 3, (1, 1), ((1, 0), (2, 1)), "NCHW-HWIO-NHWC", 7108),  # 32x64
    ConvConfig(3, 24, 40, 48, 48, 5, 5, (1, 1), "SAME", "NCHW-HWIO-NHWC", 7109),   # 128x64 S32
    ConvConfig(32, 256, 256, 28, 28, 1, 1, (1, 1), "VALID", "NHWC", 7110),         # 1x1, C 256
    ConvConfig(32, 512, 512, 7, 7, 1, 1, (1, 1), "VALID", "NCHW", 7111),           # 1x1 32x64
    # 1x1 with C >= 64, stored straight from the fragments (filter-contiguous float2 stores,
    # pixel-contiguous scalar ones), M and pixel tails (M = 68 / 132, P % 128 = 64 / 124)
    ConvConfig(32, 64, 64, 56, 56, 1, 1, (1, 1), "VALID", "NHWC", 7114),
    ConvConfig(32, 128, 128, 28, 28, 1, 1, (1, 1), "VALID", "NCHW", 7115),         # OIHW order
    ConvConfig(16, 64, 68, 30, 30, 1, 1, (1, 1), "VALID", "NHWC", 7116),
    ConvConfig(31, 128, 132, 30, 30, 1, 1, (1, 1), "VALID", "NCHW", 7117),           # OIHW order
    # NCHW/OIHW layers whose filters were staged only so that the tensor cores can run (the
    # H200/H100 plans now read them in place: the OIHW order)
    ConvConfig(2, 40, 36, 30, 32, 3, 3, (1, 1), ((1, 0), (2, 1)), "NCHW", 7102),   # 32x64 S32
    ConvConfig(1, 128, 128, 28, 28, 3, 3, (1, 1), "VALID", "NCHW", 7112),          # 32x64 cs8
    ConvConfig(1, 60, 64, 9, 9, 5, 5, (1, 1), "SAME", "NCHW", 7113),               # cs16, C % 8
]
# Layers the H100/H200 plans split through global memory (plan[7] & 8: ranks without a
# cluster, partial tiles in the workspace, a second pass sums them): every tile, S = 32 and 64 B,
# rank counts no cluster holds (10, 12, 24, 32), M tails, padding, staged OIHW filters.
GLOBAL = [
    ConvConfig(1, 512, 512, 7, 7, 5, 5, (1, 1), "VALID", "NHWC", 7200),           # 32x64 x 32
    ConvConfig(1, 300, 68, 16, 10, 5, 5, (1, 1), "VALID", "NCHW", 7201),          # 32x64 S32 x 32
    ConvConfig(2, 200, 128, 23, 17, 5, 5, (1, 1), "VALID", "NCHW", 7202),         # 64x64 S32 x 16
    ConvConfig(1, 300, 196, 24, 28, 3, 3, (1, 1), "VALID", "NHWC", 7203),         # 64x64 S32 x 10
    ConvConfig(2, 512, 300, 17, 18, 5, 5, (1, 1), "SAME", "NHWC", 7204),          # 128x64 x 10
    ConvConfig(4, 512, 68, 7, 24, 3, 3, (1, 1), "SAME", "NCHW", 7205),            # 64x64 x 12
    ConvConfig(1, 384, 68, 18, 8, 5, 5, (1, 1), "SAME", "NCHW", 7206),            # 32x64 x 24
]
# Layers the H100/H200 plans give the OIHW order (plan[7] & 32: NCHW input, OIHW filters read in
# place, the reduction in their order c, kh, kw; no HWIO copy): global and cluster splits,
# padding (per-tap bounds) and VALID (none), C % 8 != 0 with S = 32 B, M tails, stride 2,
# filter-contiguous output stored from the fragments; more in TC and GLOBAL.
OIHW_ORDER = [
    ConvConfig(1, 512, 512, 7, 7, 5, 5, (1, 1), "VALID", "NCHW", 7400),           # 32x64 x 32 g
    ConvConfig(1, 512, 512, 7, 7, 3, 3, (1, 1), "VALID", "NCHW", 7401),           # 32x64 cs16
    ConvConfig(2, 64, 64, 40, 40, 3, 3, (1, 1), "SAME", "NCHW", 7402),            # 64x64 cs4
    ConvConfig(2, 36, 68, 20, 22, 3, 3, (1, 1), ((1, 0), (2, 1)), "NCHW", 7403),  # S32 cs8
    ConvConfig(4, 64, 64, 33, 33, 3, 3, (2, 2), "SAME", "NCHW", 7404),            # stride 2
    ConvConfig(2, 64, 64, 40, 40, 3, 3, (1, 1), "SAME", "NCHW-OIHW-NHWC", 7405),  # NHWC out
    ConvConfig(1, 256, 256, 14, 14, 5, 5, (1, 1), "SAME", "NCHW", 7406),          # 32x64 cs16
]
# Layers the H100/H200 plans give the streamed 1x1 kernel (plan[7] & 16: C = 32/64, >= 65536
# output pixels, dense NHWC/NHWC or NCHW/NCHW): pixel tails (P % 128 = 64; per image HW % 128 =
# 56), M tails and several filter tiles (M = 16, 72, 256), both instances (few tiles per
# block: 8 warps; many: 4), C = 32 and 64.
POINTWISE = [
    ConvConfig(2, 64, 72, 200, 164, 1, 1, (1, 1), "VALID", "NHWC", 7300),
    ConvConfig(3, 32, 16, 150, 148, 1, 1, (1, 1), "VALID", "NCHW", 7301),
    ConvConfig(1, 64, 256, 256, 256, 1, 1, (1, 1), "VALID", "NCHW", 7302),
    ConvConfig(2, 64, 64, 182, 182, 1, 1, (1, 1), "SAME", "NHWC", 7303),
    ConvConfig(8, 32, 64, 112, 112, 1, 1, (1, 1), "VALID", "NHWC", 7304),
    ConvConfig(32, 64, 64, 112, 112, 1, 1, (1, 1), "VALID", "NCHW", 7305),
]
NON_FINITE = ([TC[i] for i in (0, 1, 3, 4, 7, 8, 9, 11, 12, 15, 18)]  # 9, 15, 18: direct stores
              + [GLOBAL[i] for i in (1, 4)] + [POINTWISE[i] for i in (0, 2)]
              + [OIHW_ORDER[i] for i in (2, 5)])


@pytest.fixture(autouse=True)
def _kernels_always(monkeypatch):
    monkeypatch.setenv(autotune.ENV, "0")


def _fn(cfg):
    return lambda a, b: fc.conv_general_dilated(a, b, **cfg.kwargs())


def _tensor_core_plan(cfg):
    ex = cfg.explain()
    assert ex.path == "fastconv-cuda" and ex.plan.method == "multi_channel", ex.reason
    assert ex.plan.kernel_attrs[7] & (planner.MC_TENSOR_CORES | planner.MC_POINTWISE), ex.reason
    assert "3xTF32" in ex.reason
    return ex


@pytest.mark.parametrize("cfg", TC, ids=lambda c: c.id)
def test_tensor_cores_vs_lax(cfg):
    _tensor_core_plan(cfg)
    assert_matches_lax_twice(_fn(cfg), cfg, CUDA_TARGET)


@pytest.mark.parametrize("cfg", GLOBAL, ids=lambda c: c.id)
def test_split_through_global_memory_vs_lax(cfg):
    ex = _tensor_core_plan(cfg)
    assert ex.plan.kernel_attrs[7] & planner.MC_SPLIT_GLOBAL and ex.plan["c_split"] > 1, ex.reason
    assert "split through global memory" in ex.reason
    assert_matches_lax_twice(_fn(cfg), cfg, CUDA_TARGET)


@pytest.mark.parametrize("cfg", OIHW_ORDER, ids=lambda c: c.id)
def test_oihw_order_vs_lax(cfg):
    ex = _tensor_core_plan(cfg)
    assert ex.plan.kernel_attrs[7] & planner.MC_OIHW_ORDER and ex.plan["oihw_order"] == 1
    assert not ex.plan.kernel_attrs[7] & planner.MC_STAGE_FILTERS
    assert "read the OIHW filters in place" in ex.reason
    assert_matches_lax_twice(_fn(cfg), cfg, CUDA_TARGET)


@pytest.mark.parametrize("cfg", POINTWISE + [TC[15]], ids=lambda c: c.id)
def test_streamed_1x1_vs_lax(cfg):
    ex = cfg.explain()
    assert ex.path == "fastconv-cuda" and ex.plan.method == "multi_channel", ex.reason
    assert ex.plan.kernel_attrs[7] & planner.MC_POINTWISE and ex.plan["pointwise"] == 1
    assert "streamed 1x1 kernel" in ex.reason
    assert_matches_lax_twice(_fn(cfg), cfg, CUDA_TARGET)


@pytest.mark.parametrize("cfg", [POINTWISE[0], POINTWISE[5]], ids=lambda c: c.id)
def test_streamed_1x1_is_what_runs(cfg):
    # The plan naming the streamed kernel must run it: its sums differ in the last bits from the
    # general kernel's on the same plan without the flag (another split and order), while both
    # match lax. (The launcher once lost its dispatch and ran the general kernel on these plans
    # with every other test passing.)
    ex = cfg.explain()
    assert ex.plan.kernel_attrs[7] & planner.MC_POINTWISE, ex.reason
    attrs = list(ex.plan.kernel_attrs)
    attrs[7] &= ~planner.MC_POINTWISE
    general = dataclasses.replace(ex.plan, kernel_attrs=tuple(attrs))
    x, w = cfg.arrays()
    run = lambda plan: run_plan(ex.spec, plan, x, w)
    streamed, other = run(ex.plan), run(general)
    ref = np.asarray(ref_conv(x, w, **cfg.kwargs()))
    assert_close(streamed, ref, what="streamed")
    assert_close(other, ref, what="general kernel")
    assert not np.array_equal(streamed, other), "the streamed 1x1 kernel did not run"


def test_streamed_1x1_under_vmap_and_grad():
    # vmap folds into the batch (still the streamed kernel: 2 x 65536 pixels, dense NHWC);
    # the gradients run their own convolutions (precision=HIGHEST: what falls back to lax there
    # is float32 too, not TF32)
    cfg = ConvConfig(1, 64, 64, 256, 256, 1, 1, (1, 1), "VALID", "NHWC", 7306)
    x, w = cfg.arrays()
    rng = np.random.default_rng(7306)
    xb = np.stack([x[0], np.asarray(rng.standard_normal(x.shape[1:]), np.float32)])[:, None]
    f = jax.vmap(_fn(cfg), in_axes=(0, None))
    ref = jax.vmap(lambda a, b: ref_conv(a, b, **cfg.kwargs()), in_axes=(0, None))
    out, _ = jit_checked(f, xb, w, target=CUDA_TARGET, expect_calls=1)
    assert_close(out, ref(xb, w), what="vmap")
    gt = np.asarray(rng.standard_normal(cfg.out_shape()), np.float32)
    loss = lambda conv: (lambda a, b: jax.numpy.sum(conv(a, b) * gt))
    highest = lambda a, b: fc.conv_general_dilated(a, b, precision=jax.lax.Precision.HIGHEST,
                                                   **cfg.kwargs())
    ours = jax.jit(jax.grad(loss(highest), argnums=(0, 1)))(x, w)
    theirs = jax.grad(loss(lambda a, b: ref_conv(a, b, **cfg.kwargs())), argnums=(0, 1))(x, w)
    for o, t in zip(ours, theirs):
        assert_close(o, t, what="grad")


@pytest.mark.parametrize("cfg", NON_FINITE, ids=lambda c: c.id)
def test_tensor_cores_keep_float32_semantics_for_non_finite_inputs(cfg):
    _tensor_core_plan(cfg)
    assert_float32_non_finite_semantics(_fn(cfg), cfg)


def test_unstaged_oihw_filters_stay_on_ffma():
    # OIHW filters the planner cannot stage (M % 4 != 0: the HWIO copy's 16-byte rows): the
    # 4-byte filter loader has no tensor-core instance
    cfg = ConvConfig(2, 40, 38, 30, 32, 3, 3, (1, 1), ((1, 0), (2, 1)), "NCHW", 7102)
    ex = cfg.explain()
    assert ex.plan.method == "multi_channel" and not ex.plan.kernel_attrs[7] & planner.MC_TENSOR_CORES
    assert not ex.plan.kernel_attrs[7] & planner.MC_STAGE_FILTERS
    assert "3xTF32" not in ex.reason
    x, w = cfg.arrays()
    out, _ = jit_checked(_fn(cfg), x, w, target=CUDA_TARGET, expect_calls=1)
    assert_close(out, ref_conv(x, w, **cfg.kwargs()), what=cfg.id)
