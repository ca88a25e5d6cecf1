"""Forward correctness on the CPU against lax HIGHEST, fallbacks to lax, and explain()."""
from __future__ import annotations

import numpy as np
import pytest
import jax
import jax.numpy as jnp
from jax import lax

import jax_fastconv as fc
from _helpers import (CPU_TARGET, EDGE_CONFIGS, HIGHEST, ConvConfig, assert_close,
                      count_custom_calls, jit_checked, lowered_text, random_configs, randn,
                      ref_conv, rel_err)

# >= 200 seeded random configurations, in chunks (each config is its own test id, so a
# failure names its shapes, stride, padding and layout).
RANDOM_CONFIGS = (random_configs(70, seed=0) + random_configs(70, seed=1000)
                  + random_configs(70, seed=2000))


def _check_config(cfg, *, jit=True):
    ex = cfg.explain()
    assert ex.path == "fastconv-cpu", f"{cfg.id}: expected the fast path, got {ex.path}: {ex.reason}"
    x, w = cfg.arrays()
    kw = cfg.kwargs()
    ref = ref_conv(x, w, **kw)
    f = lambda a, b: fc.conv_general_dilated(a, b, **kw)
    if jit:
        out, _ = jit_checked(f, x, w, expect_calls=1)
    else:
        out = f(x, w)
    assert out.dtype == ref.dtype == jnp.float32
    assert out.shape == ref.shape == tuple(ex.spec.out_shape)
    assert_close(out, ref, what=cfg.id)


def test_random_configs_count_and_coverage():
    assert len(RANDOM_CONFIGS) >= 200
    assert len({c.id for c in RANDOM_CONFIGS}) == len(RANDOM_CONFIGS)
    pads = [c.padding for c in RANDOM_CONFIGS]
    for kind in ("SAME", "SAME_LOWER", "VALID"):
        assert kind in pads
    assert any(not isinstance(p, str) and min(min(q) for q in p) < 0 for p in pads)
    assert any(c.strides != (1, 1) for c in RANDOM_CONFIGS)
    assert any(c.strides == (1, 1) for c in RANDOM_CONFIGS)
    assert any(c.kh != c.kw for c in RANDOM_CONFIGS)
    assert any(c.kh == c.kw == 1 for c in RANDOM_CONFIGS)
    assert {c.layout for c in RANDOM_CONFIGS} >= {"NCHW", "NHWC", "default", "dnobj-NHWC"}


@pytest.mark.parametrize("cfg", RANDOM_CONFIGS, ids=lambda c: c.id)
def test_random_vs_lax(cfg):
    _check_config(cfg)


@pytest.mark.parametrize("cfg", EDGE_CONFIGS, ids=lambda c: c.id)
def test_edge_vs_lax_jit(cfg):
    _check_config(cfg)


@pytest.mark.parametrize("cfg", EDGE_CONFIGS[:6], ids=lambda c: c.id)
def test_edge_vs_lax_eager(cfg):
    """Eager (un-jitted) calls go through the primitive's impl."""
    _check_config(cfg, jit=False)


# Over the CPU handler's 2^20 multiply-adds: its output rows spread over XLA's thread pool (the
# random configurations above stay under it). Contiguous rows (NCHW, stride 1) and gathered
# ones (NHWC, stride 2, permutations), negative padding, one output row per image.
THREADED = [
    ConvConfig(2, 16, 16, 32, 32, 3, 3, (1, 1), "SAME", "NCHW", 301),
    ConvConfig(2, 16, 24, 33, 31, 3, 5, (2, 1), "SAME", "NHWC", 302),
    ConvConfig(3, 8, 12, 40, 37, 5, 3, (2, 2), ((-1, 2), (3, -2)), "HWCN-OHWI-CNHW", 303),
    ConvConfig(1, 64, 64, 20, 20, 1, 1, (1, 1), "VALID", "NCHW-HWIO-NHWC", 304),
    ConvConfig(4, 32, 8, 3, 200, 3, 3, (1, 1), "VALID", "CHWN-HWIO-NHWC", 305),
]


@pytest.mark.parametrize("cfg", THREADED, ids=lambda c: c.id)
def test_threaded_rows_vs_lax_and_same_bits(cfg):
    out_elems = int(np.prod(cfg.out_shape()))
    assert out_elems * cfg.c * cfg.kh * cfg.kw >= 1 << 20   # the threaded path
    _check_config(cfg)
    x, w = cfg.arrays()
    f = jax.jit(lambda a, b: fc.conv_general_dilated(a, b, **cfg.kwargs()))
    first = np.asarray(f(x, w))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(f(x, w)), first)


def test_concurrent_threaded_calls_in_one_jit():
    """Independent threaded convolutions in one jitted call (XLA may run them at once, each
    waiting on the same pool): all finish, each with lax's answer."""
    cfg = THREADED[0]
    kw = cfg.kwargs()
    xs = [cfg.arrays()[0] + i for i in range(4)]
    w = cfg.arrays()[1]
    f = jax.jit(lambda *a: [fc.conv_general_dilated(x, w, **kw) for x in a])
    for out, x in zip(f(*xs), xs):
        assert_close(out, ref_conv(x, w, **kw))


def test_dimension_numbers_object_equals_strings():
    """A ConvDimensionNumbers object (as Flax passes it) and its strings give one answer."""
    rng = np.random.default_rng(5)
    x, w = randn(rng, (2, 7, 6, 3)), randn(rng, (3, 2, 3, 4))
    dn_s = ("NHWC", "HWIO", "NHWC")
    dn_o = lax.conv_dimension_numbers(x.shape, w.shape, dn_s)
    assert isinstance(dn_o, lax.ConvDimensionNumbers)
    a = jax.jit(lambda a, b: fc.conv_general_dilated(a, b, (2, 1), "SAME", dimension_numbers=dn_s))(x, w)
    b = jax.jit(lambda a, b: fc.conv_general_dilated(a, b, (2, 1), "SAME", dimension_numbers=dn_o))(x, w)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert_close(a, ref_conv(x, w, (2, 1), "SAME", dimension_numbers=dn_s))
    assert fc.explain(x.shape, w.shape, (2, 1), "SAME", dimension_numbers=dn_o).path == "fastconv-cpu"


def test_positional_and_keyword_arguments_and_precision():
    """Same signature as lax: positional/keyword arguments, precision and
    preferred_element_type=float32 keep the fast path."""
    rng = np.random.default_rng(6)
    x, w = randn(rng, (2, 3, 9, 8)), randn(rng, (4, 3, 3, 3))
    ref = ref_conv(x, w, (1, 2), ((1, 0), (2, 1)))
    calls = [
        lambda a, b: fc.conv_general_dilated(a, b, (1, 2), ((1, 0), (2, 1))),
        lambda a, b: fc.conv_general_dilated(a, b, (1, 2), ((1, 0), (2, 1)), None, None, None, 1,
                                             1, HIGHEST, jnp.float32),
        lambda a, b: fc.conv_general_dilated(lhs=a, rhs=b, window_strides=[1, 2],
                                             padding=[[1, 0], [2, 1]], precision="highest",
                                             preferred_element_type=np.float32),
        lambda a, b: fc.conv_general_dilated(a, b, (1, 2), ((1, 0), (2, 1)), lhs_dilation=(1, 1),
                                             rhs_dilation=(1, 1), precision=(HIGHEST, HIGHEST)),
    ]
    for f in calls:
        out, _ = jit_checked(f, x, w, expect_calls=1)
        assert_close(out, ref)


def test_numpy_inputs():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2, 3)).astype(np.float32)
    out = fc.conv_general_dilated(x, w, (1, 1), "SAME")
    assert isinstance(out, jax.Array)
    assert_close(out, ref_conv(x, w, (1, 1), "SAME"))
    assert count_custom_calls(lowered_text(
        lambda a, b: fc.conv_general_dilated(a, b, (1, 1), "SAME"), x, w), CPU_TARGET) == 1


def test_repeated_calls_are_deterministic():
    rng = np.random.default_rng(8)
    x, w = randn(rng, (2, 12, 12, 8)), randn(rng, (5, 5, 8, 8))
    f = jax.jit(lambda a, b: fc.conv_general_dilated(a, b, (1, 1), "SAME",
                                                     dimension_numbers=("NHWC", "HWIO", "NHWC")))
    a, b = np.asarray(f(x, w)), np.asarray(f(x, w))
    np.testing.assert_array_equal(a, b)


# -- fallbacks: lax's answer, explain() says "lax" and why ---------------------------------------


def _fallback_cases():
    r = np.random.default_rng(11)
    nchw = ("NCHW", "OIHW", "NCHW")
    x4, w4 = randn(r, (2, 4, 7, 6)), randn(r, (4, 4, 3, 2))
    cases = [
        ("lhs_dilation", x4, w4, dict(window_strides=(1, 1), padding=((1, 1), (0, 1)), lhs_dilation=(2, 1)),
         "dilation"),
        ("rhs_dilation", x4, w4, dict(window_strides=(1, 1), padding="VALID", rhs_dilation=(1, 2)),
         "dilation"),
        ("both_dilations", x4, w4, dict(window_strides=(2, 1), padding=((1, 1), (0, 2)),
                                        lhs_dilation=(2, 2), rhs_dilation=(2, 1)), "dilation"),
        ("feature_group_count2", x4, randn(r, (4, 2, 3, 3)),
         dict(window_strides=(1, 1), padding="SAME", feature_group_count=2), "group"),
        ("batch_group_count2", x4, randn(r, (4, 4, 3, 3)),
         dict(window_strides=(1, 1), padding="SAME", batch_group_count=2), "group"),
        ("float16", x4.astype(jnp.float16), w4.astype(jnp.float16),
         dict(window_strides=(1, 1), padding="SAME"), "float"),
        ("bfloat16", x4.astype(jnp.bfloat16), w4.astype(jnp.bfloat16),
         dict(window_strides=(2, 1), padding="VALID", dimension_numbers=nchw), "float"),
        ("float16_preferred_float32", x4.astype(jnp.float16), w4.astype(jnp.float16),
         dict(window_strides=(1, 1), padding="SAME", preferred_element_type=jnp.float32), "float"),
        ("conv1d", randn(r, (2, 3, 9)), randn(r, (4, 3, 3)),
         dict(window_strides=(2,), padding="SAME"), "2-D"),
        ("conv1d_nwc", randn(r, (2, 9, 3)), randn(r, (3, 3, 4)),
         dict(window_strides=(1,), padding=((1, 0),), dimension_numbers=("NWC", "WIO", "NWC")),
         "2-D"),
        ("conv3d", randn(r, (1, 2, 5, 4, 6)), randn(r, (3, 2, 2, 3, 2)),
         dict(window_strides=(1, 2, 1), padding="SAME"), "2-D"),
        ("conv3d_ndhwc", randn(r, (1, 5, 4, 6, 2)), randn(r, (2, 3, 2, 2, 3)),
         dict(window_strides=(1, 1, 1), padding="VALID",
              dimension_numbers=("NDHWC", "DHWIO", "NDHWC")), "2-D"),
        ("zero_batch", randn(r, (0, 4, 7, 6)), w4, dict(window_strides=(1, 1), padding="SAME"),
         "zero"),
    ]
    return cases


FALLBACKS = _fallback_cases()


@pytest.mark.parametrize("name,x,w,kw,keyword", FALLBACKS, ids=[c[0] for c in FALLBACKS])
def test_fallback_matches_lax(name, x, w, kw, keyword):
    ex = fc.explain(x, w, **kw)
    assert ex.path == "lax", f"{name}: expected the lax fallback, got {ex.path}"
    assert ex.reason and keyword.lower() in ex.reason.lower(), ex.reason
    assert ex.plan is None
    # explain() with bare shapes agrees where the dtype is float32 (shapes assume float32)
    if x.dtype == jnp.float32:
        assert fc.explain(x.shape, w.shape, **kw).path == "lax"
    ref = lax.conv_general_dilated(x, w, precision=HIGHEST, **kw)
    f = lambda a, b: fc.conv_general_dilated(a, b, precision=HIGHEST, **kw)
    out, text = jit_checked(f, x, w, expect_fast=False)
    assert "convolution" in text  # lax's own convolution op
    assert out.dtype == ref.dtype and out.shape == ref.shape
    np.testing.assert_array_equal(np.asarray(out.astype(jnp.float32)),
                                  np.asarray(ref.astype(jnp.float32)))
    # eager too
    eager = fc.conv_general_dilated(x, w, precision=HIGHEST, **kw)
    np.testing.assert_array_equal(np.asarray(eager.astype(jnp.float32)),
                                  np.asarray(ref.astype(jnp.float32)))


# -- explain() -----------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("as_shapes", [True, False], ids=["shapes", "arrays"])
def test_explain_covered(layout, as_shapes):
    if layout == "NCHW":
        xs, ws, dn = (2, 3, 9, 7), (4, 3, 3, 3), ("NCHW", "OIHW", "NCHW")
    else:
        xs, ws, dn = (2, 9, 7, 3), (3, 3, 3, 4), ("NHWC", "HWIO", "NHWC")
    args = (xs, ws) if as_shapes else (jnp.ones(xs, jnp.float32), jnp.ones(ws, jnp.float32))
    ex = fc.explain(*args, (2, 1), "SAME", dimension_numbers=dn)
    assert isinstance(ex, fc.Explanation)
    assert ex.path == "fastconv-cpu"
    assert ex.reason
    assert ex.plan is not None
    d = ex.spec.dims
    assert (d["N"], d["C"], d["H"], d["W"], d["M"], d["KH"], d["KW"]) == (2, 3, 9, 7, 4, 3, 3)
    assert (d["OH"], d["OW"]) == (5, 7)
    assert ex.spec.layouts == dn
    text = str(ex)
    assert "fastconv-cpu" in text
    assert ex.plan.describe() in text           # mentions the plan
    assert "method" in text.lower()
    # the spec's output shape is lax's
    ref_shape = jax.eval_shape(lambda a, b: lax.conv_general_dilated(a, b, (2, 1), "SAME",
                                                                    dimension_numbers=dn),
                               jax.ShapeDtypeStruct(xs, jnp.float32),
                               jax.ShapeDtypeStruct(ws, jnp.float32)).shape
    assert tuple(ex.spec.out_shape) == tuple(ref_shape)


def test_explain_accepts_shape_dtype_structs():
    x = jax.ShapeDtypeStruct((1, 2, 6, 6), jnp.float32)
    w = jax.ShapeDtypeStruct((3, 2, 3, 3), jnp.float32)
    assert fc.explain(x, w, (1, 1), "VALID").path == "fastconv-cpu"
    x16 = jax.ShapeDtypeStruct((1, 2, 6, 6), jnp.bfloat16)
    w16 = jax.ShapeDtypeStruct((3, 2, 3, 3), jnp.bfloat16)
    ex = fc.explain(x16, w16, (1, 1), "VALID")
    assert ex.path == "lax" and "bfloat16" in ex.reason


@pytest.mark.parametrize("cfg", RANDOM_CONFIGS[:20], ids=lambda c: c.id)
def test_explain_agrees_with_lowering(cfg):
    """explain() says fastconv-cpu exactly when the lowered HLO holds the custom call."""
    x, w = cfg.arrays()
    kw = cfg.kwargs()
    text = lowered_text(lambda a, b: fc.conv_general_dilated(a, b, **kw), x, w)
    assert (cfg.explain().path == "fastconv-cpu") == (count_custom_calls(text, CPU_TARGET) == 1)
    assert cfg.explain().path == "fastconv-cpu"


def test_plan_function():
    p = fc.plan((1, 3, 8, 8), (4, 3, 3, 3), (1, 1), "SAME")
    assert p is not None and hasattr(p, "method") and hasattr(p, "kernel_attrs")
    assert len(tuple(p.kernel_attrs)) == 8
