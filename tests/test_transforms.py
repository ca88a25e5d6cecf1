"""jit, vmap (folded into the kernel, never a loop) and differentiation (check_grads, grad,
jacfwd/jacrev, second order) against lax HIGHEST."""
from __future__ import annotations

import functools

import numpy as np
import pytest
import jax
import jax.numpy as jnp
from jax import lax
from jax.test_util import check_grads

import jax_fastconv as fc
from _helpers import (CPU_TARGET, ConvConfig, assert_close, assert_trees_close,
                      count_custom_calls, jit_checked, lowered_text, random_configs, randn,
                      ref_conv)

# Small configurations for the transformation tests: layouts, strides, paddings.
CONFIGS = [
    ConvConfig(2, 3, 4, 7, 6, 3, 3, (1, 1), "SAME", "NCHW", 1),
    ConvConfig(2, 3, 4, 7, 6, 3, 2, (2, 2), "SAME", "NHWC", 2),
    ConvConfig(1, 2, 3, 8, 7, 3, 3, (2, 1), ((-1, 2), (0, -1)), "NCHW", 3),
    ConvConfig(2, 1, 3, 6, 6, 1, 1, (1, 1), "VALID", "NHWC", 4),
    ConvConfig(2, 3, 2, 6, 5, 2, 3, (1, 2), ((1, 0), (2, 1)), "NHWC-OIHW-NCHW", 5),
    ConvConfig(1, 2, 3, 5, 6, 3, 3, (1, 1), "SAME_LOWER", "dnobj-NHWC", 6),
]
IDS = [c.id for c in CONFIGS]


def _fns(cfg):
    kw = cfg.kwargs()
    ours = lambda a, b: fc.conv_general_dilated(a, b, **kw)
    ref = lambda a, b: ref_conv(a, b, **kw)
    return ours, ref


def _batched(rng, x, axis, b=3):
    """A stack of b random arrays shaped like x, stacked along `axis`."""
    return jnp.stack([randn(rng, x.shape) for _ in range(b)], axis=axis)


# -- jit ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_jit(cfg):
    x, w = cfg.arrays()
    ours, ref = _fns(cfg)
    out, _ = jit_checked(ours, x, w, expect_calls=1)
    assert_close(out, ref(x, w))
    # jit of jit, and jit with the configuration closed over
    out2 = jax.jit(jax.jit(ours))(x, w)
    assert_close(out2, ref(x, w))


# -- vmap -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_vmap_lhs(cfg, axis):
    rng = np.random.default_rng(100 + cfg.seed)
    x, w = cfg.arrays()
    xb = _batched(rng, x, axis)
    ours, ref = _fns(cfg)
    f = jax.vmap(ours, in_axes=(axis, None))
    out, text = jit_checked(f, xb, w, expect_calls=1)      # folded into N: one call, no loop
    assert "stablehlo.while" not in text
    assert_close(out, jax.vmap(ref, in_axes=(axis, None))(xb, w))


@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_vmap_rhs(cfg, axis):
    rng = np.random.default_rng(200 + cfg.seed)
    x, w = cfg.arrays()
    wb = _batched(rng, w, axis)
    ours, ref = _fns(cfg)
    f = jax.vmap(ours, in_axes=(None, axis))
    out, text = jit_checked(f, x, wb, expect_calls=1)      # folded into M: one call, no loop
    assert "stablehlo.while" not in text
    assert_close(out, jax.vmap(ref, in_axes=(None, axis))(x, wb))


@pytest.mark.parametrize("in_axes", [(0, 0), (1, -1)])
@pytest.mark.parametrize("cfg", CONFIGS[:4], ids=IDS[:4])
def test_vmap_both(cfg, in_axes):
    rng = np.random.default_rng(300 + cfg.seed)
    x, w = cfg.arrays()
    xb, wb = _batched(rng, x, in_axes[0]), _batched(rng, w, in_axes[1])
    ours, ref = _fns(cfg)
    f = jax.vmap(ours, in_axes=in_axes)
    text = lowered_text(f, xb, wb)
    assert "stablehlo.while" not in text                   # never a loop
    assert_close(jax.jit(f)(xb, wb), jax.vmap(ref, in_axes=in_axes)(xb, wb))


@pytest.mark.parametrize("cfg", CONFIGS[:3], ids=IDS[:3])
def test_vmap_out_axes(cfg):
    rng = np.random.default_rng(400 + cfg.seed)
    x, w = cfg.arrays()
    xb = _batched(rng, x, 0)
    ours, ref = _fns(cfg)
    out, _ = jit_checked(jax.vmap(ours, in_axes=(0, None), out_axes=-1), xb, w, expect_calls=1)
    assert_close(out, jax.vmap(ref, in_axes=(0, None), out_axes=-1)(xb, w))


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_vmap_nested_lhs(cfg):
    rng = np.random.default_rng(500 + cfg.seed)
    x, w = cfg.arrays()
    xbb = jnp.stack([_batched(rng, x, 1, b=2) for _ in range(3)], axis=0)  # (3, ..., 2 at 1+1)
    ours, ref = _fns(cfg)
    f = jax.vmap(jax.vmap(ours, in_axes=(1, None)), in_axes=(0, None))
    g = jax.vmap(jax.vmap(ref, in_axes=(1, None)), in_axes=(0, None))
    out, text = jit_checked(f, xbb, w, expect_calls=1)
    assert_close(out, g(xbb, w))


@pytest.mark.parametrize("cfg", CONFIGS[:4], ids=IDS[:4])
def test_vmap_nested_rhs_outer_lhs_inner(cfg):
    """Outer vmap over filters, inner over inputs: folds into M and N, still one call."""
    rng = np.random.default_rng(600 + cfg.seed)
    x, w = cfg.arrays()
    xb, wb = _batched(rng, x, 0, b=2), _batched(rng, w, 0, b=3)
    ours, ref = _fns(cfg)
    f = jax.vmap(lambda xs, ww: jax.vmap(ours, in_axes=(0, None))(xs, ww), in_axes=(None, 0))
    g = jax.vmap(lambda xs, ww: jax.vmap(ref, in_axes=(0, None))(xs, ww), in_axes=(None, 0))
    out, _ = jit_checked(f, xb, wb, expect_calls=1)
    assert out.shape[:2] == (3, 2)
    assert_close(out, g(xb, wb))


def test_vmap_eager():
    cfg = CONFIGS[1]
    rng = np.random.default_rng(7)
    x, w = cfg.arrays()
    xb = _batched(rng, x, 0)
    ours, ref = _fns(cfg)
    assert_close(jax.vmap(ours, in_axes=(0, None))(xb, w), jax.vmap(ref, in_axes=(0, None))(xb, w))


# -- check_grads ----------------------------------------------------------------------------------

# Central differences in float32: eps=1e-2 keeps rounding (~1e-7 |f| / eps) far below the
# tolerance; the convolution is bilinear, so the truncation error is zero. The same settings
# are first checked to pass for lax on the same configuration, and shown to catch a 5% error.
CG = dict(eps=1e-2, atol=2e-3, rtol=2e-3)
GRAD_CONFIGS = [
    ConvConfig(1, 2, 3, 5, 5, 3, 3, (1, 1), "VALID", "NCHW", 11),
    ConvConfig(1, 2, 2, 6, 5, 3, 2, (2, 2), "SAME", "NCHW", 12),
    ConvConfig(2, 2, 3, 5, 6, 3, 3, (1, 1), "SAME", "NHWC", 13),
    ConvConfig(1, 3, 2, 7, 6, 2, 3, (2, 1), ((-1, 2), (1, 0)), "NHWC", 14),
]
GIDS = [c.id for c in GRAD_CONFIGS]


def _nonlinear(conv):
    """A nonlinear scalar-valued head, so that second derivatives are not trivially zero."""
    return lambda a, b: jnp.tanh(0.3 * conv(a, b))


@pytest.mark.parametrize("cfg", GRAD_CONFIGS, ids=GIDS)
def test_check_grads(cfg):
    x, w = cfg.arrays()
    ours, ref = _fns(cfg)
    check_grads(jax.jit(ref), (x, w), order=2, modes=("fwd", "rev"), **CG)   # the tolerances work
    check_grads(jax.jit(ours), (x, w), order=2, modes=("fwd", "rev"), **CG)
    check_grads(lambda a: ours(a, w), (x,), order=1, modes=("fwd", "rev"), **CG)
    check_grads(lambda b: ours(x, b), (w,), order=1, modes=("fwd", "rev"), **CG)


def test_check_grads_can_fail():
    """The settings above catch a gradient that is a few percent off."""
    cfg = GRAD_CONFIGS[0]
    x, w = cfg.arrays()
    ours, _ = _fns(cfg)

    @jax.custom_vjp
    def wrong(a, b):
        return ours(a, b)

    def fwd(a, b):
        return ours(a, b), (a, b)

    def bwd(res, g):
        a, b = res
        _, vjp = jax.vjp(ours, a, b)
        ga, gb = vjp(g)
        return 1.05 * ga, gb

    wrong.defvjp(fwd, bwd)
    with pytest.raises(AssertionError):
        check_grads(wrong, (x, w), order=1, modes=("rev",), **CG)


# -- grad / jacfwd / jacrev / second order against lax ------------------------------------------


def _loss(conv, g):
    return lambda a, b: jnp.sum(conv(a, b) * g)


@pytest.mark.parametrize("cfg", CONFIGS + GRAD_CONFIGS, ids=IDS + GIDS)
def test_grad_vs_lax(cfg):
    x, w = cfg.arrays()
    ours, ref = _fns(cfg)
    g = randn(np.random.default_rng(cfg.seed + 50), cfg.out_shape())
    go = jax.jit(jax.grad(_loss(ours, g), argnums=(0, 1)))
    gr = jax.grad(_loss(ref, g), argnums=(0, 1))
    assert_trees_close(go(x, w), gr(x, w), what="grad")
    if cfg.strides == (1, 1):
        # both transposes are stride-1 undilated convolutions: they take the fast path too
        text = lowered_text(jax.grad(_loss(ours, g), argnums=(0, 1)), x, w)
        assert count_custom_calls(text, CPU_TARGET) == 2, text
    # value_and_grad keeps the forward on the fast path
    text = lowered_text(jax.value_and_grad(_loss(ours, g), argnums=(0, 1)), x, w)
    assert count_custom_calls(text, CPU_TARGET) >= 1


@pytest.mark.parametrize("cfg", random_configs(24, seed=7000), ids=lambda c: c.id)
def test_grad_random_vs_lax(cfg):
    """Gradients on random configurations (negative padding, strides, layouts)."""
    x, w = cfg.arrays()
    ours, ref = _fns(cfg)
    g = randn(np.random.default_rng(cfg.seed + 50), cfg.out_shape())
    go = jax.jit(jax.grad(_loss(ours, g), argnums=(0, 1)))(x, w)
    gr = jax.grad(_loss(ref, g), argnums=(0, 1))(x, w)
    assert_trees_close(go, gr, what=cfg.id)


@pytest.mark.parametrize("cfg", GRAD_CONFIGS, ids=GIDS)
def test_jacfwd_jacrev_vs_lax(cfg):
    x, w = cfg.arrays()
    ours, ref = _fns(cfg)
    for jac in (jax.jacfwd, jax.jacrev):
        jo = jax.jit(jac(ours, argnums=(0, 1)))(x, w)
        jr = jac(ref, argnums=(0, 1))(x, w)
        assert_trees_close(jo, jr, what=jac.__name__)
    # jacfwd over lhs batches the tangents: one custom call, no loop
    text = lowered_text(jax.jacfwd(ours, argnums=0), x, w)
    assert count_custom_calls(text, CPU_TARGET) >= 1 and "stablehlo.while" not in text


@pytest.mark.parametrize("cfg", GRAD_CONFIGS, ids=GIDS)
def test_second_order_vs_lax(cfg):
    x, w = cfg.arrays()
    ours, ref = _fns(cfg)
    g = randn(np.random.default_rng(cfg.seed + 60), cfg.out_shape())

    def second(conv):
        s = lambda a, b: jnp.sum(_nonlinear(conv)(a, b) * g)
        gw = jax.grad(s, argnums=1)
        # grad of (a scalar function of) the gradient, w.r.t. both operands
        return jax.grad(lambda a, b: jnp.sum(gw(a, b) ** 2), argnums=(0, 1))

    assert_trees_close(jax.jit(second(ours))(x, w), second(ref)(x, w), what="grad-of-grad")
    h_ours = jax.jit(jax.hessian(lambda a: jnp.sum(_nonlinear(ours)(a, w) * g)))(x)
    h_ref = jax.hessian(lambda a: jnp.sum(_nonlinear(ref)(a, w) * g))(x)
    assert_close(h_ours, h_ref, what="hessian")


@pytest.mark.parametrize("cfg", CONFIGS[:3], ids=IDS[:3])
def test_per_example_grads(cfg):
    """vmap of grad (per-example weight gradients) and grad of vmap."""
    rng = np.random.default_rng(cfg.seed + 70)
    x, w = cfg.arrays()
    xb = _batched(rng, x, 0)
    ours, ref = _fns(cfg)
    per_ex = lambda conv: jax.vmap(jax.grad(lambda a, b: jnp.sum(jnp.sin(conv(a, b))), argnums=1),
                                   in_axes=(0, None))
    assert_close(jax.jit(per_ex(ours))(xb, w), per_ex(ref)(xb, w), what="vmap(grad)")
    gv = lambda conv: jax.grad(lambda a, b: jnp.sum(jnp.sin(jax.vmap(conv, (0, None))(a, b))),
                               argnums=(0, 1))
    assert_trees_close(jax.jit(gv(ours))(xb, w), gv(ref)(xb, w), what="grad(vmap)")
