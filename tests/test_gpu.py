"""GPU tests: the correctness suite on the CUDA device (the paper's kernels and the direct
kernel), vmap and grad, determinism, and which kernel explain() picks.

Marked `gpu`; skipped cleanly without a CUDA device or without the CUDA extension.
"""
from __future__ import annotations

import numpy as np
import pytest
import jax
import jax.numpy as jnp

import jax_fastconv as fc

from _helpers import skip_module_without_cuda

skip_module_without_cuda()

from jax_fastconv import autotune  # noqa: E402
from jax_fastconv.api import FORCE_DIRECT_ENV  # noqa: E402
from jax_fastconv.planner import MC_MIN_CHANNELS  # noqa: E402
from _helpers import (CUDA_TARGET, HIGHEST, ConvConfig, assert_close,  # noqa: E402
                      assert_matches_lax_twice, assert_trees_close, count_custom_calls,
                      jit_checked, lowered_text, random_configs, randn, ref_conv)

pytestmark = pytest.mark.gpu

GPU_SIZES = dict(max_n=3, max_c=64, max_m=64, max_hw=64, max_k=5, small_maps=False,
                 strides=(1, 1, 1, 2),
                 p_single_channel=0.2)
# >= 200 random configurations on the device: both main layouts, plus the other permutations.
RANDOM = (random_configs(90, seed=0, layouts=("NCHW",), **GPU_SIZES)
          + random_configs(90, seed=1000, layouts=("NHWC",), **GPU_SIZES)
          + random_configs(30, seed=2000, **GPU_SIZES))


@pytest.fixture(autouse=True)
def _kernels_always(monkeypatch):
    """These tests check the kernels: no measured switch to lax (test_autotune_* do that)."""
    monkeypatch.setenv(autotune.ENV, "0")


def _fn(cfg, precision=None):
    kw = cfg.kwargs()
    return lambda a, b: fc.conv_general_dilated(a, b, precision=precision, **kw)


def _strided_mc(cfg) -> bool:
    """A layer with stride > 1 and C >= 8: the multi-channel kernel (any stride)."""
    return cfg.strides != (1, 1) and cfg.c >= MC_MIN_CHANNELS


def _strided_sc(cfg) -> bool:
    """A layer the strided single-channel kernel runs: C = 1 with a stride > 1 (S7), or
    1 < C < 8 with a compiled kernel size and stride (S8)."""
    from jax_fastconv.plan_single_channel import FEW_CHANNEL_INSTANCES
    return ((cfg.strides != (1, 1) and cfg.c == 1)
            or (1 < cfg.c < MC_MIN_CHANNELS and cfg.kh == cfg.kw
                and cfg.strides[0] == cfg.strides[1]
                and (cfg.kh, cfg.strides[0]) in FEW_CHANNEL_INSTANCES))


def _check(cfg, *, forced=False):
    ex = cfg.explain()
    x, w = cfg.arrays()
    ref = ref_conv(x, w, **cfg.kwargs())
    paper = ((cfg.strides == (1, 1) and not 1 < cfg.c < MC_MIN_CHANNELS) or _strided_mc(cfg)
             or _strided_sc(cfg))
    if paper or forced:
        # any C: a paper kernel (or its strided kernel); forced: the direct kernel.
        assert ex.path == "fastconv-cuda", f"{cfg.id}: {ex.path}: {ex.reason}"
    else:
        assert ex.path in ("fastconv-cuda", "gemm", "lax"), ex.path
    if ex.path == "gemm":   # patchify, no kernel: one GEMM at HIGHEST (patch_gemm.py)
        out, text = jit_checked(_fn(cfg), x, w, target=CUDA_TARGET, expect_fast=False)
        assert "stablehlo.dot_general" in text and "stablehlo.convolution" not in text
    elif ex.path == "fastconv-cuda":
        expected = (("single_channel" if cfg.c < MC_MIN_CHANNELS else "multi_channel") if paper
                    else "direct")
        assert ex.plan.method == expected, f"{cfg.id}: method {ex.plan.method}"
        out, _ = jit_checked(_fn(cfg), x, w, target=CUDA_TARGET, expect_calls=1)
    else:
        assert ex.reason
        out, _ = jit_checked(_fn(cfg), x, w, target=CUDA_TARGET, expect_fast=False)
        # the fallback is lax at the caller's precision (default: TF32 on Hopper), so
        # compare with that, not with HIGHEST
        ref = jax.lax.conv_general_dilated(x, w, **cfg.kwargs())
    assert out.shape == ref.shape and out.dtype == ref.dtype
    assert_close(out, ref, what=cfg.id)


@pytest.fixture
def force_direct(monkeypatch):
    monkeypatch.setenv(FORCE_DIRECT_ENV, "1")
    jax.clear_caches()
    yield
    jax.clear_caches()


def test_random_count():
    assert len(RANDOM) >= 200
    assert any(c.c == 1 for c in RANDOM) and any(c.c > 1 for c in RANDOM)
    assert any(c.strides == (1, 1) for c in RANDOM) and any(c.strides != (1, 1) for c in RANDOM)
    assert max(max(c.h, c.w) for c in RANDOM) > 32 and max(max(c.c, c.m) for c in RANDOM) > 32


@pytest.mark.parametrize("cfg", RANDOM, ids=lambda c: c.id)
def test_random_vs_lax(cfg):
    _check(cfg)


FORCED = [c for c in RANDOM if c.strides != (1, 1) and not _strided_mc(c)
          and not _strided_sc(c)][:30] + [
    ConvConfig(2, 4, 32, 33, 31, 3, 3, (2, 1), "SAME", "NCHW", 5001),   # (no S8 instance)
    ConvConfig(2, 2, 32, 33, 31, 3, 5, (2, 2), "SAME", "NHWC", 5002),
    ConvConfig(1, 3, 64, 64, 64, 5, 5, (2, 1), ((2, 1), (-1, 2)), "NHWC", 5003),
    ConvConfig(3, 5, 8, 17, 64, 3, 5, (2, 2), "VALID", "NCHW", 5004),
    # 1 < C < 8 without an S8 instance (5x5/1, 1x1, 7x7/1, 4x4/2)
    ConvConfig(2, 3, 16, 20, 22, 5, 5, (1, 1), "SAME", "NHWC", 5005),
    ConvConfig(1, 4, 8, 19, 17, 1, 1, (1, 1), "VALID", "NCHW", 5006),
    ConvConfig(3, 6, 24, 15, 15, 7, 7, (1, 1), ((3, 3), (2, 4)), "NCHW", 5007),
    ConvConfig(2, 2, 16, 30, 30, 4, 4, (2, 2), "VALID", "NHWC", 5008),
]
# Strided layers with C >= 8: the multi-channel kernel (each output pixel's window starts at
# stride x its coordinates): ResNet's 1x1 projection shortcuts and 3x3 stride-2 layers, odd
# maps, unequal strides, padding (SAME, explicit, negative), NHWC / NCHW / mixed layouts, C and M
# tails, tensor-core tiles (C >= 256 1x1, 3x3), a cluster split (batch 1, small map).
STRIDED = [
    ConvConfig(1, 64, 64, 14, 14, 1, 1, (2, 2), "VALID", "NHWC", 5101),
    ConvConfig(4, 256, 512, 28, 28, 1, 1, (2, 2), "SAME", "NHWC", 5102),
    ConvConfig(2, 256, 512, 29, 27, 1, 1, (2, 2), "VALID", "NCHW", 5103),
    ConvConfig(3, 40, 36, 31, 30, 1, 1, (3, 2), "VALID", "NHWC-OIHW-NCHW", 5104),
    ConvConfig(2, 24, 20, 17, 19, 1, 1, (2, 3), ((0, -1), (0, -2)), "NCHW", 5105),
    ConvConfig(8, 512, 1024, 14, 14, 1, 1, (2, 2), "SAME", "NCHW", 5106),
    ConvConfig(1, 64, 64, 14, 14, 1, 1, (2, 2), ((0, 1), (1, 0)), "NHWC", 5107),
    ConvConfig(4, 128, 128, 56, 56, 3, 3, (2, 2), "SAME", "NHWC", 5108),
    ConvConfig(2, 64, 72, 33, 31, 3, 3, (2, 2), "SAME", "NCHW", 5109),
    ConvConfig(2, 16, 32, 33, 31, 3, 3, (2, 2), "SAME", "NHWC", 5110),
    ConvConfig(3, 36, 44, 25, 27, 5, 3, (3, 2), ((2, 1), (-1, 2)), "NCHW-HWIO-NHWC", 5111),
    ConvConfig(1, 256, 256, 28, 28, 3, 3, (2, 2), "SAME", "NCHW", 5112),
]


@pytest.mark.parametrize("cfg", FORCED, ids=lambda c: c.id)
def test_forced_direct_kernel(cfg, force_direct):
    """JAX_FASTCONV_FORCE_DIRECT=1: strided cases run the direct CUDA kernel, not lax."""
    ex = cfg.explain()
    assert ex.path == "fastconv-cuda" and ex.plan.method == "direct", (ex.path, ex.reason)
    _check(cfg, forced=True)


@pytest.mark.parametrize("cfg", STRIDED, ids=lambda c: c.id)
def test_strided_multi_channel_vs_lax(cfg):
    ex = cfg.explain()
    assert _strided_mc(cfg) and ex.path == "fastconv-cuda", ex.reason
    assert ex.plan.method == "multi_channel" and f"stride {cfg.strides}" in ex.reason
    assert_matches_lax_twice(_fn(cfg), cfg, CUDA_TARGET)


# The paper's kernels: C == 1 -> single_channel (sec 3.1), C > 1 -> multi_channel (sec 3.2).
PAPER = [
    ("single_channel", ConvConfig(1, 1, 32, 64, 64, 3, 3, (1, 1), "SAME", "NCHW", 6001)),
    ("single_channel", ConvConfig(2, 1, 64, 28, 28, 5, 5, (1, 1), "VALID", "NCHW", 6002)),
    ("single_channel", ConvConfig(3, 1, 16, 64, 48, 3, 3, (1, 1), "SAME", "NHWC", 6003)),
    ("single_channel", ConvConfig(1, 1, 7, 13, 61, 1, 1, (1, 1), "VALID", "NCHW", 6004)),
    ("multi_channel", ConvConfig(1, 64, 64, 32, 32, 3, 3, (1, 1), "SAME", "NCHW", 6101)),
    ("multi_channel", ConvConfig(2, 32, 64, 28, 28, 3, 3, (1, 1), "SAME", "NHWC", 6102)),
    ("multi_channel", ConvConfig(1, 64, 64, 7, 7, 3, 3, (1, 1), "SAME", "NCHW", 6103)),
    ("multi_channel", ConvConfig(3, 9, 17, 31, 45, 5, 5, (1, 1), ((2, 0), (-1, 3)), "NHWC", 6104)),
    ("multi_channel", ConvConfig(1, 48, 40, 14, 14, 1, 1, (1, 1), "VALID", "NCHW", 6105)),
    # 1x1 NCHW: 16-byte pixel runs (H*W % 4 == 0; tiles span images at 6x6), and not (5x7)
    ("multi_channel", ConvConfig(3, 13, 21, 6, 6, 1, 1, (1, 1), "VALID", "NCHW", 6106)),
    ("multi_channel", ConvConfig(2, 24, 36, 10, 10, 1, 1, (1, 1), "SAME", "NCHW", 6107)),
    ("multi_channel", ConvConfig(2, 16, 20, 5, 7, 1, 1, (1, 1), "VALID", "NCHW", 6108)),
]


@pytest.mark.parametrize("method,cfg", PAPER, ids=[f"{m}-{c.id}" for m, c in PAPER])
def test_paper_kernels(method, cfg):
    ex = cfg.explain()
    assert ex.path == "fastconv-cuda", ex.reason
    assert ex.plan.method == method
    assert ex.plan.kernel_attrs[0] == {"single_channel": 1, "multi_channel": 2}[method]
    assert method in str(ex)
    _check(cfg)


def _single_channel_layer(rng, i, seed, n, m, h, w, kh, kw, strides, kinds, c=1):
    """Random layer i (seed + i) of C = c and these sizes: its padding one of `kinds`
    (explicit pairs may be negative), its layout NCHW or NHWC, or any permutation for every
    4th layer; None when it is invalid or its output is over 4 M elements."""
    from _helpers import RANDOM_LAYOUTS, _valid
    kind = rng.choice(kinds)
    pad = (tuple((int(rng.integers(-2, 5)), int(rng.integers(-2, 5))) for _ in range(2))
           if kind == "explicit" else str(kind))
    layout = str(rng.choice(["NCHW", "NHWC"])) if i % 4 else str(rng.choice(RANDOM_LAYOUTS))
    cfg = ConvConfig(n, c, m, h, w, kh, kw, strides, pad, layout, seed + i)
    return cfg if _valid(cfg) and np.prod(cfg.out_shape()) <= 4_000_000 else None


def _draw_layers(count: int, draw) -> list[ConvConfig]:
    """`count` layers from draw(i) for i = 0, 1, ... (drawn again at the same i on None)."""
    out = []
    while len(out) < count:
        cfg = draw(len(out))
        if cfg is not None:
            out.append(cfg)
    return out


def _single_channel_configs(count: int, seed: int) -> list[ConvConfig]:
    """`count` random C = 1, stride-1 layers for the single-channel kernels (issue 6): odd and
    non-square maps (1-90 pixels a side) and kernels (1x1 to 9x9, 1x7, 5x3, 4x6, ...), every
    padding kind (explicit pairs with negative entries too), batch 1-64, 1-130 filters, both
    main layouts and the other permutations; outputs kept under 4 M elements."""
    rng = np.random.default_rng(seed)
    kernels = [(1, 1), (3, 3), (5, 5), (7, 7), (1, 7), (7, 1), (5, 3), (2, 2), (4, 6), None]
    def draw(i):
        k = kernels[int(rng.integers(len(kernels)))]
        kh, kw = k if k else (int(rng.integers(1, 10)), int(rng.integers(1, 10)))
        n = int(rng.choice([1, 1, 2, 3, 5, 16, 64]))
        m = int(rng.choice([1, 3, 8, 13, 32, 64, 130]))
        h, w = int(rng.integers(1, 91)), int(rng.integers(1, 91))
        return _single_channel_layer(rng, i, seed, n, m, h, w, kh, kw, (1, 1),
                                     ["SAME", "SAME_LOWER", "VALID", "explicit", "explicit"])

    return _draw_layers(count, draw)


SINGLE_CHANNEL_RANDOM = _single_channel_configs(120, seed=7000)


def test_single_channel_random_count():
    cfgs = SINGLE_CHANNEL_RANDOM
    assert len(cfgs) >= 100 and all(c.c == 1 and c.strides == (1, 1) for c in cfgs)
    assert {c.layout for c in cfgs} >= {"NCHW", "NHWC"} and max(c.n for c in cfgs) == 64
    assert any(c.kh != c.kw for c in cfgs) and any(c.h % 2 and c.h != c.w for c in cfgs)
    assert any(not isinstance(c.padding, str) and min(min(p) for p in c.padding) < 0
               for c in cfgs)


@pytest.mark.parametrize("cfg", SINGLE_CHANNEL_RANDOM, ids=lambda c: c.id)
def test_single_channel_random_vs_lax(cfg):
    """Issue 6: >= 100 random C = 1 layers on the single-channel kernels (staged or pointwise)
    against lax HIGHEST, relative error <= 1e-5."""
    _check(cfg)


# Flat chunks in sector pairs (cuda/single_channel.cu, flat_pairs): plane outputs of OW = 2 mod 4
# maps whose planes or tiles start in the middle of a 32-byte sector, each (layer, MB, RB) one
# case: planes alternating phase (OH x OW = 4 mod 8) with a thread's filters of one parity (MB a
# multiple of 16), the same with one filter group (MB 8: no pairs), aligned planes with tiles of
# an odd chunk count (pairs, filters in runs), whole maps with M odd (images alternate phase too),
# filter-contiguous HWIO filters (then copied 4 bytes at a time), 5x5 and 1x1 taps, partial last
# filter groups, and the paper's b1 512^2 K3 NCHW launch.
FLAT_PAIRS = [
    (ConvConfig(2, 1, 20, 28, 28, 3, 3, (1, 1), "VALID", "NCHW", 6301), 16, 2),
    (ConvConfig(2, 1, 20, 28, 28, 3, 3, (1, 1), "VALID", "NCHW", 6302), 8, 2),
    (ConvConfig(3, 1, 37, 30, 28, 3, 3, (1, 1), "VALID", "NCHW", 6303), 16, 2),
    (ConvConfig(3, 1, 37, 28, 28, 3, 3, (1, 1), "VALID", "NCHW", 6304), 32, 26),
    (ConvConfig(2, 1, 24, 28, 28, 3, 3, (1, 1), "VALID", "NCHW-HWIO-NCHW", 6305), 16, 4),
    (ConvConfig(1, 1, 32, 30, 30, 5, 5, (1, 1), "VALID", "NCHW", 6306), 32, 4),
    (ConvConfig(2, 1, 16, 26, 26, 1, 1, (1, 1), "VALID", "NCHW", 6307), 16, 2),
    (ConvConfig(1, 1, 32, 512, 512, 3, 3, (1, 1), "VALID", "NCHW", 6308), 32, 4),
]


@pytest.mark.parametrize("cfg,MB,RB", FLAT_PAIRS, ids=lambda v: getattr(v, "id", str(v)))
def test_single_channel_flat_pairs_vs_lax(cfg, MB, RB):
    import dataclasses
    from _helpers import assert_plans_match_lax, run_plan
    from jax_fastconv import hardware
    from jax_fastconv import plan_single_channel as ps
    ex = cfg.explain()
    assert ex.path == "fastconv-cuda" and ex.plan.method == "single_channel", ex.reason
    OH, OW = cfg.out_shape()[2:]
    assert OW % 4 == 2 and (RB * OW) % 4 == 0
    attrs = (1, 2, 1, -(-cfg.m // MB), MB, RB, 0, 256)   # division 2, volume
    assert ps.valid_attrs(ex.spec, attrs, hardware.current_hardware()) == [], attrs
    plan = dataclasses.replace(ex.plan, kernel_attrs=attrs)
    assert_plans_match_lax(cfg, ex, [plan], "flat pairs", differ=False)
    x, w = cfg.arrays()   # every output written again: -x gives exactly the negated sums
    np.testing.assert_array_equal(run_plan(ex.spec, plan, -x, w), -run_plan(ex.spec, plan, x, w))


# 1x1 single-channel layers under POINTWISE_MAX_OUT outputs: the pointwise kernel (S6), in its
# four store orders (float4 along m over 4 pixels where the input plane is the output plane:
# the first case and 6209; float4 along m per pixel: the padded NHWC ones and 6210, whose
# 54-pixel planes are not a multiple of 4; float4 along ow with the input plane read as float4s
# or gathered under padding; scalar), with padding (also negative), batch 64, other permutations.
POINTWISE = [
    ConvConfig(1, 1, 512, 28, 28, 1, 1, (1, 1), "VALID", "NHWC", 6201),
    ConvConfig(2, 1, 64, 30, 30, 1, 1, (1, 1), "VALID", "NCHW", 6202),
    ConvConfig(3, 1, 30, 17, 23, 1, 1, (1, 1), ((1, 2), (-1, 0)), "NCHW", 6203),
    ConvConfig(4, 1, 13, 9, 11, 1, 1, (1, 1), "SAME", "NHWC", 6204),
    ConvConfig(64, 1, 8, 7, 7, 1, 1, (1, 1), ((2, 1), (0, 2)), "NHWC", 6205),
    ConvConfig(2, 1, 16, 12, 10, 1, 1, (1, 1), "VALID", "NHWC-OIHW-NCHW", 6206),
    ConvConfig(2, 1, 12, 8, 6, 1, 1, (1, 1), ((1, 0), (0, 1)), "CHWN-HWIO-NHWC", 6207),
    ConvConfig(1, 1, 7, 5, 5, 1, 1, (1, 1), ((-2, -1), (0, -2)), "NCHW", 6208),
    ConvConfig(3, 1, 16, 12, 10, 1, 1, (1, 1), "VALID", "NHWC", 6209),   # 4-pixel items, batch 3
    ConvConfig(2, 1, 8, 9, 6, 1, 1, (1, 1), "VALID", "NHWC", 6210),      # planes of 54: per pixel
]


@pytest.mark.parametrize("cfg", POINTWISE, ids=lambda c: c.id)
def test_pointwise_1x1_kernel(cfg):
    from jax_fastconv import plan_single_channel as ps
    ex = cfg.explain()
    assert ex.path == "fastconv-cuda" and ex.plan.method == "single_channel", ex.reason
    assert ps.is_pointwise(ex.plan.kernel_attrs) and "pointwise" in str(ex)
    _check(cfg)
    x, w = cfg.arrays()
    f = jax.jit(_fn(cfg))
    a = np.asarray(f(x, w))
    np.testing.assert_array_equal(a, np.asarray(f(x, w)))   # same bits again


def _strided_single_channel_configs(count: int, seed: int) -> list[ConvConfig]:
    """`count` random C = 1 layers with a stride > 1 for the strided kernel (S7): strides 2-4
    (equal and unequal, one axis 1), kernels 1x1 to 9x9 and non-square, the compiled 2x2/2,
    3x3/2, 5x5/2, 7x7/2 and 4x4/4, every padding kind (negative too), 1-130 filters (M % 4
    != 0: the scalar stores), odd maps, batch 1-32, all layout permutations."""
    rng = np.random.default_rng(seed)
    fixed = [((3, 3), (2, 2)), ((5, 5), (2, 2)), ((7, 7), (2, 2)), ((2, 2), (2, 2)),
             ((4, 4), (4, 4))]
    def draw(i):
        if i % 2 == 0:
            (kh, kw), st = fixed[(i // 2) % len(fixed)]
        else:
            kh, kw = int(rng.integers(1, 10)), int(rng.integers(1, 10))
            st = tuple(int(v) for v in rng.choice([1, 2, 3, 4], size=2))
            if st == (1, 1):
                st = (2, 3)
        n = int(rng.choice([1, 1, 2, 3, 32]))
        m = int(rng.choice([1, 4, 8, 13, 32, 64, 130]))
        h, w = int(rng.integers(1, 120)), int(rng.integers(1, 120))
        return _single_channel_layer(rng, i, seed, n, m, h, w, kh, kw, st,
                                     ["SAME", "SAME_LOWER", "VALID", "explicit"])

    return _draw_layers(count, draw)


SINGLE_CHANNEL_STRIDED = _strided_single_channel_configs(80, seed=8000)


def test_single_channel_strided_count():
    cfgs = SINGLE_CHANNEL_STRIDED
    assert len(cfgs) == 80 and all(c.c == 1 and c.strides != (1, 1) for c in cfgs)
    assert {c.layout for c in cfgs} >= {"NCHW", "NHWC"} and max(c.n for c in cfgs) == 32
    assert {(c.kh, c.strides) for c in cfgs} >= {(3, (2, 2)), (7, (2, 2)), (4, (4, 4))}
    assert any(c.m % 4 for c in cfgs) and any(c.strides[0] != c.strides[1] for c in cfgs)


@pytest.mark.parametrize("cfg", SINGLE_CHANNEL_STRIDED, ids=lambda c: c.id)
def test_single_channel_strided_vs_lax(cfg):
    """C = 1 layers with a stride on the strided kernel (S7) against lax HIGHEST."""
    from jax_fastconv import plan_single_channel as ps
    ex = cfg.explain()
    assert ex.path == "fastconv-cuda" and ps.is_strided(ex.plan.kernel_attrs), ex.reason
    _check(cfg)


def _few_channel_configs(count: int, seed: int) -> list[ConvConfig]:
    """`count` random layers of 1 < C < 8 channels for the strided kernel's per-channel
    instances (S8): its compiled kernel sizes and strides (7x7/2 as ResNet's RGB stem, 3x3/1 as
    VGG's, 3x3/2, 4x4/4, 2x2/2, 5x5/2) on random maps (odd, non-square, 1-100 a side), every
    padding kind, 1-130 filters, batch 1-16, all layout permutations."""
    from jax_fastconv.plan_single_channel import FEW_CHANNEL_INSTANCES
    rng = np.random.default_rng(seed)
    def draw(i):
        k, st = FEW_CHANNEL_INSTANCES[i % len(FEW_CHANNEL_INSTANCES)]
        c = int(rng.integers(2, MC_MIN_CHANNELS))
        n = int(rng.choice([1, 1, 2, 3, 16]))
        m = int(rng.choice([1, 4, 8, 13, 32, 64, 130]))
        h, w = int(rng.integers(1, 100)), int(rng.integers(1, 100))
        return _single_channel_layer(rng, i, seed, n, m, h, w, k, k, (st, st),
                                     ["SAME", "SAME_LOWER", "VALID", "explicit"], c=c)

    return _draw_layers(count, draw)


FEW_CHANNELS = _few_channel_configs(60, seed=9000)


def test_few_channel_count():
    cfgs = FEW_CHANNELS
    assert len(cfgs) == 60 and all(1 < c.c < MC_MIN_CHANNELS for c in cfgs)
    assert {c.c for c in cfgs} >= {2, 3, 4, 7} and {c.layout for c in cfgs} >= {"NCHW", "NHWC"}
    assert {(c.kh, c.strides) for c in cfgs} >= {(3, (1, 1)), (7, (2, 2)), (4, (4, 4))}
    assert any(c.m % 4 for c in cfgs) and any(c.h != c.w for c in cfgs)


@pytest.mark.parametrize("cfg", FEW_CHANNELS, ids=lambda c: c.id)
def test_few_channels_vs_lax(cfg):
    """1 < C < 8 (RGB first layers) on the strided kernel's per-channel instances (S8)
    against lax HIGHEST."""
    from jax_fastconv import plan_single_channel as ps
    ex = cfg.explain()
    assert ex.path == "fastconv-cuda" and ps.is_strided(ex.plan.kernel_attrs), ex.reason
    assert "S8" in ex.reason and ex.plan["rule"] == "few channels (S8)"
    _check(cfg)


@pytest.mark.parametrize("cfg", SINGLE_CHANNEL_STRIDED[:6] + FEW_CHANNELS[:4],
                         ids=lambda c: c.id)
def test_single_channel_strided_same_bits(cfg):
    x, w = cfg.arrays()
    f = jax.jit(_fn(cfg))
    a = np.asarray(f(x, w))
    np.testing.assert_array_equal(a, np.asarray(f(x, w)))


@pytest.mark.parametrize("method,cfg", PAPER[::2] + [("direct", FORCED[-4])],
                         ids=lambda v: v if isinstance(v, str) else v.id)
def test_deterministic(method, cfg, monkeypatch):
    """The same jitted function run twice gives bit-identical results."""
    if method == "direct":
        monkeypatch.setenv(FORCE_DIRECT_ENV, "1")
        jax.clear_caches()
    x, w = cfg.arrays()
    f = jax.jit(_fn(cfg))
    assert count_custom_calls(f.lower(x, w).as_text(), CUDA_TARGET) == 1
    a = np.asarray(f(x, w))
    for _ in range(3):
        np.testing.assert_array_equal(a, np.asarray(f(x, w)))
    jax.clear_caches()


VG = [c for _, c in PAPER[:2]] + [PAPER[5][1], PAPER[7][1], RANDOM[0], RANDOM[95]]


@pytest.mark.parametrize("cfg", VG, ids=lambda c: c.id)
def test_vmap_on_device(cfg):
    rng = np.random.default_rng(cfg.seed + 1)
    x, w = cfg.arrays()
    ref = lambda a, b: ref_conv(a, b, **cfg.kwargs())
    xb = jnp.stack([randn(rng, x.shape) for _ in range(3)], axis=1)
    # precision=HIGHEST: whatever falls back to lax (here or in the transposes) is then
    # float32 like the fast path, instead of TF32
    f = jax.vmap(_fn(cfg, HIGHEST), in_axes=(1, None))
    text = lowered_text(f, xb, w)
    fast = cfg.explain().path == "fastconv-cuda"
    assert count_custom_calls(text, CUDA_TARGET) == (1 if fast else 0)
    assert "stablehlo.while" not in text
    assert_close(jax.jit(f)(xb, w), jax.vmap(ref, in_axes=(1, None))(xb, w))
    wb = jnp.stack([randn(rng, w.shape) for _ in range(2)], axis=-1)
    g = jax.vmap(_fn(cfg, HIGHEST), in_axes=(None, -1))
    assert_close(jax.jit(g)(x, wb), jax.vmap(ref, in_axes=(None, -1))(x, wb))


@pytest.mark.parametrize("cfg", VG, ids=lambda c: c.id)
def test_grad_on_device(cfg):
    x, w = cfg.arrays()
    ours, ref = _fn(cfg, HIGHEST), (lambda a, b: ref_conv(a, b, **cfg.kwargs()))
    gt = randn(np.random.default_rng(cfg.seed + 2), cfg.out_shape())
    loss = lambda conv: (lambda a, b: jnp.sum(jnp.tanh(conv(a, b)) * gt))
    go = jax.jit(jax.grad(loss(ours), argnums=(0, 1)))(x, w)
    gr = jax.jit(jax.grad(loss(ref), argnums=(0, 1)))(x, w)
    assert_trees_close(go, gr, what="grad")
    # second order
    gg = lambda conv: jax.grad(lambda a, b: jnp.sum(jax.grad(loss(conv), argnums=1)(a, b) ** 2),
                               argnums=0)
    assert_close(jax.jit(gg(ours))(x, w), jax.jit(gg(ref))(x, w), rtol=1e-4, what="grad of grad")


def test_explain_plans_for_the_device():
    ex = fc.explain((1, 1, 64, 64), (32, 1, 3, 3), (1, 1), "SAME")
    assert ex.path == "fastconv-cuda" and ex.plan.method == "single_channel"
    ex = fc.explain((1, 64, 32, 32), (64, 64, 3, 3), (1, 1), "SAME")
    assert ex.path == "fastconv-cuda" and ex.plan.method == "multi_channel"
    ex = fc.explain((1, 64, 32, 32), (64, 64, 3, 3), (2, 2), "SAME")   # any stride, C >= 8
    assert ex.path == "fastconv-cuda" and ex.plan.method == "multi_channel"
    ex = fc.explain((1, 1, 32, 32), (64, 1, 3, 3), (2, 2), "SAME")    # single channel, strided
    assert ex.path == "fastconv-cuda" and ex.plan.method == "single_channel"
    assert ex.plan["mode"] == "strided" and "S7" in ex.reason
    ex = fc.explain((1, 2, 32, 32), (64, 2, 3, 3), (2, 2), "SAME")    # 1 < C < 8
    assert ex.path == "fastconv-cuda" and ex.plan.method == "single_channel"
    assert ex.plan["mode"] == "strided" and "S8" in ex.reason


def test_few_channels_without_a_compiled_instance_say_why():
    """ViT-B/16's 16x16/16 patchify stem (C = 3): the strided kernel's generic instance lost to
    lax, so no kernel is planned; being patchify, it runs as one GEMM. The same kernel at
    stride 8 (overlapping windows) runs lax. explain() says why for both."""
    ex = fc.explain((1, 3, 224, 224), (768, 3, 16, 16), (16, 16), "VALID")
    assert ex.plan.method == "direct" and ex.path == "gemm"
    assert "no compiled instance" in ex.reason and "16x16" in ex.reason and "GEMM" in ex.reason
    ex = fc.explain((1, 3, 224, 224), (768, 3, 16, 16), (8, 8), "VALID")
    assert ex.plan.method == "direct" and ex.path == "lax"
    assert "no compiled instance" in ex.reason and FORCE_DIRECT_ENV in ex.reason


# Patchify layers (stride = kernel size) that no kernel covers: the GEMM (patch_gemm.py), on the
# device, against lax HIGHEST. ViT-B/16 / L/14 / B/32 stems (32x32 x 3 channels exceeds the
# strided kernel's 48 KB slab), a 3x3/3 of 5 channels with SAME (no padding needed), a
# non-square 2x4/(2, 4) of 7 channels, odd maps (cropped), the layout permutations.
PATCHIFY = [
    ConvConfig(1, 3, 768, 224, 224, 16, 16, (16, 16), "VALID", "NHWC", 6501),
    ConvConfig(2, 3, 768, 224, 224, 16, 16, (16, 16), "VALID", "NCHW", 6502),
    ConvConfig(3, 3, 1024, 224, 224, 14, 14, (14, 14), "VALID", "NHWC", 6503),
    ConvConfig(2, 3, 768, 224, 224, 32, 32, (32, 32), "VALID", "NCHW", 6504),
    ConvConfig(4, 5, 40, 33, 30, 3, 3, (3, 3), "SAME", "NHWC-OIHW-NCHW", 6505),
    ConvConfig(2, 7, 24, 37, 45, 2, 4, (2, 4), "VALID", "CHWN-HWIO-NHWC", 6506),
    ConvConfig(5, 3, 64, 70, 67, 16, 16, (16, 16), "VALID", "HWCN-OHWI-CNHW", 6507),
    # C = 1 of >= 49 taps (the strided kernel's generic instance is not planned there)
    ConvConfig(2, 1, 384, 224, 224, 16, 16, (16, 16), "VALID", "NCHW", 6508),
    ConvConfig(32, 1, 64, 28, 28, 7, 7, (7, 7), "VALID", "NHWC", 6509),
]


@pytest.mark.parametrize("cfg", PATCHIFY, ids=lambda c: c.id)
def test_patchify_gemm_vs_lax(cfg):
    ex = cfg.explain()
    assert ex.path == "gemm", str(ex)
    text = assert_matches_lax_twice(_fn(cfg), cfg, CUDA_TARGET, expect_fast=False)
    assert "stablehlo.dot_general" in text and "stablehlo.convolution" not in text


def test_few_channels_past_the_slab_run_lax_and_say_why():
    """1 < C < 8 where 4 filters' C x KH x KW weights exceed the strided kernel's 48 KB slab:
    the plan falls back and lax runs, and explain() says why."""
    ex = fc.explain((1, 7, 64, 64), (16, 7, 21, 21), (1, 1), "SAME")
    assert ex.plan.method == "direct" and ex.path == "lax"
    assert "C = 7" in ex.reason and "48 KB" in ex.reason and FORCE_DIRECT_ENV in ex.reason


# -- the measured choice (autotune.py) on the device -------------------------------------------

AUTOTUNE_CASES = [  # inside autotune.worth_measuring: cuDNN may run FFT/Winograd here
    ((4, 28, 28, 256), (3, 3, 256, 256), ("NHWC", "HWIO", "NHWC")),
    ((32, 128, 28, 28), (128, 128, 3, 3), ("NCHW", "OIHW", "NCHW")),
]


@pytest.mark.parametrize("lhs_shape,rhs_shape,dn", AUTOTUNE_CASES)
def test_autotune_on_gpu(monkeypatch, tmp_path, lhs_shape, rhs_shape, dn):
    monkeypatch.setenv(autotune.ENV, "1")
    monkeypatch.setenv("JAX_FASTCONV_CACHE_DIR", str(tmp_path))
    autotune.clear_memory()
    measured, real = [], autotune.measure
    monkeypatch.setattr(autotune, "measure",
                        lambda *a, **k: measured.append(1) or real(*a, **k))
    rng = np.random.default_rng(7)
    x, w = randn(rng, lhs_shape), randn(rng, rhs_shape)
    f = lambda a, b: fc.conv_general_dilated(a, b, (1, 1), "SAME", dimension_numbers=dn)
    text = lowered_text(f, x, w)
    e = fc.explain(x, w, (1, 1), "SAME", dimension_numbers=dn)
    assert len(measured) == 1, "explain() after the trace must reuse the measured choice"
    c = e.measured
    assert c is not None and c.kernel_us > 0 and c.lax_us > 0, c
    assert e.path == ("fastconv-cuda" if c.use_kernel else "lax"), e
    assert count_custom_calls(text, CUDA_TARGET) == (1 if c.use_kernel else 0)
    ref = ref_conv(x, w, (1, 1), "SAME", dimension_numbers=dn)
    assert_close(jax.jit(f)(x, w), ref, what=str(c))
    assert list(tmp_path.glob("autotune-*.json")), "the choice is cached on disk"
    autotune.clear_memory()


@pytest.mark.parametrize("lhs_shape,rhs_shape,dn", [
    ((32, 28, 28, 1), (3, 3, 1, 512), ("NHWC", "HWIO", "NHWC")),
    ((1, 1, 1024, 1024), (32, 1, 5, 5), ("NCHW", "OIHW", "NCHW"))])
def test_choose_plan_on_gpu(monkeypatch, tmp_path, lhs_shape, rhs_shape, dn):
    """Large single-channel layers: the first trace times the planned launch and its variants
    (autotune.choose_plan), runs the chosen one correctly and caches the choice."""
    monkeypatch.setenv(autotune.ENV, "1")
    monkeypatch.setenv("JAX_FASTCONV_CACHE_DIR", str(tmp_path))
    autotune.clear_memory()
    rng = np.random.default_rng(11)
    x, w = randn(rng, lhs_shape), randn(rng, rhs_shape)
    f = lambda a, b: fc.conv_general_dilated(a, b, (1, 1), "VALID", dimension_numbers=dn)
    e = fc.explain(x, w, (1, 1), "VALID", dimension_numbers=dn)
    c = e.measured
    assert e.path == "fastconv-cuda" and isinstance(c, autotune.PlanChoice), str(e)
    assert len(c.plan_us) >= 2 and all(us > 0 for _, us in c.plan_us), c.describe()
    assert e.plan.kernel_attrs in [tuple(a) for a, _ in c.plan_us] and c.kernel_us > 0
    assert_close(jax.jit(f)(x, w), ref_conv(x, w, (1, 1), "VALID", dimension_numbers=dn),
                 what=c.describe())
    assert list(tmp_path.glob("autotune-*.json")), "the choice is cached on disk"
    autotune.clear_memory()


@pytest.mark.parametrize("lhs_shape,rhs_shape,stride,dn", [
    ((1, 224, 224, 3), (4, 4, 3, 96), (4, 4), ("NHWC", "HWIO", "NHWC")),     # ConvNeXt stem
    ((8, 96, 56, 56), (192, 96, 2, 2), (2, 2), ("NCHW", "OIHW", "NCHW")),    # ConvNeXt ds1
    ((4, 1, 112, 112), (64, 1, 4, 4), (4, 4), ("NCHW", "OIHW", "NCHW"))])
def test_gemm_autotune_on_gpu(monkeypatch, tmp_path, lhs_shape, rhs_shape, stride, dn):
    """Patchify layers a kernel covers: the first trace times the kernel against the patch
    GEMM (autotune.choose_gemm), runs the winner correctly and caches the choice."""
    monkeypatch.setenv(autotune.ENV, "1")
    monkeypatch.setenv("JAX_FASTCONV_CACHE_DIR", str(tmp_path))
    autotune.clear_memory()
    rng = np.random.default_rng(13)
    x, w = randn(rng, lhs_shape), randn(rng, rhs_shape)
    f = lambda a, b: fc.conv_general_dilated(a, b, stride, "VALID", dimension_numbers=dn)
    text = lowered_text(f, x, w)
    e = fc.explain(x, w, stride, "VALID", dimension_numbers=dn)
    c = e.measured
    assert c is not None and c.kernel_us > 0 and c.gemm_us > 0 and c.lax_us is None, str(e)
    assert e.path == ("fastconv-cuda" if c.use_kernel else "gemm"), str(e)
    assert count_custom_calls(text, CUDA_TARGET) == (1 if c.use_kernel else 0)
    ref = ref_conv(x, w, stride, "VALID", dimension_numbers=dn)
    out = jax.jit(f)(x, w)
    assert_close(out, ref, what=c.describe())
    assert np.array_equal(np.asarray(out), np.asarray(jax.jit(f)(x, w))), "same bits twice"
    assert list(tmp_path.glob("autotune-*.json")), "the choice is cached on disk"
    autotune.clear_memory()


def test_autotune_skips_layers_lax_cannot_win(monkeypatch, tmp_path):
    """A single-channel layer under autotune.PLAN_MIN_BYTES (4 MiB; batch 4 of it is above):
    neither lax nor the plan variants are timed."""
    monkeypatch.setenv(autotune.ENV, "1")
    monkeypatch.setenv("JAX_FASTCONV_CACHE_DIR", str(tmp_path))
    autotune.clear_memory()
    e = fc.explain((1, 96, 96, 1), (5, 5, 1, 32), (1, 1), "SAME",
                   dimension_numbers=("NHWC", "HWIO", "NHWC"))
    assert e.spec.min_bytes < autotune.PLAN_MIN_BYTES
    assert e.path == "fastconv-cuda" and e.measured is None
    assert not list(tmp_path.glob("autotune-*.json"))


def test_time_plans_on_gpu():
    """The extension's device timer (cuda/plan_timer.cc) on a real single-channel layer: one
    list of `rounds` positive samples per plan (the planned one and its variants), none faster
    than 10 TB/s of the layer's traffic; a plan the launcher rejects and malformed arguments
    raise, and the timer still works afterwards."""
    import statistics
    from jax_fastconv import _ffi, plan_single_channel, planner
    from jax_fastconv.hardware import resolve_hardware
    from jax_fastconv.spec import spec_from_logical

    spec = spec_from_logical(8, 1, 128, 128, 64, 3, 3, padding="SAME", layout="NHWC")
    hw = resolve_hardware(None)
    plan = planner.plan_cached(spec, hw)
    assert plan.method == "single_channel", plan.reason
    cands = plan_single_channel.candidate_plans(spec, hw, plan)
    plans = [[int(v) for v in c.kernel_attrs] for c in cands]
    args = autotune.time_plans_args(spec, plan)
    rounds = 5
    samples = _ffi.cuda_module.time_plans(**args, plans=plans, rounds=rounds,
                                          ordinal=autotune._device_ordinal())
    assert len(samples) == len(plans)
    floor_us = spec.min_bytes / 10e12 * 1e6       # no kernel beats 10 TB/s
    for attrs, s in zip(plans, samples):
        assert len(s) == rounds and all(v > 0 for v in s), (attrs, s)
        assert statistics.median(s) >= floor_us, (attrs, s, floor_us)
    # measure_plans: the same timer through the FFI attributes of the spec
    times, R = autotune.measure_plans(spec, cands, rounds=3)
    assert list(times) == [tuple(c.kernel_attrs) for c in cands] and R == 0
    assert all(us >= floor_us for us in times.values()), times

    # C = 2 with a single-channel plan: the launcher's check_params -> cudaErrorInvalidValue
    two = spec_from_logical(8, 2, 64, 64, 64, 3, 3, padding="SAME", layout="NHWC")
    with pytest.raises(RuntimeError, match="failed to launch.*cudaErrorInvalidValue") as err:
        _ffi.cuda_module.time_plans(**autotune.time_plans_args(two, plan), plans=plans[:1],
                                    rounds=1)
    assert str(plans[0]).replace(" ", "") in str(err.value).replace(" ", "")
    with pytest.raises(ValueError, match="plans\\[0\\]"):
        _ffi.cuda_module.time_plans(**args, plans=[plans[0][:7]])
    with pytest.raises(ValueError, match="dims"):
        _ffi.cuda_module.time_plans(**{**args, "dims": args["dims"][:8]}, plans=plans)
    again = _ffi.cuda_module.time_plans(**args, plans=plans[:1], rounds=1)
    assert len(again) == 1 and len(again[0]) == 1 and again[0][0] >= floor_us
