"""Stream stamps: the benchmark's third clock, CUDA events recorded on XLA's stream.

``stamped(fn, slot)`` wraps a jitted ``fn(xs, ws) -> outputs``: a stamp custom call
(``cuda/stream_stamp.cc``) records the event of ``slot`` before the convolutions (an
``optimization_barrier`` makes every input wait for it) and one of ``slot + 1`` after them (it
takes every output as an operand), and ``elapsed_us(slot)`` reads the time between the two.
That is the convolutions' device time as XLA runs them (its CUDA graphs included, the gaps
between kernels included), with neither the host's handling of the call's arguments and
results (in wall/R) nor a profiler (a CUPTI trace makes XLA run each command buffer's thunks
one at a time, which spreads out a peer's several small kernels).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from . import _ffi

TARGET = "fastconv_stream_stamp"
SLOTS = 64   # events per device (cuda/stream_stamp.h kStampSlots)


def available() -> bool:
    """Whether stamps can run: the CUDA module has them and JAX's default backend is a GPU."""
    import jax
    if _ffi.cuda_module is None or not hasattr(_ffi.cuda_module, "stamp_elapsed_us"):
        return False
    try:
        return jax.default_backend() == "gpu"
    except RuntimeError:
        return False


def stamp(*after, slot: int):
    """A u32 token from a custom call that records the event of ``slot`` on XLA's stream once
    every array in ``after`` is computed. Lowers for CUDA only."""
    import jax
    import jax.numpy as jnp
    if not 0 <= slot < SLOTS:
        raise ValueError(f"slot must be in [0, {SLOTS}), got {slot}")
    call = jax.ffi.ffi_call(TARGET, jax.ShapeDtypeStruct((), jnp.uint32), has_side_effect=True)
    return call(*after, slot=np.int64(slot))


def stamped(fn: Callable, slot: int) -> Callable:
    """``g(xs, ws) -> (fn(xs, ws), tokens)`` with the stamp of ``slot`` before all of ``fn``'s
    work and that of ``slot + 1`` after all of it (``fn`` returns a tuple of arrays)."""
    import jax
    if not 0 <= slot < SLOTS - 1:
        raise ValueError(f"slot must be in [0, {SLOTS - 1}), got {slot}")

    def g(xs, ws):
        t0 = stamp(slot=slot)
        xs, ws, t0 = jax.lax.optimization_barrier((xs, ws, t0))
        outs = fn(xs, ws)
        return outs, (t0, stamp(*outs, slot=slot + 1))
    return g


def elapsed_us(slot: int, ordinal: int = 0) -> float:
    """Microseconds between the stamps of ``slot`` and ``slot + 1`` (waits for the second)."""
    return _ffi.cuda_module.stamp_elapsed_us(slot, slot + 1, ordinal)
