"""The patchify GEMM (patch_gemm.py): which convolutions it computes exactly, its answers
against lax HIGHEST in every layout, and the GPU decision (lowered for a pretend CUDA device
on this machine): patchify layers no kernel covers run it, with jit, vmap and grad."""
from __future__ import annotations

import numpy as np
import pytest
import jax
import jax.numpy as jnp

import jax_fastconv as fc
from jax_fastconv import patch_gemm
from jax_fastconv.api import FORCE_DIRECT_ENV
from _helpers import (CUDA_TARGET, LAYOUTS, ConvConfig, assert_close, assert_trees_close,
                      count_custom_calls, pretend_cuda, ref_conv)

# stride == kernel size, every window inside the map
COVERED = [
    ConvConfig(2, 3, 8, 64, 64, 16, 16, (16, 16), "VALID", "NHWC", 1),     # ViT-like stem
    ConvConfig(1, 3, 12, 70, 67, 16, 16, (16, 16), "VALID", "NCHW", 2),    # crop: 64 of 70 / 67
    ConvConfig(2, 5, 6, 30, 33, 3, 3, (3, 3), "SAME", "NHWC-OIHW-NCHW", 3),  # SAME, no pad needed
    ConvConfig(3, 2, 5, 12, 13, 2, 3, (2, 3), "VALID", "CHWN-HWIO-NHWC", 4),  # non-square
    ConvConfig(1, 1, 7, 28, 28, 7, 7, (7, 7), "VALID", "HWCN-OHWI-CNHW", 5),  # C = 1 (MNIST)
    ConvConfig(2, 9, 4, 13, 13, 4, 4, (4, 4), ((0, -1), (0, 2)), "NCHW-HWIO-NHWC", 6),  # hi pad unread
    ConvConfig(2, 4, 3, 8, 9, 1, 1, (1, 1), "VALID", "dnobj-NHWC", 7),     # 1x1 at stride 1
    ConvConfig(1, 6, 5, 32, 32, 8, 8, (8, 8), "SAME_LOWER", "dnobj-NCHW", 8),
    ConvConfig(2, 3, 4, 20, 24, 5, 6, (5, 6), "VALID", "default", 9),
    ConvConfig(1, 2, 6, 12, 12, 4, 4, (4, 4), "VALID", "NCHW-HWIO-NCHW", 10),
]

# valid convolutions the GEMM does not compute, and the words of the reason
UNCOVERED = [
    (ConvConfig(1, 3, 4, 32, 32, 4, 4, (2, 2), "VALID", "NHWC", 20), "not the kernel size"),
    (ConvConfig(1, 3, 4, 32, 32, 4, 4, (4, 4), ((1, 0), (0, 0)), "NHWC", 21), "padding"),
    (ConvConfig(1, 3, 4, 30, 32, 4, 4, (4, 4), "SAME", "NCHW", 22), "padding"),
    (ConvConfig(1, 3, 4, 13, 13, 4, 4, (4, 4), ((0, 3), (0, 0)), "NCHW", 23), "padding"),
]


def _spec(cfg):
    return cfg.explain().spec


@pytest.mark.parametrize("cfg", COVERED, ids=lambda c: c.id)
def test_conv_matches_lax(cfg):
    spec = _spec(cfg)
    assert patch_gemm.uncovered_reason(spec) is None
    x, w = cfg.arrays()
    out = jax.jit(lambda a, b: patch_gemm.conv(a, b, spec))(x, w)
    ref = ref_conv(x, w, **cfg.kwargs())
    assert out.shape == ref.shape and out.dtype == jnp.float32
    assert_close(out, ref, what=cfg.id)


def test_covered_cases_span_the_layouts():
    assert {c.layout for c in COVERED} == set(LAYOUTS) - {"NCHW-OIHW-NHWC"}


@pytest.mark.parametrize("cfg,words", UNCOVERED, ids=lambda v: getattr(v, "id", str(v)))
def test_uncovered_reason(cfg, words):
    reason = patch_gemm.uncovered_reason(_spec(cfg))
    assert reason is not None and words in reason


def test_uncovered_dilation_groups_dtype():
    x, w = (1, 4, 16, 16), (4, 4, 4, 4)
    assert "dilation" in patch_gemm.uncovered_reason(
        fc.explain(x, w, (4, 4), "VALID", rhs_dilation=(1, 2)).spec)
    assert "grouped" in patch_gemm.uncovered_reason(
        fc.explain(x, (4, 2, 4, 4), (4, 4), "VALID", feature_group_count=2).spec)
    xs = jax.ShapeDtypeStruct(x, jnp.bfloat16)
    ws = jax.ShapeDtypeStruct(w, jnp.bfloat16)
    assert "float32" in patch_gemm.uncovered_reason(fc.explain(xs, ws, (4, 4), "VALID").spec)


# -- the GPU decision, lowered for a pretend CUDA device (H100 plans) -------------------------

@pytest.fixture
def h100(monkeypatch):
    pretend_cuda(monkeypatch, "h100")
    monkeypatch.delenv(FORCE_DIRECT_ENV, raising=False)


VIT = [ConvConfig(2, 3, 16, 64, 64, 16, 16, (16, 16), "VALID", lay, 40 + i)
       for i, lay in enumerate(("NHWC", "NCHW", "NHWC-OIHW-NCHW"))]


@pytest.mark.parametrize("cfg", VIT, ids=lambda c: c.id)
def test_gpu_runs_uncovered_patchify_as_a_gemm(h100, cfg):
    ex = cfg.explain()
    assert ex.path == "gemm" and ex.plan.method == "direct", str(ex)
    assert "patchify" in ex.reason and "no compiled instance" in ex.reason
    x, w = cfg.arrays()
    f = lambda a, b: fc.conv_general_dilated(a, b, **cfg.kwargs())
    text = jax.jit(f).trace(x, w).lower(lowering_platforms=("cuda",)).as_text()
    assert count_custom_calls(text, CUDA_TARGET) == 0
    assert "stablehlo.dot_general" in text and "stablehlo.convolution" not in text
    assert_close(jax.jit(f)(x, w), ref_conv(x, w, **cfg.kwargs()), what=cfg.id)


def test_gemm_path_vmap_and_grad(h100):
    cfg = VIT[0]
    x, w = cfg.arrays()
    kw = cfg.kwargs()
    t = np.random.default_rng(1).standard_normal(cfg.out_shape()).astype(np.float32)
    loss = lambda conv: (lambda a, b: jnp.sum(conv(a, b, **kw) * t))
    ours = jax.grad(loss(fc.conv_general_dilated), argnums=(0, 1))(x, w)
    ref = jax.grad(loss(ref_conv), argnums=(0, 1))(x, w)
    assert_trees_close(ours, ref, what="grad")
    xs = np.stack([x, 2 * x + 1])
    out = jax.vmap(lambda a: fc.conv_general_dilated(a, w, **kw))(xs)
    assert_close(out, jax.vmap(lambda a: ref_conv(a, w, **kw))(xs), what="vmap")


def test_kernels_keep_the_patchify_layers_they_cover(h100):
    """The ConvNeXt stem (4x4/4, C = 3) and C = 1 4x4/4 have compiled strided instances, C = 1
    5x5/5 (under PATCH_GEMM_MIN_TAPS) runs the generic one, C >= 8 the multi-channel kernel:
    the GEMM only takes what no kernel is planned for."""
    for lhs, rhs in [((1, 3, 224, 224), (96, 3, 4, 4)), ((1, 1, 64, 64), (32, 1, 4, 4)),
                     ((2, 1, 64, 64), (32, 1, 5, 5)), ((1, 96, 56, 56), (192, 96, 2, 2))]:
        ex = fc.explain(lhs, rhs, rhs[2:], "VALID")
        assert ex.path == "fastconv-cuda", str(ex)


@pytest.mark.parametrize("k", [7, 8, 16])
def test_single_channel_patchify_on_the_generic_instance_runs_the_gemm(h100, k):
    """C = 1 patchify layers of >= 49 taps: the strided kernel's generic instance measured
    2.1-3.8x the GEMM's time, so the plan is direct and the GEMM runs (windows inside the map);
    with a window in the padding, no GEMM: lax."""
    from jax_fastconv.plan_single_channel import PATCH_GEMM_MIN_TAPS
    assert k * k >= PATCH_GEMM_MIN_TAPS
    ex = fc.explain((2, 1, 8 * k, 8 * k), (64, 1, k, k), (k, k), "VALID")
    assert ex.plan.method == "direct" and ex.path == "gemm", str(ex)
    assert "generic instance" in ex.reason
    ex = fc.explain((2, 1, 8 * k + 1, 8 * k), (64, 1, k, k), (k, k), "SAME")
    assert ex.plan.method == "single_channel" and ex.path == "fastconv-cuda", str(ex)


def test_force_direct_still_forces_the_direct_kernel(h100, monkeypatch):
    monkeypatch.setenv(FORCE_DIRECT_ENV, "1")
    ex = VIT[0].explain()
    assert ex.path == "fastconv-cuda" and ex.plan.method == "direct"


def test_uncovered_non_patchify_still_falls_back_to_lax(h100):
    ex = fc.explain((1, 3, 224, 224), (768, 3, 16, 16), (8, 8), "VALID")   # overlapping windows
    assert ex.path == "lax" and FORCE_DIRECT_ENV in ex.reason


def test_patchify_bench_set_runs_what_its_description_says(h100):
    """benchmarks/layers.json 'patchify': the ViT stems and the C = 1 patch embeddings run the
    GEMM, the layers with kernels (ConvNeXt's stem and downsampling, 2x2/2, C = 1 4x4/4) run
    the kernel when nothing is timed (the autotuner off, as here)."""
    from jax_fastconv import bench
    sets = bench.load_sets()
    paths = {}
    for case in bench.expand_set(sets, "patchify", layouts=("NHWC", "NCHW")):
        spec = case.spec()
        ex = fc.explain(spec.lhs_shape, spec.rhs_shape, case.stride, case.padding,
                        dimension_numbers=spec.layouts)
        paths.setdefault(case.name, set()).add(ex.path)
    gemm = {"vit-b16-patch16/16", "vit-l14-patch14/14", "vit-b32-patch32/32",
            "gray-patch16/16", "mnist-patch7/7"}
    assert paths == {n: {"gemm"} if n in gemm else {"fastconv-cuda"} for n in paths}
    assert len(paths) == 12
