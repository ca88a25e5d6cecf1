"""Probes of single_channel.md rounds 21 and 30: our kernels' stream span under XLA against
the plan timer.

Run on the GPU machine after installing the package, from outside the source tree:

    python3 xla_probes.py plans    # each candidate plan: stream span (R convs per jit) vs timer
    python3 xla_probes.py order    # bench order, each timed call after the previous impl's
                                   # (settle 0) or after an untimed call of itself (settle 1)
    CB=0 python3 xla_probes.py order   # the same without XLA's command buffers
    python3 xla_probes.py gap      # distinct vs shared inputs / weights across the R convs
    SC_SPLIT_FIRST=1 python3 xla_probes.py split  # round 33: with sc-first-tile-split.patch,
                                   # run with and without the env (static per process)
    python3 xla_probes.py pf       # round 35: the wgmma launches with the band prefetched to L2
    python3 xla_probes.py rsweep   # NHWC vs NCHW stream span against R (the call's footprint)
    python3 xla_probes.py hlo DIR  # NHWC vs NCHW: the compiled HLO of R = 4 convs (to DIR) and
                                   # the kernels one call runs (CUPTI), with their durations
"""
import os
import sys

if os.environ.get("CB") == "0":
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_gpu_enable_command_buffer="
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

from jax_fastconv import autotune, planner, plan_single_channel as ps  # noqa: E402
from jax_fastconv.bench import measure_stream_time  # noqa: E402
from jax_fastconv import hardware as hw_mod  # noqa: E402
from jax_fastconv.primitive import conv_p  # noqa: E402
from jax_fastconv.spec import normalize  # noqa: E402
from jax_fastconv.timing import random_pairs  # noqa: E402

HW = hw_mod.resolve_hardware(None)


def layer(H, M, K, lay):
    """(spec, planned plan, lhs shape, rhs shape, dimension numbers) of a b1 VALID layer."""
    if lay == "NHWC":
        xs_, ws_, dn = (1, H, H, 1), (K, K, 1, M), ("NHWC", "HWIO", "NHWC")
    else:
        xs_, ws_, dn = (1, 1, H, H), (M, 1, K, K), ("NCHW", "OIHW", "NCHW")
    spec = normalize(xs_, ws_, (1, 1), "VALID", None, None, dn, 1, 1, "float32", "float32", None)
    return spec, planner.plan_cached(spec, HW), xs_, ws_, dn


def ours(spec, plan):
    return lambda X, W: tuple(conv_p.bind(x, w, spec=spec, plan=plan, precision=None)
                              for x, w in zip(X, W))


def lax_impl(dn, prec):
    return lambda X, W: tuple(lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=dn,
                                                       precision=prec) for x, w in zip(X, W))


def stream_medians(fns, args, R, rounds=9, settle=1):
    """The benchmark's stream span (median us per conv) of each fn, 2 warm-up rounds."""
    res = measure_stream_time(fns, args, R, rounds, 2, settle=settle)
    if res["note"]:
        raise RuntimeError(res["note"])
    return res["stream_us"]


def probe_plans():
    """Candidates (no tensor-core or row-Winograd ones; <= 15 a layer), in candidate order."""
    for H, M, K in ((28, 512, 3), (112, 128, 3), (112, 128, 5), (224, 64, 5)):
        for lay in ("NHWC", "NCHW"):
            spec, plan, xs_, ws_, dn = layer(H, M, K, lay)
            cands = [c for c in ps.candidate_plans(spec, HW, plan)
                     if c.kernel_attrs[1] != 5 and not c.kernel_attrs[6] & 2][:15]
            R = int(min(128, max(32, 300e6 / (4 * np.prod(spec.out_shape)))))
            xs, ws = random_pairs(xs_, ws_, R)
            fns = {str(tuple(c.kernel_attrs)): ours(spec, c) for c in cands}
            fns["lax"] = lax_impl(dn, lax.Precision.HIGHEST)
            med = stream_medians(fns, (xs, ws), R, settle=0)
            timer = autotune.measure_plans(spec, cands)[0]
            print(f"\n{lay} b1 {H}^2 M{M} K{K} R={R} lax stream {med['lax']:.2f}")
            for c in cands:
                a = tuple(c.kernel_attrs)
                print(f"  {str(a):42s} stream {med[str(a)]:7.2f}  timer {timer[a]:7.2f}  "
                      f"diff {med[str(a)] - timer[a]:+.2f}", flush=True)


def probe_order():
    for H, M, K, lay in ((28, 512, 3, "NHWC"), (56, 256, 5, "NHWC"), (112, 128, 3, "NHWC"),
                         (224, 64, 5, "NCHW"), (28, 512, 5, "NCHW")):
        spec, plan, xs_, ws_, dn = layer(H, M, K, lay)
        R = int(min(128, max(16, 300e6 / (4 * np.prod(spec.out_shape)))))
        xs, ws = random_pairs(xs_, ws_, R)
        fns = {"ours": ours(spec, plan), "laxH": lax_impl(dn, lax.Precision.HIGHEST),
               "laxD": lax_impl(dn, lax.Precision.DEFAULT)}
        line = f"CB={os.environ.get('CB', '1')} {lay} {H}^2 M{M} K{K} R={R}:"
        for settle in (0, 1, 0, 1):
            res = stream_medians(fns, (xs, ws), R, rounds=7, settle=settle)
            line += (f"  | settle {settle}: " + " ".join(f"{n} {v:.2f}" for n, v in res.items())
                     + f" x{res['laxH'] / res['ours']:.2f}")
        print(line, flush=True)


WGMMA_512 = [1, 6, 1, 1, 32, 8, 1, 256]   # the wgmma launch b1 512^2 K3 NHWC takes (round 30)


def gap_table(layers, modes, rounds, extra=(), prefix=""):
    """Per b1 layer: the planned launch (and the candidates whose attrs are in extra), the plan
    timer, and the stream span with the inputs / weights distinct or shared across the R convs."""
    for H, M, K, lay in layers:
        spec, plan, xs_, ws_, dn = layer(H, M, K, lay)
        R = 256 if H < 512 else 192
        xs, ws = random_pairs(xs_, ws_, R)
        inputs = {"distinct": (xs, ws), "same_w": (xs, (ws[0],) * R),
                  "same_x": ((xs[0],) * R, ws), "same_both": ((xs[0],) * R, (ws[0],) * R)}
        plans = [plan] + ([c for c in ps.candidate_plans(spec, HW, plan)
                           if list(c.kernel_attrs) in extra] if extra else [])
        timer = autotune.measure_plans(spec, plans)[0]
        for c in plans:
            a = tuple(c.kernel_attrs)
            line = f"{prefix}{lay} {H}^2 M{M} K{K} R={R} {list(a)} timer {timer[a]:.2f}:"
            for name in modes:
                med = stream_medians({"f": ours(spec, c)}, inputs[name], R, rounds)["f"]
                line += f"  {name} {med:.2f}"
            print(line, flush=True)


def probe_gap():
    """Distinct vs shared inputs / weights across the R convs: the planned launch, and on b1
    512^2 K3 NHWC the wgmma launch too (round 30; with sc-filters-first-probe.patch applied,
    run it with and without SC_FF=1)."""
    gap_table(((112, 128, 3, "NHWC"), (224, 64, 5, "NHWC"), (112, 128, 3, "NCHW"),
               (512, 32, 3, "NHWC"), (512, 32, 3, "NCHW")),
              ("distinct", "same_w", "same_x", "same_both"), 7, extra=[WGMMA_512])


def probe_split():
    """Planned launches, distinct and same-x inputs, plan timer (round 33; with
    sc-first-tile-split.patch applied, run it with and without SC_SPLIT_FIRST=1)."""
    gap_table(((512, 32, 3, "NHWC"), (512, 32, 5, "NHWC"), (224, 64, 5, "NHWC"),
               (112, 128, 3, "NHWC"), (512, 32, 3, "NCHW")),
              ("distinct", "same_x"), 9,
              prefix="split " if os.environ.get("SC_SPLIT_FIRST") else "base ")


def probe_pf():
    """Round 35: the wgmma launches of the b1 NHWC K3 / K5 layers with and without their band
    prefetched to L2 first (plan[6] & 8: with sc-wgmma-l2pf.patch applied), stream span with
    distinct and shared inputs, and the plan timer; two rounds, interleaved."""
    import dataclasses
    for H, M, K, spt in ((512, 32, 5, 8), (512, 32, 3, 8), (224, 64, 5, 2), (1024, 32, 5, 31)):
        spec, plan, xs_, ws_, dn = layer(H, M, K, "NHWC")
        R = 256 if H < 512 else (192 if H == 512 else 64)
        xs, ws = random_pairs(xs_, ws_, R)
        inputs = {"distinct": (xs, ws), "same_x": ((xs[0],) * R, ws)}
        plans = [dataclasses.replace(plan, kernel_attrs=(plan.kernel_attrs[0], 6, 1, 1, 32, spt,
                                                         f, 256)) for f in (1, 9, 3, 11)]
        for rnd in range(2):
            timer = autotune.measure_plans(spec, plans)[0]
            for c in plans:
                a = tuple(c.kernel_attrs)
                line = f"pf r{rnd} NHWC {H}^2 M{M} K{K} R={R} {list(a)} timer {timer[a]:.2f}:"
                for name in inputs:
                    med = stream_medians({"f": ours(spec, c)}, inputs[name], R, 7)["f"]
                    line += f"  {name} {med:.2f}"
                print(line, flush=True)


def probe_rsweep():
    for H, M, K in ((112, 128, 3), (224, 64, 5), (56, 256, 5)):
        for lay in ("NHWC", "NCHW"):
            spec, plan, xs_, ws_, dn = layer(H, M, K, lay)
            timer = list(autotune.measure_plans(spec, [plan])[0].values())[0]
            xs, ws = random_pairs(xs_, ws_, 256)
            line = f"{lay} {H}^2 M{M} K{K} timer {timer:.2f}:"
            for R in (16, 64, 256):
                med = stream_medians({"f": ours(spec, plan)}, (xs[:R], ws[:R]), R, 7)["f"]
                gb = R * 4 * float(np.prod(spec.out_shape)) / 1e9
                line += f"  R {R} ({gb:.2f} GB out) {med:.2f}"
            print(line, flush=True)


def probe_hlo(out_dir):
    import collections

    import jax
    from jax_fastconv.bench import _trace_kernel_events
    R = 4
    for H, M, K in ((112, 128, 1), (112, 128, 3), (56, 256, 5)):
        for lay in ("NHWC", "NCHW"):
            spec, plan, xs_, ws_, dn = layer(H, M, K, lay)
            xs, ws = random_pairs(xs_, ws_, R)
            f = jax.jit(ours(spec, plan))
            compiled = f.lower(xs, ws).compile()
            name = f"{lay}_{H}_M{M}_K{K}"
            with open(os.path.join(out_dir, f"hlo_{name}.txt"), "w") as fh:
                fh.write(compiled.as_text())
            for _ in range(3):
                jax.block_until_ready(f(xs, ws))
            ev = _trace_kernel_events(lambda: jax.block_until_ready(f(xs, ws)))
            ev.sort()
            names = collections.Counter(e[2][:60] for e in ev)
            span = (ev[-1][0] + ev[-1][1] - ev[0][0]) / 1e3 if ev else 0.0
            busy = sum(e[1] for e in ev) / 1e3
            print(f"{name}: {len(ev)} kernels, span {span:.2f} us, busy {busy:.2f} us; "
                  + "; ".join(f"{n} x{c}" for n, c in names.items()), flush=True)
            for e in ev:
                print(f"    +{(e[0] - ev[0][0]) / 1e3:8.2f} us  {e[1] / 1e3:6.2f} us  {e[2][:70]}")


if __name__ == "__main__":
    if sys.argv[1] == "hlo":
        probe_hlo(sys.argv[2])
    else:
        {"plans": probe_plans, "order": probe_order, "gap": probe_gap,
         "split": probe_split, "rsweep": probe_rsweep, "pf": probe_pf}[sys.argv[1]]()
