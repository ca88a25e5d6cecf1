"""Probe (single_channel.md round 21): does a jitted call's stream span depend on the call before it?
Per layer, rounds in the benchmark's order (fastconv, lax HIGHEST, lax DEFAULT) with each timed
call right after the previous impl's (settle 0), or after an untimed call of itself (settle 1);
with XLA's command buffers (default) or without them (CB=0). Run on the GPU machine after
installing the package, from outside the source tree: python3 /path/to/order_probe.py"""
import os, statistics, sys
if os.environ.get("CB") == "0":
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_gpu_enable_command_buffer="
import jax, numpy as np
from jax import lax
from jax_fastconv import planner, stream_stamp as st
from jax_fastconv import hardware as hw_mod
from jax_fastconv.primitive import conv_p
from jax_fastconv.timing import random_pairs
from jax_fastconv.spec import normalize
hw = hw_mod.resolve_hardware(None)
def rounds(wrapped, slots, args, R, n_rounds, settle):
    names = list(wrapped); t = {n: [] for n in names}
    for r in range(n_rounds + 2):
        for n in names:
            for s in range(settle + 1):
                out = None; out = wrapped[n](*args); jax.block_until_ready(out)
            if r >= 2: t[n].append(st.elapsed_us(slots[n]) / R)
    return {n: statistics.median(v) for n, v in t.items()}
for H, M, K, lay in [(28, 512, 3, "NHWC"), (56, 256, 5, "NHWC"), (112, 128, 3, "NHWC"), (224, 64, 5, "NCHW"), (28, 512, 5, "NCHW")]:
    if lay == "NHWC":
        xs_, ws_, dn = (1, H, H, 1), (K, K, 1, M), ("NHWC", "HWIO", "NHWC")
    else:
        xs_, ws_, dn = (1, 1, H, H), (M, 1, K, K), ("NCHW", "OIHW", "NCHW")
    spec = normalize(xs_, ws_, (1, 1), "VALID", None, None, dn, 1, 1, "float32", "float32", None)
    plan = planner.plan_cached(spec, hw)
    R = int(min(128, max(16, 300e6 / (4 * np.prod(spec.out_shape)))))
    xs, ws = random_pairs(xs_, ws_, R)
    ours = lambda X, W: tuple(conv_p.bind(x, w, spec=spec, plan=plan, precision=None) for x, w in zip(X, W))
    laxf = lambda prec: (lambda X, W: tuple(lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=dn, precision=prec) for x, w in zip(X, W)))
    mk = {"ours": ours, "laxH": laxf(lax.Precision.HIGHEST), "laxD": laxf(lax.Precision.DEFAULT)}
    slots = {n: 2 * i for i, n in enumerate(mk)}
    wrapped = {n: jax.jit(st.stamped(f, slots[n])) for n, f in mk.items()}
    line = f"CB={os.environ.get('CB', '1')} {lay} {H}^2 M{M} K{K} R={R}:"
    for settle in (0, 1, 0, 1):
        res = rounds(wrapped, slots, (xs, ws), R, 7, settle)
        line += f"  | settle {settle}: " + " ".join(f"{n} {v:.2f}" for n, v in res.items()) + f" x{res['laxH'] / res['ours']:.2f}"
    print(line, flush=True)
    del xs, ws
