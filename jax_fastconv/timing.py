"""Wall-clock timing of jitted calls that each run R convolutions, and their R distinct random
inputs, shared by the benchmark harness (bench.py) and the autotuner (autotune.py)."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np


def time_interleaved(fns: dict, args, R: int, rounds: int, warmup: int, *,
                     sync: Callable | None = None) -> dict[str, list[float]]:
    """Per-call microseconds of each round for every fn in ``fns``: wall time of one call of R
    convs / R. Interleaved: each warm-up and each timed round calls every fn once, in the
    order of ``fns``, so whatever slows the machine for a while slows all of them alike. The
    previous call's outputs are freed before the next call."""
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
            out = None
            t0 = time.perf_counter()
            out = fns[n](*args)
            sync(out)
            times[n].append((time.perf_counter() - t0) * 1e6 / R)
    del out
    return times


def random_pairs(lhs_shape, rhs_shape, R: int, seed: int = 0):
    """R distinct (lhs, rhs) pairs of random normal float32 on the default device, as two tuples
    of R separate arrays (a timed jit that takes them runs no slicing copy).

    One stacked draw per operand, from a seed passed in as an argument: with the key built
    from a constant, the whole draw is a constant that XLA folds on the host while compiling (13-41 s per
    new shape on an H100 for the autotuner's former 2R draws, 33 s for one stacked draw of
    b32 14^2 C384). Compiled ahead of time and called as an executable, so this also works
    while an outer jax.jit is tracing (the autotuner's case)."""
    import jax
    import jax.numpy as jnp
    lhs_shape, rhs_shape = tuple(lhs_shape), tuple(rhs_shape)

    def gen(seed):
        k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
        return (tuple(jnp.unstack(jax.random.normal(k1, (R,) + lhs_shape, jnp.float32))),
                tuple(jnp.unstack(jax.random.normal(k2, (R,) + rhs_shape, jnp.float32))))

    seed = np.uint32(seed)   # a NumPy value: never a tracer of an outer jit
    xs, ws = jax.jit(gen).lower(seed).compile()(seed)
    jax.block_until_ready((xs, ws))
    return xs, ws
