"""GPU tests of the multi-channel kernel's 3xTF32 tensor-core path (plan[7] & 4, NHWC input):
float32 accuracy against lax HIGHEST, same bits on repeated runs, and float32 semantics for
non-finite inputs (inf x 0 is NaN on the tensor cores: the kernel recomputes such tiles with
FFMAs).  Marked `gpu`; skipped cleanly without a CUDA device or the CUDA extension.
"""
from __future__ import annotations

import numpy as np
import pytest
import jax

import jax_fastconv as fc

from _helpers import skip_module_without_cuda

skip_module_without_cuda()

from jax_fastconv import autotune, planner  # noqa: E402
from _helpers import CUDA_TARGET, ConvConfig, assert_close, jit_checked, ref_conv  # noqa: E402

pytestmark = pytest.mark.gpu

# NHWC layers the H100/H200 plans put on the tensor cores: 64x64 and 128x64 tiles, S = 32 and
# 64 B, cluster splits 1 to 4, M and C tails (C % 16 != 0, M % 64 != 0), odd padding.
TC = [
    ConvConfig(1, 64, 64, 112, 112, 3, 3, (1, 1), "VALID", "NHWC", 7001),          # 64x64 cs2
    ConvConfig(2, 36, 44, 40, 40, 3, 3, (1, 1), ((1, 0), (2, 1)), "NHWC", 7002),   # S32 cs4
    ConvConfig(1, 64, 64, 64, 64, 3, 3, (1, 1), "SAME", "NHWC", 7003),
    ConvConfig(3, 24, 40, 48, 48, 5, 5, (1, 1), "SAME", "NHWC", 7004),             # 128x64
    ConvConfig(8, 64, 68, 56, 56, 3, 3, (1, 1), "SAME", "NHWC", 7005),
    ConvConfig(32, 64, 64, 56, 56, 3, 3, (1, 1), "VALID", "NHWC-OIHW-NCHW", 7006),  # staged
]


@pytest.fixture(autouse=True)
def _kernels_always(monkeypatch):
    monkeypatch.setenv(autotune.ENV, "0")


def _fn(cfg):
    return lambda a, b: fc.conv_general_dilated(a, b, **cfg.kwargs())


def _tensor_core_plan(cfg):
    ex = cfg.explain()
    assert ex.path == "fastconv-cuda" and ex.plan.method == "multi_channel", ex.reason
    assert ex.plan.kernel_attrs[7] & planner.MC_TENSOR_CORES, f"{cfg.id}: {ex.reason}"
    assert "3xTF32" in ex.reason
    return ex


@pytest.mark.parametrize("cfg", TC, ids=lambda c: c.id)
def test_tensor_cores_vs_lax(cfg):
    _tensor_core_plan(cfg)
    x, w = cfg.arrays()
    out, _ = jit_checked(_fn(cfg), x, w, target=CUDA_TARGET, expect_calls=1)
    assert_close(out, ref_conv(x, w, **cfg.kwargs()), what=cfg.id)
    again, _ = jit_checked(_fn(cfg), x, w, target=CUDA_TARGET, expect_calls=1)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(again))  # same bits


def _numpy_nhwc_conv(x, w, padding):
    """float64 direct convolution (NHWC, HWIO, stride 1): the float semantics of FMAs."""
    (pt, pb), (pl, pr) = padding
    xp = np.pad(np.asarray(x, np.float64), ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    w = np.asarray(w, np.float64)
    kh, kw = w.shape[:2]
    oh, ow = xp.shape[1] - kh + 1, xp.shape[2] - kw + 1
    with np.errstate(invalid="ignore"):
        out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
        for i in range(kh):
            for j in range(kw):
                out += np.einsum("nhwc,cm->nhwm", xp[:, i:i + oh, j:j + ow, :], w[i, j])
    return out


@pytest.mark.parametrize("cfg", TC[:2] + TC[3:5], ids=lambda c: c.id)
def test_tensor_cores_keep_float32_semantics_for_non_finite_inputs(cfg):
    _tensor_core_plan(cfg)
    x, w = cfg.arrays()
    x = np.array(x)
    n, h, wd, c = x.shape
    rng = np.random.default_rng(cfg.seed)
    x[0, rng.integers(h), rng.integers(wd), rng.integers(c)] = np.inf
    x[-1, rng.integers(h), rng.integers(wd), rng.integers(c)] = -np.inf
    x[0, h // 2, wd // 2, 0] = np.nan
    out, _ = jit_checked(_fn(cfg), x, w, target=CUDA_TARGET, expect_calls=1)
    out = np.asarray(out, np.float64)
    pad = cfg.padding
    if isinstance(pad, str):
        pad = tuple(jax.lax.padtype_to_pads((h, wd), (cfg.kh, cfg.kw), (1, 1), pad))
    ref = _numpy_nhwc_conv(x, w, pad)
    assert np.isnan(ref).any() and np.isinf(ref).any()  # the case exercises both
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    np.testing.assert_array_equal(np.isposinf(out), np.isposinf(ref))
    np.testing.assert_array_equal(np.isneginf(out), np.isneginf(ref))
    fin = np.isfinite(ref)
    err = np.linalg.norm(out[fin] - ref[fin]) / np.linalg.norm(ref[fin])
    assert err <= 1e-5, f"{cfg.id}: finite outputs relative error {err:.2e}"


def test_nchw_input_stays_on_ffma():
    cfg = ConvConfig(8, 64, 64, 56, 56, 3, 3, (1, 1), "SAME", "NCHW", 7100)
    ex = cfg.explain()
    assert ex.plan.method == "multi_channel" and not ex.plan.kernel_attrs[7] & planner.MC_TENSOR_CORES
    assert "3xTF32" not in ex.reason
