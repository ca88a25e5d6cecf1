"""Flax linen and nnx Conv layers with conv_general_dilated=jax_fastconv.conv_general_dilated:
the same outputs and gradients as plain Flax at HIGHEST precision, on the fast path."""
from __future__ import annotations

import numpy as np
import pytest
import jax
import jax.numpy as jnp
from jax import lax

flax = pytest.importorskip("flax")
from flax import linen as nn  # noqa: E402
from flax import nnx  # noqa: E402

import jax_fastconv as fc  # noqa: E402
from _helpers import (CPU_TARGET, HIGHEST, assert_close, assert_trees_close,  # noqa: E402
                      count_custom_calls, pretend_cuda, randn)

# (in_features, out_features, kernel_size, strides, padding, input spatial, batch)
LAYERS = [
    (3, 4, (3, 3), 1, "SAME", (7, 6), 2),
    (3, 5, (3, 3), 2, "SAME", (9, 8), 2),       # stride 2
    (2, 4, (3, 2), (2, 1), "VALID", (8, 7), 1),
    (4, 3, (1, 1), 1, "SAME", (5, 5), 3),
    (2, 3, (3, 3), 1, ((1, 0), (2, 1)), (6, 7), 2),
    (2, 3, (3, 3), 1, "CIRCULAR", (6, 6), 2),   # Flax pads itself, then VALID
]
LIDS = [f"cin{a}-cout{b}-k{c[0]}x{c[1]}-s{d}-{e if isinstance(e, str) else 'explicit'}"
        for a, b, c, d, e, _, _ in LAYERS]

NORMAL = jax.nn.initializers.normal(1.0)


def _x(rng, spatial, cin, batch):
    return randn(rng, (batch, *spatial, cin))


def _loss(apply):
    return lambda params, x: jnp.sum(jnp.sin(apply(params, x)))


@pytest.mark.parametrize("cin,cout,k,s,pad,spatial,batch", LAYERS, ids=LIDS)
def test_linen_conv(cin, cout, k, s, pad, spatial, batch):
    rng = np.random.default_rng(cin * 100 + cout)
    x = _x(rng, spatial, cin, batch)
    common = dict(features=cout, kernel_size=k, strides=s, padding=pad, bias_init=NORMAL)
    ours = nn.Conv(**common, conv_general_dilated=fc.conv_general_dilated)
    plain = nn.Conv(**common, precision=HIGHEST)
    params = plain.init(jax.random.key(0), x)
    params_ours = ours.init(jax.random.key(0), x)
    assert_trees_close(params_ours, params, what="init")
    # the kernel is random, not zeros
    assert float(jnp.std(params["params"]["kernel"])) > 0

    out = jax.jit(ours.apply)(params, x)
    ref = plain.apply(params, x)
    assert_close(out, ref, what="linen forward")

    text = jax.jit(ours.apply).lower(params, x).as_text()
    assert count_custom_calls(text, CPU_TARGET) == 1

    g_ours = jax.jit(jax.grad(_loss(ours.apply), argnums=(0, 1)))(params, x)
    g_ref = jax.grad(_loss(plain.apply), argnums=(0, 1))(params, x)
    assert_trees_close(g_ours, g_ref, what="linen grad")


def test_linen_unbatched_input_and_vmap():
    rng = np.random.default_rng(3)
    xb = randn(rng, (3, 6, 6, 2))
    ours = nn.Conv(4, (3, 3), conv_general_dilated=fc.conv_general_dilated, bias_init=NORMAL)
    plain = nn.Conv(4, (3, 3), precision=HIGHEST, bias_init=NORMAL)
    params = plain.init(jax.random.key(1), xb)
    # a single example without a batch axis
    assert_close(ours.apply(params, xb[0]), plain.apply(params, xb[0]))
    # vmap over examples of unbatched applications
    f = jax.vmap(lambda x: ours.apply(params, x))
    text = jax.jit(f).lower(xb).as_text()
    assert count_custom_calls(text, CPU_TARGET) == 1
    assert_close(jax.jit(f)(xb), jax.vmap(lambda x: plain.apply(params, x))(xb))


@pytest.mark.parametrize("kw", [dict(kernel_size=(3,)), dict(kernel_size=(3, 3), kernel_dilation=2),
                                dict(kernel_size=(3, 3), feature_group_count=2)],
                         ids=["conv1d", "kernel_dilation", "groups"])
def test_linen_fallbacks(kw):
    rng = np.random.default_rng(4)
    x = randn(rng, (2, 9, 4)) if len(kw["kernel_size"]) == 1 else randn(rng, (2, 9, 8, 4))
    ours = nn.Conv(4, conv_general_dilated=fc.conv_general_dilated, precision=HIGHEST,
                   bias_init=NORMAL, **kw)
    plain = nn.Conv(4, precision=HIGHEST, bias_init=NORMAL, **kw)
    params = plain.init(jax.random.key(2), x)
    assert count_custom_calls(jax.jit(ours.apply).lower(params, x).as_text(), CPU_TARGET) == 0
    np.testing.assert_array_equal(np.asarray(jax.jit(ours.apply)(params, x)),
                                  np.asarray(jax.jit(plain.apply)(params, x)))


@pytest.mark.parametrize("cin,cout,k,s,pad,spatial,batch", LAYERS, ids=LIDS)
def test_nnx_conv(cin, cout, k, s, pad, spatial, batch):
    rng = np.random.default_rng(cin * 100 + cout + 1)
    x = _x(rng, spatial, cin, batch)
    common = dict(strides=s, padding=pad, bias_init=NORMAL)
    ours = nnx.Conv(cin, cout, k, conv_general_dilated=fc.conv_general_dilated,
                    rngs=nnx.Rngs(0), **common)
    plain = nnx.Conv(cin, cout, k, precision=HIGHEST, rngs=nnx.Rngs(0), **common)
    np.testing.assert_array_equal(np.asarray(ours.kernel[...]), np.asarray(plain.kernel[...]))

    out = ours(x)
    ref = plain(x)
    assert_close(out, ref, what="nnx forward (eager)")

    @nnx.jit
    def fwd(model, x):
        return model(x)

    assert_close(fwd(ours, x), ref, what="nnx forward (nnx.jit)")

    graphdef, state = nnx.split(ours)
    apply = lambda st, x: nnx.merge(graphdef, st)(x)
    text = jax.jit(apply).lower(state, x).as_text()
    assert count_custom_calls(text, CPU_TARGET) == 1

    loss = lambda model, x: jnp.sum(jnp.sin(model(x)))
    g_ours = nnx.jit(nnx.grad(loss))(ours, x)
    g_ref = nnx.grad(loss)(plain, x)
    assert_trees_close(nnx.state(g_ours), nnx.state(g_ref), what="nnx grad (params)")
    gx_ours = jax.jit(jax.grad(lambda x: loss(ours, x)))(x)
    gx_ref = jax.grad(lambda x: loss(plain, x))(x)
    assert_close(gx_ours, gx_ref, what="nnx grad (input)")


def test_nnx_train_step_matches():
    """A few SGD steps with the fast conv track plain Flax closely."""
    rng = np.random.default_rng(9)
    x = randn(rng, (2, 8, 8, 3))
    y = randn(rng, (2, 4, 4, 4))
    models = [nnx.Conv(3, 4, (3, 3), strides=2, conv_general_dilated=fc.conv_general_dilated,
                       rngs=nnx.Rngs(5)),
              nnx.Conv(3, 4, (3, 3), strides=2, precision=HIGHEST, rngs=nnx.Rngs(5))]

    @nnx.jit
    def step(model, x, y):
        loss = lambda m: jnp.mean((m(x) - y) ** 2)
        grads = nnx.grad(loss)(model)
        nnx.update(model, jax.tree.map(lambda p, g: p - 0.1 * g, nnx.state(model, nnx.Param),
                                       nnx.state(grads, nnx.Param)))
        return loss(model)

    losses = [[float(step(m, x, y)) for _ in range(3)] for m in models]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)
    assert losses[0][-1] < losses[0][0]
    assert_close(models[0].kernel[...], models[1].kernel[...], rtol=1e-5)


def _patchify_linen(rng, x_shape, features, k, seed):
    """A linen patchify nn.Conv (kernel = stride = k, VALID) through jax_fastconv and plain at
    HIGHEST, their params, an input, and the model lowered for CUDA here."""
    x = randn(rng, x_shape)
    common = dict(features=features, kernel_size=(k, k), strides=(k, k), padding="VALID",
                  bias_init=NORMAL)
    ours = nn.Conv(**common, conv_general_dilated=fc.conv_general_dilated)
    plain = nn.Conv(**common, precision=HIGHEST)
    params = plain.init(jax.random.key(seed), x)
    text = jax.jit(ours.apply).trace(params, x).lower(lowering_platforms=("cuda",)).as_text()
    return ours, plain, params, x, text


def _assert_flax_outputs_and_grads(rng, ours, plain, params, x):
    out = jax.jit(ours.apply)(params, x)
    assert_close(out, plain.apply(params, x), what="linen forward")
    t = randn(rng, out.shape)
    loss = lambda apply: (lambda p, x: jnp.sum(apply(p, x) * t))
    g_ours = jax.jit(jax.grad(loss(ours.apply), argnums=(0, 1)))(params, x)
    g_ref = jax.grad(loss(plain.apply), argnums=(0, 1))(params, x)
    assert_trees_close(g_ours, g_ref, what="linen grad")


def test_linen_vit_patch_embedding_runs_the_patch_gemm_on_the_gpu(monkeypatch):
    """A ViT patch embedding (nn.Conv, kernel = stride = 8, VALID, RGB) planned for an H100 and
    lowered here: the patch GEMM (a dot_general, no convolution, no custom call), with plain
    Flax's outputs and gradients at HIGHEST."""
    pretend_cuda(monkeypatch, "h100")
    rng = np.random.default_rng(11)
    ours, plain, params, x, text = _patchify_linen(rng, (2, 32, 40, 3), 24, 8, seed=4)
    assert "stablehlo.dot_general" in text and "stablehlo.convolution" not in text
    assert "custom_call" not in text
    _assert_flax_outputs_and_grads(rng, ours, plain, params, x)


@pytest.mark.parametrize("gemm_won", [True, False])
def test_linen_convnext_stem_follows_the_timed_choice(monkeypatch, gemm_won):
    """ConvNeXt's stem (nn.Conv 4x4/4, RGB) has a kernel on an H100; with the first trace's
    timing stood in for, the model lowers to the patch GEMM where it won (and then runs with
    plain Flax's outputs and gradients here) or to the kernel's custom call where it did not."""
    from jax_fastconv import autotune
    pretend_cuda(monkeypatch, "h100", autotune=True)
    monkeypatch.setattr(autotune, "_on_gpu", lambda: True)
    choice = autotune.Choice(not gemm_won, 9.0, None, 16, gemm_us=6.0 if gemm_won else 12.0)
    monkeypatch.setattr(autotune, "choose_gemm", lambda spec, plan: choice)
    rng = np.random.default_rng(12)
    ours, plain, params, x, text = _patchify_linen(rng, (2, 32, 24, 3), 16, 4, seed=5)
    assert "stablehlo.convolution" not in text
    assert ("custom_call" in text) != gemm_won and ("stablehlo.dot_general" in text) == gemm_won
    if gemm_won:
        _assert_flax_outputs_and_grads(rng, ours, plain, params, x)
