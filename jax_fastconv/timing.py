"""Wall-clock timing of jitted calls that each run R convolutions, shared by the benchmark
harness (bench.py) and the autotuner (autotune.py)."""
from __future__ import annotations

import time
from typing import Callable


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
