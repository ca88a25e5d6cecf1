"""Bad arguments raise the named error (where lax rejects them too), from the call, under
jit and from explain(); and arguments lax accepts are accepted."""
from __future__ import annotations

import numpy as np
import pytest
import jax
import jax.numpy as jnp
from jax import lax

import jax_fastconv as fc
from _helpers import HIGHEST, assert_close, randn, ref_conv

_rng = np.random.default_rng(0)
X = randn(_rng, (1, 2, 5, 5))
W = randn(_rng, (3, 2, 3, 3))
OK = dict(window_strides=(1, 1), padding="SAME")

# name, lhs, rhs, kwargs, exception type, message regex
BAD = [
    ("rank_mismatch", X, randn(_rng, (3, 2, 3)), OK, ValueError, r"rank"),
    ("rank_mismatch_rhs5", X, randn(_rng, (3, 2, 3, 3, 1)), OK, ValueError, r"rank"),
    ("channel_mismatch", X, randn(_rng, (3, 4, 3, 3)), OK, ValueError, r"channel"),
    ("channel_mismatch_nhwc", randn(_rng, (1, 5, 5, 2)), randn(_rng, (3, 3, 3, 4)),
     dict(OK, dimension_numbers=("NHWC", "HWIO", "NHWC")), ValueError, r"channel"),
    ("stride_zero", X, W, dict(OK, window_strides=(0, 1)), ValueError, r"window_strides"),
    ("stride_negative", X, W, dict(OK, window_strides=(1, -1)), ValueError, r"window_strides"),
    ("mixed_dtypes", X, W.astype(jnp.float16), OK, TypeError, r"dtype"),
    ("padding_FULL", X, W, dict(OK, padding="FULL"), ValueError, r"padding"),
    ("padding_length_1", X, W, dict(OK, padding=((1, 1),)), ValueError, r"padding"),
    ("padding_length_3", X, W, dict(OK, padding=((1, 1), (1, 1), (0, 0))), ValueError,
     r"padding"),
    ("strides_length_3", X, W, dict(OK, window_strides=(1, 1, 1)), ValueError,
     r"window_strides"),
    ("strides_length_1", X, W, dict(OK, window_strides=(1,)), ValueError, r"window_strides"),
    ("strides_float", X, W, dict(OK, window_strides=(1.5, 1)), TypeError, r"window_strides"),
    ("strides_str", X, W, dict(OK, window_strides=("a", 1)), TypeError, r"window_strides"),
    ("rhs_dilation_zero", X, W, dict(OK, rhs_dilation=(0, 1)), ValueError, r"rhs_dilation"),
    ("dimension_numbers_short", X, W, dict(OK, dimension_numbers=("NCHW", "OIHW", "NCH")),
     ValueError, r"dimension_numbers"),
    ("feature_group_count_not_dividing", X, W, dict(OK, feature_group_count=3), ValueError,
     r"channel|feature_group_count"),
    ("padding_not_pairs", X, W, dict(OK, padding=(1, 1)), TypeError, r"padding"),
    ("string_padding_with_lhs_dilation", X, W, dict(OK, lhs_dilation=(2, 2)), ValueError,
     r"padding"),
]
BIDS = [b[0] for b in BAD]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name,x,w,kw,exc,match", BAD, ids=BIDS)
def test_lax_rejects_too(name, x, w, kw, exc, match):
    with pytest.raises(Exception):
        jax.block_until_ready(lax.conv_general_dilated(x, w, **kw))


@pytest.mark.parametrize("name,x,w,kw,exc,match", BAD, ids=BIDS)
def test_bad_argument_raises(name, x, w, kw, exc, match):
    with pytest.raises(exc, match=match):
        fc.conv_general_dilated(x, w, **kw)


@pytest.mark.parametrize("name,x,w,kw,exc,match", BAD, ids=BIDS)
def test_bad_argument_raises_under_jit(name, x, w, kw, exc, match):
    with pytest.raises(exc, match=match):
        jax.jit(lambda a, b: fc.conv_general_dilated(a, b, **kw))(x, w)


@pytest.mark.parametrize("name,x,w,kw,exc,match", BAD, ids=BIDS)
def test_explain_raises(name, x, w, kw, exc, match):
    with pytest.raises(exc, match=match):
        fc.explain(x, w, **kw)   # arrays (dtype known)


def test_error_messages_name_sizes():
    with pytest.raises(ValueError) as e:
        fc.conv_general_dilated(X, randn(_rng, (3, 4, 3, 3)), (1, 1), "SAME")
    assert "2" in str(e.value) and "4" in str(e.value)


def test_padding_string_case_insensitive_like_lax():
    """lax accepts lower-case padding strings; so must the drop-in (on the fast path)."""
    ref = ref_conv(X, W, (1, 1), "same")
    out = fc.conv_general_dilated(X, W, (1, 1), "same")
    assert_close(out, ref)
    assert fc.explain(X, W, (1, 1), "valid").path == "fastconv-cpu"


def test_window_larger_than_input_gives_lax_empty_output():
    """lax returns a zero-size output when the window exceeds the padded input (VALID with
    a kernel larger than the map); the drop-in must return the same, not raise."""
    x = randn(_rng, (1, 2, 5, 5))
    w = randn(_rng, (3, 2, 7, 3))
    ref = lax.conv_general_dilated(x, w, (1, 1), "VALID", precision=HIGHEST)
    assert ref.shape == (1, 3, 0, 3)
    out = fc.conv_general_dilated(x, w, (1, 1), "VALID")
    assert out.shape == ref.shape and out.dtype == ref.dtype
    assert fc.explain(x, w, (1, 1), "VALID").path == "lax"
