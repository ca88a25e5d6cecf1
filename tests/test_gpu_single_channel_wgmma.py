"""GPU tests of the single-channel wgmma kernel (plan division 6, cuda/single_channel_wgmma.cu,
plan_single_channel S11; sm_90a): float32 accuracy against lax HIGHEST on every launch the
planner offers (A from shared memory and from registers; flat and dense segments; NHWC-like and
NCHW-like outputs), same bits on repeated runs, float32 semantics for non-finite inputs (a CTA
that stages an inf or NaN computes its outputs by direct float32 sums), vmap, and the
autotuner's measured choice with the kernel among its candidates.
Marked `gpu`; skipped cleanly without a CUDA device, the CUDA extension, or a device and build
with sm_90a.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from _helpers import skip_module_without_cuda

skip_module_without_cuda()

from jax_fastconv import autotune  # noqa: E402
from jax_fastconv import plan_single_channel as ps  # noqa: E402
from _helpers import (ConvConfig, assert_chosen_plan_matches_lax,  # noqa: E402
                      assert_plans_keep_non_finite_semantics, assert_plan_vmaps_into_one_call,
                      assert_plans_match_lax, measured_plan_choice, single_channel_candidates)

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _kernels_always(monkeypatch):
    monkeypatch.setenv(autotune.ENV, "0")


# the paper's K = 3 / 5 layers the kernel runs (NHWC, M % 32 == 0; NCHW where OW % 4 == 0: the
# 5x5 ones), small and wide maps
PAPER = ([ConvConfig(n, 1, m, h, h, k, k, (1, 1), "VALID", "NHWC", 9900 + 10 * h + k)
          for n, h, m in ((1, 112, 128), (32, 28, 512), (2, 256, 32)) for k in (3, 5)]
         + [ConvConfig(n, 1, m, h, h, 5, 5, (1, 1), "VALID", "NCHW", 9800 + h)
            for n, h, m in ((1, 112, 128), (32, 28, 512), (2, 256, 32))])
# their SAME twins (Flax's default padding): the padded band's staging, in float4s where a row
# is at most 128 floats (28^2: 8 lanes a row, 112^2: 32) and in scalar rows where wider (256^2)
PAPER_SAME = [ConvConfig(n, 1, m, h, h, 5, 5, (1, 1), "SAME", layout, 9700 + h + (layout == "NCHW"))
              for n, h, m in ((1, 112, 128), (32, 28, 512), (2, 256, 32))
              for layout in ("NHWC", "NCHW")]


def _random_layers(count: int, seed: int, id0: int, layouts: tuple[str, str, str],
                   planes: bool = False) -> list[ConvConfig]:
    """Layers the kernel runs: KH, KW in 1..5 (2+ taps), odd and non-square maps (a few wide),
    M a multiple of 32, batch 1-7, every padding kind (negative pairs too); layer i in
    layouts[i % 3]. planes: only those whose output it writes as planes (tz_planes: pixels
    contiguous, OW % 4 == 0)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        i = len(out)
        kh, kw = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        if kh * kw < 2:
            continue
        h = int(rng.integers(1, 70))
        w = int(rng.integers(200, 600)) if i % 6 == 5 else int(rng.integers(1, 70))
        kind = rng.choice(["SAME", "SAME_LOWER", "VALID", "explicit"])
        pad = (tuple((int(rng.integers(-2, 5)), int(rng.integers(-2, 5))) for _ in range(2))
               if kind == "explicit" else str(kind))
        cfg = ConvConfig(int(rng.choice([1, 2, 3, 7])), 1, int(rng.choice([32, 64, 96])), h, w,
                         kh, kw, (1, 1), pad, layouts[i % 3], id0 + i)
        try:
            shape = cfg.out_shape()
        except Exception:
            continue
        if (min(shape) > 0 and np.prod(shape) <= 3_000_000
                and (not planes or ps.tz_planes(cfg.explain().spec))):
            out.append(cfg)
    return out


# outputs with the filters contiguous (NHWC and NCHW-OIHW-NHWC: the strided filter reads), and
# outputs written as planes (NCHW, NHWC input with NCHW output, HWIO filters with NCHW output)
RANDOM = _random_layers(40, 9300, 9400, ("NCHW-OIHW-NHWC", "NHWC", "NHWC"))
RANDOM_PLANES = _random_layers(20, 9500, 9600, ("NCHW", "NHWC-OIHW-NCHW", "NCHW-HWIO-NCHW"),
                               planes=True)


def _tz_plans(cfg):
    """The layer's wgmma plans: the launches candidate_plans offers (staggered start; A from
    shared memory and from registers; for plane outputs also with the aligned line; dense
    segments), as plans of the layer, and the first of each kind with its warpgroups starting
    together (plan[6] = 0 / 2 / 6 / 10)."""
    ex, plans = single_channel_candidates(cfg, ps.tz_supported, ps.is_tz, "the wgmma kernel")
    aligned = ps.tz_line(ex.spec, 1) != ps.tz_line(ex.spec)
    assert len(plans) <= len(ps.TZ_GRIDS) * (2 + aligned), ex.spec.describe()
    for p in plans:
        assert p["mode"] == "wgmma over a Toeplitz band (3xTF32)" + ps.tz_mode(p.kernel_attrs[6])
        assert p.kernel_attrs[6] in ((1, 3, 7, 11) if aligned else (1, 3, 11))
    kinds = [k for k in (1, 3, 7, 11) if any(p.kernel_attrs[6] == k for p in plans)]
    assert 11 in kinds   # dense segments, offered on every layer the kernel runs
    firsts = [next(p for p in plans if p.kernel_attrs[6] == k) for k in kinds]
    together = [dataclasses.replace(p, kernel_attrs=p.kernel_attrs[:6] + (p.kernel_attrs[6] - 1,
                                                                          p.kernel_attrs[7]))
                for p in firsts]
    return ex, plans + together


@pytest.mark.parametrize("cfg", PAPER + PAPER_SAME + RANDOM + RANDOM_PLANES, ids=lambda c: c.id)
def test_wgmma_launches_vs_lax(cfg):
    ex, plans = _tz_plans(cfg)
    # 3xTF32 sums differ from the FFMA kernel's in the last bits on a layer with several taps
    assert_plans_match_lax(cfg, ex, plans, "the wgmma kernel",
                           differ=cfg.kh * cfg.kw >= 9 and min(cfg.out_shape()) > 0)


NON_FINITE = [ConvConfig(2, 1, 32, 40, 44, 5, 5, (1, 1), "SAME", "NHWC", 9951),
              ConvConfig(3, 1, 64, 37, 36, 3, 3, (1, 1), "VALID", "NHWC", 9952),
              ConvConfig(1, 1, 32, 30, 300, 2, 4, (1, 1), ((3, 2), (1, 4)), "NCHW-OIHW-NHWC", 9953),
              ConvConfig(2, 1, 64, 40, 44, 5, 5, (1, 1), "VALID", "NCHW", 9954)]


@pytest.mark.parametrize("cfg", NON_FINITE, ids=lambda c: c.id)
def test_wgmma_keeps_float32_semantics_for_non_finite_inputs(cfg):
    ex, plans = _tz_plans(cfg)
    assert_plans_keep_non_finite_semantics(cfg, ex.spec, plans)


def test_wgmma_leaves_layers_it_does_not_run_to_the_other_kernels():
    # NCHW output with OW % 4 != 0, M not a multiple of 32, a 7x7 kernel: no wgmma plan offered
    for cfg in (ConvConfig(1, 1, 32, 64, 62, 5, 5, (1, 1), "VALID", "NCHW", 9960),
                ConvConfig(1, 1, 48, 64, 64, 5, 5, (1, 1), "VALID", "NHWC", 9961),
                ConvConfig(1, 1, 32, 64, 64, 7, 7, (1, 1), "VALID", "NHWC", 9962)):
        ex = cfg.explain()
        from jax_fastconv import hardware
        assert ps.tz_supported(ex.spec, hardware.current_hardware()) is not None
        assert not any(ps.is_tz(p.kernel_attrs) for p in
                       ps.candidate_plans(ex.spec, hardware.current_hardware(), ex.plan))


def test_wgmma_under_vmap():
    # vmap folds into the batch: one custom call
    cfg = ConvConfig(2, 1, 32, 48, 52, 5, 5, (1, 1), "SAME", "NHWC", 9970)
    ex, plans = _tz_plans(cfg)
    assert_plan_vmaps_into_one_call(cfg, ex.spec, plans[0])


def test_autotune_measures_the_wgmma_kernel(monkeypatch, tmp_path):
    # The first trace times the planned FFMA launch, its variants and the wgmma launches on this
    # device and keeps the fastest (which one wins is the device's answer, not this test's).
    cfg = ConvConfig(32, 1, 256, 56, 56, 5, 5, (1, 1), "VALID", "NHWC", 9980)
    ex, timed = measured_plan_choice(cfg, monkeypatch, tmp_path)
    tz = [a for a in timed if ps.is_tz(a)]
    n_rs = sum(rs for _, _, rs in ps.TZ_GRIDS)   # dense segments: the entries with A from registers
    assert 2 <= len(tz) <= len(ps.TZ_GRIDS) + n_rs and any(a[6] & 8 for a in tz), timed
    assert all(us > 0 for _, us in ex.measured.plan_us)
    assert_chosen_plan_matches_lax(cfg, ex)
