"""Lowering: the custom call targets per platform (cuda lowered on this CPU-only machine),
and the static FFI attributes carry exactly the spec and the plan."""
from __future__ import annotations

import re

import numpy as np
import pytest
import jax
import jax.numpy as jnp

import jax_fastconv as fc
from _helpers import (CPU_TARGET, CUDA_TARGET, ConvConfig, count_custom_calls, lowered_text,
                      pretend_cuda, random_configs)

CONFIGS = [
    ConvConfig(2, 3, 4, 9, 7, 3, 3, (1, 1), "SAME", "NCHW", 1),
    ConvConfig(2, 3, 4, 9, 7, 3, 2, (2, 1), "SAME", "NHWC", 2),
    ConvConfig(1, 1, 5, 8, 8, 3, 3, (1, 1), "VALID", "NCHW", 3),
    ConvConfig(1, 2, 3, 8, 7, 3, 2, (2, 2), ((-1, 2), (0, -1)), "NHWC-OIHW-NCHW", 4),
    ConvConfig(2, 3, 4, 6, 6, 3, 3, (1, 1), "SAME_LOWER", "dnobj-NHWC", 5),
]
IDS = [c.id for c in CONFIGS]
ATTRS = ("dims", "conv", "lhs_strides", "rhs_strides", "out_strides", "plan")


def _fn(cfg):
    kw = cfg.kwargs()
    return lambda a, b: fc.conv_general_dilated(a, b, **kw)


def _attr(text: str, name: str) -> list[int]:
    """Integer array attribute `name` of the (single) custom call: dense<[..]> or a splat."""
    m = re.search(r"\b" + name + r" = dense<(\[[^\]]*\]|-?\d+)> : tensor<(\d+)xi64>", text)
    assert m, f"attribute {name} not found in the lowered text"
    body, n = m.group(1), int(m.group(2))
    if body.startswith("["):
        vals = [int(v) for v in body.strip("[]").split(",") if v.strip()]
    else:
        vals = [int(body)] * n
    assert len(vals) == n
    return vals


def _row_major(shape):
    return [int(np.prod(shape[i + 1:])) for i in range(len(shape))]


def _expected_attrs(cfg):
    """The attributes computed independently of the package from the config."""
    ex = cfg.explain()
    lhs_s, rhs_s, out_s = ex.spec.layouts
    lhs_shape, rhs_shape = cfg.shapes()
    out_shape = cfg.out_shape()
    strides = lambda shape, spec, letters: [_row_major(shape)[spec.index(ch)] for ch in letters]
    oh, ow = out_shape[out_s.index("H")], out_shape[out_s.index("W")]
    if isinstance(cfg.padding, str):
        pads = ex.spec.padding   # SAME/SAME_LOWER: lax's padtype_to_pads, checked in test_spec_padding
    else:
        pads = cfg.padding
    return dict(
        dims=[cfg.n, cfg.c, cfg.h, cfg.w, cfg.m, cfg.kh, cfg.kw, oh, ow],
        conv=[cfg.strides[0], cfg.strides[1], pads[0][0], pads[1][0]],
        lhs_strides=strides(lhs_shape, lhs_s, "NCHW"),
        rhs_strides=strides(rhs_shape, rhs_s, "OIHW"),
        out_strides=strides(out_shape, out_s, "NCHW"),
        plan=[int(v) for v in ex.plan.kernel_attrs],
    )


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_cuda_lowering_on_cpu_machine(cfg):
    x, w = cfg.arrays()
    text = lowered_text(_fn(cfg), x, w, platforms=("cuda",))
    assert count_custom_calls(text, CUDA_TARGET) == 1
    assert CPU_TARGET not in text
    for name in ATTRS:
        assert re.search(r"\b" + name + r" = ", text), f"attribute {name} missing"
    assert "stablehlo.convolution" not in text


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
@pytest.mark.parametrize("platform", ["cpu", "cuda"])
def test_attribute_values(cfg, platform):
    x, w = cfg.arrays()
    text = lowered_text(_fn(cfg), x, w, platforms=(platform,))
    expected = _expected_attrs(cfg)
    for name, vals in expected.items():
        assert _attr(text, name) == vals, f"{name}: {_attr(text, name)} != {vals}"
    assert len(expected["plan"]) == 8


@pytest.mark.parametrize("cfg", random_configs(12, seed=4242), ids=lambda c: c.id)
def test_attribute_values_random(cfg):
    x, w = cfg.arrays()
    text = lowered_text(_fn(cfg), x, w)
    for name, vals in _expected_attrs(cfg).items():
        assert _attr(text, name) == vals, name


def test_spec_padding_matches_lax_padtype():
    from jax import lax
    for pad in ("SAME", "SAME_LOWER", "VALID"):
        for (h, k, s) in [(7, 3, 1), (7, 4, 2), (8, 3, 2), (5, 5, 1), (4, 5, 1), (1, 1, 2)]:
            if pad == "VALID" and k > h:
                continue
            ex = fc.explain((1, 1, h, h), (1, 1, k, k), (s, s), pad)
            assert ex.spec.padding == tuple(
                tuple(int(p) for p in pr) for pr in lax.padtype_to_pads((h, h), (k, k), (s, s), pad))


def test_cpu_lowering_has_cpu_target_only():
    cfg = CONFIGS[0]
    x, w = cfg.arrays()
    text = lowered_text(_fn(cfg), x, w)
    assert count_custom_calls(text, CPU_TARGET) == 1
    assert CUDA_TARGET not in text


def test_multi_platform_lowering():
    """Lowered for both platforms at once: each platform's branch holds its own target."""
    cfg = CONFIGS[1]
    x, w = cfg.arrays()
    text = lowered_text(_fn(cfg), x, w, platforms=("cpu", "cuda"))
    assert count_custom_calls(text, CPU_TARGET) == 1
    assert count_custom_calls(text, CUDA_TARGET) == 1


@pytest.mark.parametrize("cfg", CONFIGS[:2], ids=IDS[:2])
def test_cuda_lowering_under_vmap_and_grad(cfg):
    x, w = cfg.arrays()
    f = _fn(cfg)
    xb = jnp.stack([x, x + 1.0, x * 2.0])
    text = lowered_text(jax.vmap(f, in_axes=(0, None)), xb, w, platforms=("cuda",))
    assert count_custom_calls(text, CUDA_TARGET) == 1
    d = _attr(text, "dims")
    assert d[0] == 3 * cfg.n            # vmap folded into N
    text = lowered_text(jax.vmap(f, in_axes=(None, 0)), x, jnp.stack([w, -w]), platforms=("cuda",))
    assert count_custom_calls(text, CUDA_TARGET) == 1
    assert _attr(text, "dims")[4] == 2 * cfg.m   # vmap folded into M
    loss = lambda a, b: jnp.sum(f(a, b) ** 2)
    text = lowered_text(jax.grad(loss, argnums=(0, 1)), x, w, platforms=("cuda",))
    assert count_custom_calls(text, CUDA_TARGET) >= 1


def test_fallback_lowering_has_no_custom_call():
    x = jnp.ones((1, 2, 6, 6), jnp.float32)
    w = jnp.ones((3, 2, 3, 3), jnp.float32)
    f = lambda a, b: fc.conv_general_dilated(a, b, (1, 1), "SAME", rhs_dilation=(2, 2))
    for platforms in (None, ("cuda",)):
        text = lowered_text(f, x, w, platforms=platforms)
        assert CPU_TARGET not in text and CUDA_TARGET not in text
        assert "stablehlo.convolution" in text


def test_jaxpr_shows_the_primitive():
    cfg = CONFIGS[0]
    x, w = cfg.arrays()
    jaxpr = jax.make_jaxpr(_fn(cfg))(x, w)
    names = [eqn.primitive.name for eqn in jaxpr.jaxpr.eqns]
    assert names == ["fastconv_conv2d"], names


@pytest.mark.parametrize("graphs,target", [(None, "fastconv_conv2d_cuda_graph"),
                                           ("1", "fastconv_conv2d_cuda_graph"),
                                           ("0", "fastconv_conv2d_cuda"),
                                           ("false", "fastconv_conv2d_cuda")])
def test_cuda_graph_registration_is_the_default(monkeypatch, graphs, target):
    """The command-buffer compatible registration is the default; JAX_FASTCONV_CUDA_GRAPHS=0
    opts out."""
    if graphs is None:
        monkeypatch.delenv("JAX_FASTCONV_CUDA_GRAPHS", raising=False)
    else:
        monkeypatch.setenv("JAX_FASTCONV_CUDA_GRAPHS", graphs)
    x = jnp.ones((1, 2, 8, 8), jnp.float32)
    w = jnp.ones((3, 2, 3, 3), jnp.float32)
    f = lambda a, b: fc.conv_general_dilated(a, b, (1, 1), "SAME")
    text = jax.jit(f).trace(x, w).lower(lowering_platforms=("cuda",)).as_text()
    assert re.findall(r"custom_call @(\w+)", text) == [target]


@pytest.mark.parametrize("shapes,dn,ws", [
    # OIHW filters on the H200: staged where the copy is small beside the layer (planner tests)
    (((1, 64, 224, 224), (64, 64, 3, 3)), ("NCHW", "OIHW", "NCHW"), 64 * 64 * 9),
    (((1, 14, 14, 512), (512, 512, 3, 3)), ("NHWC", "OIHW", "NHWC"), 512 * 512 * 9),
    # ... else read in place (the OIHW order) with NCHW input: the placeholder
    (((1, 512, 14, 14), (512, 512, 3, 3)), ("NCHW", "OIHW", "NCHW"), 4),
    # HWIO filters: nothing staged, the 4-float placeholder
    (((1, 14, 14, 512), (3, 3, 512, 512)), ("NHWC", "HWIO", "NHWC"), 4),
])
def test_cuda_lowering_carries_the_planned_workspace(monkeypatch, shapes, dn, ws):
    """The CUDA custom call has a second (workspace) result sized from the plan's filter
    staging (planner.workspace_elems); the function returns only the convolution."""
    pretend_cuda(monkeypatch, "h200")
    x = jnp.ones(shapes[0], jnp.float32)
    w = jnp.ones(shapes[1], jnp.float32)
    f = lambda a, b: fc.conv_general_dilated(a, b, (1, 1), "VALID", dimension_numbers=dn)
    text = jax.jit(f).trace(x, w).lower(lowering_platforms=("cuda",)).as_text()
    assert count_custom_calls(text, CUDA_TARGET) == 1
    call = next(line for line in text.splitlines() if CUDA_TARGET in line)
    out = jax.eval_shape(f, x, w).shape
    y_t = "tensor<" + "x".join(map(str, out)) + "xf32>"
    assert re.search(r"-> \(" + re.escape(y_t) + r", tensor<" + str(ws) + r"xf32>\)", call), call


@pytest.mark.parametrize("dn,C,HW,filters", [(("NCHW", "OIHW", "NCHW"), 64, 224, "staged"),
                                             (("NCHW", "OIHW", "NCHW"), 512, 14, "in place"),
                                             (("NHWC", "HWIO", "NHWC"), 512, 14, "HWIO")])
def test_explain_names_the_filter_staging(monkeypatch, dn, C, HW, filters):
    """explain() says when the CUDA call copies OIHW filters to HWIO first, or reads them in
    place in their own reduction order (H200 plan)."""
    pretend_cuda(monkeypatch, "h200")
    lhs = (1, C, HW, HW) if dn[0] == "NCHW" else (1, HW, HW, C)
    rhs = (C, C, 3, 3) if dn[1] == "OIHW" else (3, 3, C, C)
    e = fc.explain(lhs, rhs, (1, 1), "VALID", dimension_numbers=dn)
    assert e.plan.method == "multi_channel", str(e)
    assert ("copied to HWIO first (" in str(e)) == (filters == "staged")  # the reason, not the legend
    assert ("read the OIHW filters in place" in str(e)) == (filters == "in place")
    assert e.plan.kernel_attrs[7] & 2 == (2 if filters == "staged" else 0)  # bit 4: the tensor cores
    assert e.plan.kernel_attrs[7] & 32 == (32 if filters == "in place" else 0)
