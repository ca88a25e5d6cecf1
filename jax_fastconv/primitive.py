"""The fastconv_conv2d primitive: abstract evaluation, lowering to the FFI targets,
batching (vmap folded into the kernel's batch or filter axis) and differentiation
(bilinear JVP; transposes through the public conv_general_dilated, so they take this
primitive again wherever the fast path covers them)."""
from __future__ import annotations

import os

import numpy as np
import jax
from jax import lax
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from . import _ffi
from .spec import ConvSpec, as_dimension_numbers

conv_p = Primitive("fastconv_conv2d")


def _impl(lhs, rhs, **params):
    # Eager calls run the primitive under jit (bind inside jit traces, it does not recurse).
    return jax.jit(lambda a, b: conv_p.bind(a, b, **params))(lhs, rhs)


conv_p.def_impl(_impl)


def _abstract_eval(lhs, rhs, *, spec: ConvSpec, plan, precision):
    del rhs, plan, precision
    return lhs.update(shape=spec.out_shape, weak_type=False)


conv_p.def_abstract_eval(_abstract_eval)


def ffi_attributes(spec: ConvSpec, plan) -> dict:
    """The static attributes the handlers decode (cuda/ffi_conv_attrs.h)."""
    d = spec.dims
    i64 = lambda v: np.asarray(v, dtype=np.int64)
    return dict(
        dims=i64([d["N"], d["C"], d["H"], d["W"], d["M"], d["KH"], d["KW"], d["OH"], d["OW"]]),
        conv=i64([*spec.window_strides, spec.padding[0][0], spec.padding[1][0]]),
        lhs_strides=i64(spec.lhs_strides),
        rhs_strides=i64(spec.rhs_strides),
        out_strides=i64(spec.out_strides),
        plan=i64(plan.kernel_attrs),
    )


def _target(platform: str) -> str:
    if platform == "cpu":
        return _ffi.CPU_TARGET
    # The command-buffer compatible registration unless JAX_FASTCONV_CUDA_GRAPHS=0: XLA may
    # capture the launch into its CUDA graphs (H200, jax 0.11.2: 1-2.5 us less per call).
    graphs = os.environ.get(_ffi.CUDA_GRAPHS_ENV, "1").strip().lower() not in ("0", "false", "no")
    return _ffi.CUDA_GRAPH_TARGET if graphs else _ffi.CUDA_TARGET


def _lowering(ctx, lhs, rhs, *, spec, plan, precision, platform):
    del precision
    attrs = ffi_attributes(spec, plan)
    if platform == "cpu":
        return jax.ffi.ffi_lowering(_target(platform))(ctx, lhs, rhs, **attrs)
    # CUDA: a second result is the kernel's workspace (the HWIO copy of the filters when the
    # plan stages them; 4 floats when unused); XLA allocates it as a temporary and we drop it.
    from .planner import workspace_elems
    (y_aval,) = ctx.avals_out
    ws_aval = y_aval.update(shape=(max(4, workspace_elems(spec, plan)),))
    outs = jax.ffi.ffi_lowering(_target(platform))(
        ctx.replace(avals_out=[y_aval, ws_aval]), lhs, rhs, **attrs)
    return outs[:1]


for _platform in ("cpu", "cuda"):
    mlir.register_lowering(
        conv_p, lambda ctx, *a, _p=_platform, **kw: _lowering(ctx, *a, platform=_p, **kw),
        platform=_platform)


# -- batching -------------------------------------------------------------------------------

def _fold(x, axis, into):
    """Move vmapped `axis` next to (before) dimension `into` of the unbatched array and merge."""
    x = jax.numpy.moveaxis(x, axis, into)
    shape = list(x.shape)
    return x.reshape(shape[:into] + [shape[into] * shape[into + 1]] + shape[into + 2:])


def _split(y, at, batch):
    shape = list(y.shape)
    return y.reshape(shape[:at] + [batch, shape[at] // batch] + shape[at + 1:])


def _lax_kwargs(spec: ConvSpec, precision) -> dict:
    return dict(window_strides=spec.window_strides, padding=spec.padding,
                dimension_numbers=as_dimension_numbers(spec), precision=precision)


def _batch_rule(args, dims, *, spec: ConvSpec, plan, precision):
    from .api import conv_general_dilated
    lhs, rhs = args
    bl, br = dims
    kwargs = _lax_kwargs(spec, precision)
    if br is None:  # batched inputs, shared filters: fold vmap into the batch N
        b = lhs.shape[bl]
        out = conv_general_dilated(_fold(lhs, bl, spec.lhs_spec[0]), rhs, **kwargs)
        return _split(out, spec.out_spec[0], b), spec.out_spec[0]
    if bl is None:  # per-example filters, shared input: fold vmap into the filters M
        b = rhs.shape[br]
        out = conv_general_dilated(lhs, _fold(rhs, br, spec.rhs_spec[0]), **kwargs)
        return _split(out, spec.out_spec[1], b), spec.out_spec[1]
    # Both batched: a grouped convolution, which the kernels do not cover yet -> lax's own
    # batching rule (it folds vmap into feature groups). Documented in the README.
    out = jax.vmap(lambda a, w: lax.conv_general_dilated(a, w, **kwargs), in_axes=(bl, br))(lhs, rhs)
    return out, 0


batching.primitive_batchers[conv_p] = _batch_rule


# -- differentiation --------------------------------------------------------------------------

def _swap01(spec_tuple):
    return (spec_tuple[1], spec_tuple[0]) + tuple(spec_tuple[2:])


def _spatial_sizes(spec: ConvSpec):
    """Per spatial dimension: (input, window, output, stride, (pad_lo, pad_hi))."""
    return zip([spec.lhs_shape[d] for d in spec.lhs_spec[2:]],
               [spec.rhs_shape[d] for d in spec.rhs_spec[2:]],
               [spec.out_shape[d] for d in spec.out_spec[2:]],
               spec.window_strides, spec.padding)


def _transpose_lhs(g, lhs, rhs, *, spec: ConvSpec, plan, precision):
    """lax's rule: conv of the cotangent with the flipped, I/O-swapped kernel."""
    from .api import conv_general_dilated
    del plan
    if type(g) is ad.Zero:
        return ad.Zero(lhs.aval)
    pads = []
    for n_in, k, n_out, s, (lo, _) in _spatial_sizes(spec):
        before = k - 1 - lo
        after = n_in + k - 1 - ((n_out - 1) * s + 1) - before
        pads.append((before, after))
    dn = lax.ConvDimensionNumbers(spec.out_spec, _swap01(spec.rhs_spec), spec.lhs_spec)
    rev_rhs = lax.rev(rhs, tuple(spec.rhs_spec[2:]))
    return conv_general_dilated(g, rev_rhs, window_strides=(1,) * len(pads), padding=pads,
                                lhs_dilation=spec.window_strides, dimension_numbers=dn,
                                precision=precision)


def _transpose_rhs(g, lhs, rhs, *, spec: ConvSpec, plan, precision):
    """lax's rule: the filter gradient is a convolution of lhs with the cotangent."""
    from .api import conv_general_dilated
    del plan
    if type(g) is ad.Zero:
        return ad.Zero(rhs.aval)
    pads = []
    for n_in, k, n_out, s, (lo, _) in _spatial_sizes(spec):
        hi = ((n_out - 1) * s + 1) - n_in + (k - lo - 1)
        pads.append((lo, hi))
    dn = lax.ConvDimensionNumbers(_swap01(spec.lhs_spec), _swap01(spec.out_spec),
                                  _swap01(spec.rhs_spec))
    return conv_general_dilated(lhs, g, window_strides=(1,) * len(pads), padding=pads,
                                rhs_dilation=spec.window_strides, dimension_numbers=dn,
                                precision=precision)


ad.defbilinear(conv_p, _transpose_lhs, _transpose_rhs)
