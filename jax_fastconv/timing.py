"""Wall-clock timing of jitted calls that each run R convolutions, and their R distinct random
inputs, shared by the benchmark harness (bench.py) and the autotuner (autotune.py)."""
from __future__ import annotations

import time
from typing import Callable


# Untimed calls of an fn right before each of its timed calls (see time_interleaved).
SETTLE = 1


def time_interleaved(fns: dict, args, R: int, rounds: int, warmup: int, *,
                     sync: Callable | None = None,
                     read: Callable[[str], float] | None = None,
                     settle: int = SETTLE) -> dict[str, list[float]]:
    """Per-call microseconds of each round for every fn in ``fns``: wall time of one call of R
    convs / R, or, with ``read``, ``read(name)`` (the call's microseconds by another clock,
    read once the call is synced) / R. Interleaved: each warm-up and each timed round calls
    every fn, in the order of ``fns``, so whatever slows the machine for a while slows all
    of them alike. In a timed round each fn's timed call follows ``settle`` untimed calls of
    the same fn, so every fn is timed in its own steady state, as a jitted step repeated in a
    loop runs. A call right after another executable's was slower on the device by 0.4-0.5 us
    per convolution for our kernels (H100, b1 28^2-224^2 paper layers; lax's longer kernels:
    no consistent change) under XLA's command buffers and not measurably without them: XLA
    re-records a command buffer when a buffer's address differs from the last recording, which
    a call after another executable's gets (benchmarks/notes/single_channel.md round 21).
    The previous call's outputs are freed before the next call."""
    if sync is None:
        import jax
        sync = jax.block_until_ready
    names = list(fns)
    out = None
    for _ in range(warmup):
        for n in names:
            out = None
            out = fns[n](*args)
            sync(out)
    times: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(rounds):
        for n in names:
            for _ in range(settle):
                out = None
                out = fns[n](*args)
                sync(out)
            out = None
            t0 = time.perf_counter()
            out = fns[n](*args)
            sync(out)
            us = (time.perf_counter() - t0) * 1e6 if read is None else read(n)
            times[n].append(us / R)
    del out
    return times


def random_pairs(lhs_shape, rhs_shape, R: int, seed: int = 0):
    """R distinct (lhs, rhs) pairs of random normal float32 on the default device, as two tuples
    of R separate arrays (a timed jit that takes them runs no slicing copy).

    Evaluated eagerly, also while an outer jax.jit traces (the autotuner's case:
    ensure_compile_time_eval), as one stacked draw per operand and then R indexings. Drawn
    inside one compiled function instead, the input was a constant that XLA folded on the host
    (13-41 s per new shape on an H100 for the autotuner's former 2R draws), and with the R
    slices as outputs XLA copied the draw into each (b1 ViT stem, R = 256: no compile in 6
    minutes, H100)."""
    import jax
    lhs_shape, rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
    with jax.ensure_compile_time_eval():
        k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
        lhs = jax.random.normal(k1, (R,) + lhs_shape, "float32")
        rhs = jax.random.normal(k2, (R,) + rhs_shape, "float32")
        xs, ws = tuple(lhs[i] for i in range(R)), tuple(rhs[i] for i in range(R))
    del lhs, rhs
    jax.block_until_ready((xs, ws))
    return xs, ws
