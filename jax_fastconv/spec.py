"""Argument normalisation: lax.conv_general_dilated's arguments -> one frozen ConvSpec.

Everything downstream (planner, primitive, FFI attributes) reads the ConvSpec and never
re-derives layouts or padding. Validation mirrors what lax rejects, with messages that
name the offending argument.
"""
from __future__ import annotations

import dataclasses
import operator
import numpy as np
from jax import lax

# Logical axis order used everywhere inside the package: lhs (N, C, H, W),
# rhs (O, I, H, W) i.e. (M, C, KH, KW), out (N, M, OH, OW).


@dataclasses.dataclass(frozen=True)
class ConvSpec:
    """A 2-D convolution, fully normalised. Hashable: used as a static primitive parameter."""

    lhs_shape: tuple[int, ...]
    rhs_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    # ConvDimensionNumbers as plain tuples: for each array, the positions of its
    # (batch|out-feature, feature|in-feature, spatial...) axes.
    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]
    window_strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    feature_group_count: int
    batch_group_count: int
    dtype: str            # lhs dtype name
    rhs_dtype: str
    out_dtype: str        # preferred_element_type or the lhs dtype

    # -- logical sizes -------------------------------------------------------------
    @property
    def ndim_spatial(self) -> int:
        return len(self.lhs_shape) - 2

    def _logical(self, shape, spec):
        return tuple(shape[d] for d in spec)

    @property
    def lhs_logical(self):
        return self._logical(self.lhs_shape, self.lhs_spec)

    @property
    def rhs_logical(self):
        return self._logical(self.rhs_shape, self.rhs_spec)

    @property
    def out_logical(self):
        return self._logical(self.out_shape, self.out_spec)

    @property
    def dims(self) -> dict:
        """N, C, H, W, M, KH, KW, OH, OW for the 2-D case."""
        n, c, h, w = self.lhs_logical
        m, _, kh, kw = self.rhs_logical
        _, _, oh, ow = self.out_logical
        return dict(N=n, C=c, H=h, W=w, M=m, KH=kh, KW=kw, OH=oh, OW=ow)

    # -- memory layout -------------------------------------------------------------
    @staticmethod
    def _strides(shape, spec):
        """Element strides of the logical axes (row-major array of `shape`)."""
        row_major = np.cumprod((1,) + tuple(shape[::-1]))[:-1][::-1]
        return tuple(int(row_major[d]) for d in spec)

    @property
    def lhs_strides(self):
        return self._strides(self.lhs_shape, self.lhs_spec)

    @property
    def rhs_strides(self):
        return self._strides(self.rhs_shape, self.rhs_spec)

    @property
    def out_strides(self):
        return self._strides(self.out_shape, self.out_spec)

    @property
    def out_filters_in_fours(self) -> bool:
        """Whether the output's filters are its fastest axis and every one of its strides and M
        a multiple of 4: runs of 4 filters the kernels store as one float4 (in XLA's 16-byte
        aligned buffers)."""
        yn, yc, yh, yw = self.out_strides
        return yc == 1 and all(v % 4 == 0 for v in (self.dims["M"], yn, yh, yw))

    @staticmethod
    def _layout_name(spec, letters):
        order = [None] * len(spec)
        for letter, pos in zip(letters, spec):
            order[pos] = letter
        return "".join(order)

    @property
    def layouts(self) -> tuple[str, str, str]:
        """e.g. ('NHWC', 'HWIO', 'NHWC')."""
        return (self._layout_name(self.lhs_spec, "NCHW"),
                self._layout_name(self.rhs_spec, "OIHW"),
                self._layout_name(self.out_spec, "NCHW"))

    @property
    def flops(self) -> int:
        d = self.dims
        return 2 * d["N"] * d["M"] * d["OH"] * d["OW"] * d["C"] * d["KH"] * d["KW"]

    @property
    def min_bytes(self) -> int:
        """Each operand read once, the output written once (float32)."""
        return 4 * (int(np.prod(self.lhs_shape)) + int(np.prod(self.rhs_shape))
                    + int(np.prod(self.out_shape)))

    def describe(self) -> str:
        d = self.dims
        l, r, o = self.layouts
        pads = ",".join(f"({a},{b})" for a, b in self.padding)
        return (f"N={d['N']} C={d['C']} HxW={d['H']}x{d['W']} -> M={d['M']} "
                f"K={d['KH']}x{d['KW']} stride={self.window_strides} pad={pads} "
                f"out={d['OH']}x{d['OW']} layout={l}/{r}/{o} dtype={self.dtype}")


def _int_tuple(value, name: str, length: int, *, positive: bool) -> tuple[int, ...]:
    if value is None:
        return (1,) * length
    try:
        out = tuple(operator.index(v) for v in value)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of {length} integers, got {value!r}") from None
    if len(out) != length:
        raise ValueError(f"{name} must have length {length} (the number of spatial "
                         f"dimensions), got {len(out)}: {value!r}")
    if positive and any(v <= 0 for v in out):
        raise ValueError(f"{name} must be positive, got {value!r}")
    return out


def _dtype_name(x) -> str:
    return np.dtype(x).name


def normalize(lhs_shape, rhs_shape, window_strides, padding, lhs_dilation=None,
              rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
              batch_group_count=1, lhs_dtype="float32", rhs_dtype=None,
              preferred_element_type=None) -> ConvSpec:
    """Validate lax.conv_general_dilated's arguments (shapes instead of arrays)."""
    lhs_shape = tuple(operator.index(d) for d in lhs_shape)
    rhs_shape = tuple(operator.index(d) for d in rhs_shape)
    if len(lhs_shape) < 2:
        raise ValueError(f"lhs must have rank >= 2 (batch, feature, spatial...), got shape {lhs_shape}")
    if len(lhs_shape) != len(rhs_shape):
        raise ValueError(f"lhs and rhs must have the same rank, got lhs shape {lhs_shape} "
                         f"and rhs shape {rhs_shape}")
    rhs_dtype = lhs_dtype if rhs_dtype is None else rhs_dtype
    if _dtype_name(lhs_dtype) != _dtype_name(rhs_dtype):
        raise TypeError(f"lhs and rhs must have the same dtype, got lhs {_dtype_name(lhs_dtype)} "
                        f"and rhs {_dtype_name(rhs_dtype)}")
    nsp = len(lhs_shape) - 2
    window_strides = _int_tuple(window_strides, "window_strides", nsp, positive=True)
    lhs_dilation = _int_tuple(lhs_dilation, "lhs_dilation", nsp, positive=True)
    rhs_dilation = _int_tuple(rhs_dilation, "rhs_dilation", nsp, positive=True)
    for name, v in (("feature_group_count", feature_group_count),
                    ("batch_group_count", batch_group_count)):
        if operator.index(v) <= 0:
            raise ValueError(f"{name} must be positive, got {v}")
    if feature_group_count > 1 and batch_group_count > 1:
        raise ValueError("at most one of feature_group_count and batch_group_count may be > 1")

    if isinstance(dimension_numbers, (tuple, list)) and len(dimension_numbers) == 3 and all(
            isinstance(s, str) for s in dimension_numbers):
        for name, s in zip(("lhs", "rhs", "out"), dimension_numbers):
            if len(s) != len(lhs_shape):
                raise ValueError(f"dimension_numbers: the {name} spec {s!r} has {len(s)} letters, "
                                 f"but lhs has rank {len(lhs_shape)}")
    try:
        dn = lax.conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    except (TypeError, ValueError) as e:
        raise type(e)(f"dimension_numbers: {e}") from None
    lhs_spec, rhs_spec, out_spec = (tuple(int(i) for i in s) for s in dn)

    in_feat = lhs_shape[lhs_spec[1]]
    rhs_in = rhs_shape[rhs_spec[1]]
    rhs_out = rhs_shape[rhs_spec[0]]
    if in_feat % feature_group_count or in_feat // feature_group_count != rhs_in:
        raise ValueError(
            f"channel mismatch: lhs has {in_feat} feature channels, feature_group_count="
            f"{feature_group_count}, so rhs needs {in_feat // max(feature_group_count, 1)} input "
            f"channels, but rhs has {rhs_in} (rhs shape {rhs_shape}, dimension_numbers {dn})")
    if rhs_out % feature_group_count:
        raise ValueError(f"rhs output feature dimension ({rhs_out}) must be a multiple of "
                         f"feature_group_count ({feature_group_count})")
    if rhs_out % batch_group_count or lhs_shape[lhs_spec[0]] % batch_group_count:
        raise ValueError(f"rhs output features ({rhs_out}) and lhs batch "
                         f"({lhs_shape[lhs_spec[0]]}) must be multiples of batch_group_count "
                         f"({batch_group_count})")

    in_spatial = tuple(lhs_shape[d] for d in lhs_spec[2:])
    win_spatial = tuple(rhs_shape[d] for d in rhs_spec[2:])
    dil_in = tuple((s - 1) * d + 1 if s > 0 else 0 for s, d in zip(in_spatial, lhs_dilation))
    dil_win = tuple((s - 1) * d + 1 if s > 0 else 0 for s, d in zip(win_spatial, rhs_dilation))
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):  # lax rejects this too
            raise ValueError(f"padding: string padding ({padding!r}) is not supported with "
                             f"lhs_dilation {lhs_dilation} (a transposed convolution); pass "
                             f"explicit (low, high) pairs")
        if padding.upper() not in ("SAME", "SAME_LOWER", "VALID"):
            raise ValueError(f"padding must be 'SAME', 'SAME_LOWER', 'VALID' or a sequence of "
                             f"(low, high) pairs, got {padding!r}")
        pads = tuple(tuple(int(p) for p in pair) for pair in
                     lax.padtype_to_pads(dil_in, dil_win, window_strides, padding))
    else:
        try:
            pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
        except (TypeError, ValueError):
            raise TypeError(f"padding must be a string or a sequence of (low, high) integer "
                            f"pairs, got {padding!r}") from None
        if len(pads) != nsp:
            raise ValueError(f"padding must have {nsp} (low, high) pairs (one per spatial "
                             f"dimension), got {len(pads)}: {padding!r}")

    out_spatial = []
    for n_in, n_win, (lo, hi), s in zip(dil_in, dil_win, pads, window_strides):
        # like lax: a window larger than the padded input gives an empty output, not an error
        out_spatial.append(max(0, (n_in + lo + hi - n_win) // s + 1))
    out_shape = [0] * len(lhs_shape)
    out_shape[out_spec[0]] = lhs_shape[lhs_spec[0]] // batch_group_count
    out_shape[out_spec[1]] = rhs_out
    for d, n in zip(out_spec[2:], out_spatial):
        out_shape[d] = n

    out_dtype = _dtype_name(preferred_element_type if preferred_element_type is not None
                            else lhs_dtype)
    return ConvSpec(
        lhs_shape=lhs_shape, rhs_shape=rhs_shape, out_shape=tuple(out_shape),
        lhs_spec=lhs_spec, rhs_spec=rhs_spec, out_spec=out_spec,
        window_strides=window_strides, padding=pads, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, feature_group_count=int(feature_group_count),
        batch_group_count=int(batch_group_count), dtype=_dtype_name(lhs_dtype),
        rhs_dtype=_dtype_name(rhs_dtype), out_dtype=out_dtype)


def spec_from_logical(N, C, H, W, M, KH, KW, *, stride=(1, 1), padding="VALID",
                      layout="NCHW") -> ConvSpec:
    """Convenience for the planner, the CLI and the benchmark: a spec from sizes."""
    if layout == "NCHW":
        shapes = ((N, C, H, W), (M, C, KH, KW)); dn = ("NCHW", "OIHW", "NCHW")
    elif layout == "NHWC":
        shapes = ((N, H, W, C), (KH, KW, C, M)); dn = ("NHWC", "HWIO", "NHWC")
    else:
        raise ValueError(f"layout must be 'NCHW' or 'NHWC', got {layout!r}")
    return normalize(shapes[0], shapes[1], stride, padding, dimension_numbers=dn)


def as_dimension_numbers(spec: ConvSpec) -> lax.ConvDimensionNumbers:
    return lax.ConvDimensionNumbers(spec.lhs_spec, spec.rhs_spec, spec.out_spec)
