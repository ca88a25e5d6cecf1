"""``python -m jax_fastconv bench``: fastconv against lax (HIGHEST and DEFAULT) and torch/cuDNN.

Method (design.md, "Measuring"):

* Correct before fast: each case runs fastconv and lax HIGHEST on the same random normal
  inputs (never zeros); relative error ||out - ref|| / ||ref|| must be <= 1e-5 (float32),
  checked on the first and the last of the R calls. A wrong case is reported as wrong and is
  not timed (no fastconv time, no speedup, no % of roofline).
* Device time: R (>= 16) independent calls on R distinct inputs (distinct lhs *and* rhs)
  inside one ``jax.jit``, a Python-unrolled loop whose R outputs are all returned as a tuple:
  nothing can be CSE'd (distinct inputs) or dead-code eliminated (every output is live) and
  there is no reduction to subtract. Wall time of the call (``time.perf_counter`` around the
  call and ``block_until_ready``) / R; median of >= 7 rounds after warm-up. The 1/R share of
  the jit dispatch (``overheads.jit_call_overhead_us`` / R) is included in every impl's time.
* Memory: R x (input + filter + output bytes) is kept under ``--mem-cap-gb`` (default 2) by
  lowering R, but never below 16; a case where R = 16 is over the cap says so in ``note``,
  and one over the hard guard (``--max-gb``, default 40% of device memory) is skipped.
* The same process, harness and inputs time fastconv and the lax peers. torch (optional, when
  importable with CUDA) gets the same inputs through DLPack: cuDNN benchmark mode, TF32 off,
  R back-to-back calls between two CUDA events, / R, median of the rounds.
* Ceilings measured in the same run: device copy bandwidth (bytes read + written: the faster
  of XLA's ``x + 1`` over 2 GiB and, on a GPU, the extension's cudaMemcpy D2D timed with CUDA
  events; XLA's elementwise copy reaches only 2-3 of 4.2 TB/s on an H200) and the f32 GEMM
  rate at HIGHEST (chains of 2 and 6 dependent n^3 ``jnp.dot`` products, time difference).
  Roofline floor = max(FLOP / GEMM rate, min_bytes / copy bandwidth); % of roofline =
  floor / measured time.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import os
import platform as _platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

from .bench_report import (PEER_LABELS, PEERS, SCHEMA_VERSION, format_table,  # noqa: F401
                           geomean,
                           markdown_summary, pct_of_roofline, plot_result, roofline_floor_s,
                           speedup, summarize, validate_result)

REL_TOL = 1e-5
MIN_R = 16
DEFAULT_R = 32
DEFAULT_ROUNDS = 7
DEFAULT_WARMUP = 2
DEFAULT_OUT = os.path.join("benchmarks", "results")
CPU_SET = "cpu-smoke"

# -- layer sets ---------------------------------------------------------------------------


def _layers_candidates(explicit: str | None = None) -> list[Path]:
    here = Path(__file__).resolve().parent
    c = []
    if explicit:
        c.append(Path(explicit))
    if os.environ.get("JAX_FASTCONV_LAYERS"):
        c.append(Path(os.environ["JAX_FASTCONV_LAYERS"]))
    c += [Path.cwd() / "benchmarks" / "layers.json", here.parent / "benchmarks" / "layers.json",
          here / "layers.json"]
    return c


def load_sets(path: str | None = None) -> dict:
    """The layer sets file (benchmarks/layers.json): {"sets": {name: {...}}, ...}."""
    for p in _layers_candidates(path):
        if p.is_file():
            with open(p) as f:
                d = json.load(f)
            d["_path"] = str(p)
            return d
    raise FileNotFoundError(
        "benchmarks/layers.json not found (looked in: "
        + ", ".join(str(p) for p in _layers_candidates(path))
        + "); pass --sets-file or set JAX_FASTCONV_LAYERS")


@dataclasses.dataclass(frozen=True)
class Case:
    set: str
    N: int
    C: int
    H: int
    W: int
    M: int
    KH: int
    KW: int
    stride: tuple[int, int] = (1, 1)
    padding: str = "VALID"
    layout: str = "NHWC"
    name: str | None = None
    count: int | None = None

    def spec(self):
        from .spec import spec_from_logical
        return spec_from_logical(self.N, self.C, self.H, self.W, self.M, self.KH, self.KW,
                                 stride=self.stride, padding=self.padding, layout=self.layout)


def _stride2(s) -> tuple[int, int]:
    if isinstance(s, int):
        return (s, s)
    s = tuple(int(v) for v in s)
    if len(s) == 1:
        return (s[0], s[0])
    if len(s) != 2:
        raise ValueError(f"stride must be an int or two ints, got {s!r}")
    return s


def _layouts(layout: str) -> tuple[str, ...]:
    layout = layout.upper()
    if layout == "BOTH":
        return ("NHWC", "NCHW")
    if layout not in ("NHWC", "NCHW"):
        raise ValueError(f"--layout must be NHWC, NCHW or both, got {layout!r}")
    return (layout,)


def expand_set(sets: dict, name: str, *, batches: Sequence[int] | None = None,
               layouts: Sequence[str] = ("NHWC",), quick: bool = False) -> list[Case]:
    """The cases of one set: its cases x batches (the set's own, or ``batches``) x layouts.
    ``quick``: only the cases marked quick, at the set's first batch unless ``batches``."""
    all_sets = sets["sets"]
    if name not in all_sets:
        raise KeyError(f"unknown set {name!r}; known: {', '.join(all_sets)}")
    s = all_sets[name]
    bs = list(batches) if batches else list(s.get("batches", [1]))
    entries = s["cases"]
    if quick:
        entries = [e for e in entries if e.get("quick")] or entries[:2]
        if not batches:
            bs = bs[:1]
    out = []
    for b in bs:
        for lay in layouts:
            for e in entries:
                out.append(Case(set=name, N=int(b), C=e["C"], H=e["H"], W=e.get("W", e["H"]),
                                M=e["M"], KH=e["KH"], KW=e.get("KW", e["KH"]),
                                stride=_stride2(e.get("stride", 1)),
                                padding=e.get("padding", s.get("padding", "VALID")),
                                layout=lay, name=e.get("name"), count=e.get("count")))
    return out


def parse_shape(text: str, *, layout: str = "NHWC") -> Case:
    """``N,C,H,W,M,KH,KW[,stride[,padding]]``; stride ``2`` or ``2x1``; padding VALID (the
    default), SAME or SAME_LOWER."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not 7 <= len(parts) <= 9:
        raise ValueError(f"--shape wants N,C,H,W,M,KH,KW[,stride[,padding]], got {text!r}")
    try:
        n, c, h, w, m, kh, kw = (int(p) for p in parts[:7])
    except ValueError:
        raise ValueError(f"--shape: the first seven fields must be integers, got {text!r}") from None
    stride = (1, 1)
    if len(parts) >= 8:
        st = parts[7].lower().replace("*", "x")
        stride = _stride2([int(v) for v in st.split("x")])
    padding = "VALID"
    if len(parts) == 9:
        padding = parts[8].upper()
        if padding not in ("VALID", "SAME", "SAME_LOWER"):
            raise ValueError(f"--shape: padding must be VALID, SAME or SAME_LOWER, got {parts[8]!r}")
    if min(n, c, h, w, m, kh, kw, *stride) <= 0:
        raise ValueError(f"--shape: sizes must be positive, got {text!r}")
    return Case(set="custom", N=n, C=c, H=h, W=w, M=m, KH=kh, KW=kw, stride=stride,
                padding=padding, layout=layout)


# -- implementations ------------------------------------------------------------------------

ConvFn = Callable  # (x, w, case, spec) -> y, traceable


def _lax_impl(precision_name: str) -> ConvFn:
    from jax import lax

    def f(x, w, case, spec):
        from .spec import as_dimension_numbers
        return lax.conv_general_dilated(
            x, w, case.stride, case.padding, dimension_numbers=as_dimension_numbers(spec),
            precision=getattr(lax.Precision, precision_name))
    f.__name__ = f"lax_{precision_name.lower()}"
    return f


def _fastconv_api():
    """(conv_general_dilated, explain) of the package; ImportError when not built yet."""
    import importlib
    pkg = importlib.import_module(__package__ or "jax_fastconv")
    conv = getattr(pkg, "conv_general_dilated", None)
    if conv is None:
        raise ImportError("jax_fastconv.conv_general_dilated is not available (package not "
                          "built or __init__ not written yet)")
    return conv, getattr(pkg, "explain", None)


def default_impls() -> tuple[dict, Callable | None]:
    """{"fastconv", "lax_highest", "lax_default"} -> conv functions, and fastconv's explain."""
    from jax import lax
    conv, explain = _fastconv_api()

    def fastconv(x, w, case, spec):
        from .spec import as_dimension_numbers
        return conv(x, w, case.stride, case.padding,
                    dimension_numbers=as_dimension_numbers(spec),
                    precision=lax.Precision.HIGHEST)
    return ({"fastconv": fastconv, "lax_highest": _lax_impl("HIGHEST"),
             "lax_default": _lax_impl("DEFAULT")}, explain)


def _explain_case(explain, case: Case, spec) -> dict:
    if explain is None:
        return {"method": None, "path": None, "reason": "no explain() available", "plan": None}
    from jax import lax
    from .spec import as_dimension_numbers
    try:
        e = explain(spec.lhs_shape, spec.rhs_shape, case.stride, case.padding,
                    dimension_numbers=as_dimension_numbers(spec),
                    precision=lax.Precision.HIGHEST)
    except Exception as err:  # noqa: BLE001 - reported, never fatal
        return {"method": None, "path": None, "reason": f"explain failed: {err!r}", "plan": None}
    path = getattr(e, "path", None)
    plan = getattr(e, "plan", None)
    method = getattr(plan, "method", None) if plan is not None else None
    if path == "lax":
        method = "lax-fallback"
    desc = None
    if plan is not None and hasattr(plan, "describe"):
        try:
            desc = plan.describe()
        except Exception:  # noqa: BLE001
            desc = None
    return {"method": method, "path": path, "reason": getattr(e, "reason", None), "plan": desc}


# -- measuring ------------------------------------------------------------------------------


def _gpu_devices():
    import jax
    try:
        return [d for d in jax.devices() if d.platform in ("gpu", "cuda", "rocm")]
    except RuntimeError:
        return []


def _device_memory_bytes() -> int | None:
    import jax
    try:
        st = jax.devices()[0].memory_stats() or {}
        return int(st.get("bytes_limit")) if st.get("bytes_limit") else None
    except Exception:  # noqa: BLE001
        return None


def _make_inputs(spec, R: int, seed: int):
    """R distinct (lhs, rhs) pairs of random normal float32, generated on the device."""
    import jax
    import jax.numpy as jnp

    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    # One stacked draw each (a small compile), then R separate buffers: the timed jit takes
    # R distinct arrays, so no slicing copy runs inside it.
    xs = tuple(jnp.unstack(jax.random.normal(k1, (R,) + tuple(spec.lhs_shape), jnp.float32)))
    ws = tuple(jnp.unstack(jax.random.normal(k2, (R,) + tuple(spec.rhs_shape), jnp.float32)))
    jax.block_until_ready((xs, ws))
    return xs, ws
    xs, ws = gen(jax.random.PRNGKey(seed))
    jax.block_until_ready((xs, ws))
    return xs, ws


def _batched(fn: ConvFn, case: Case, spec):
    import jax

    def run(xs, ws):
        return tuple(fn(x, w, case, spec) for x, w in zip(xs, ws))
    return jax.jit(run)


def _time_rounds(f, args, R: int, rounds: int, warmup: int) -> list[float]:
    """Per-call microseconds of each round: wall time of one jitted call of R convs / R."""
    import jax
    out = None
    for _ in range(warmup):
        del out
        out = f(*args)
        jax.block_until_ready(out)
    times = []
    for _ in range(rounds):
        del out
        t0 = time.perf_counter()
        out = f(*args)
        jax.block_until_ready(out)
        times.append((time.perf_counter() - t0) * 1e6 / R)
    del out
    return times


def _rel_err(out, ref) -> float:
    import jax.numpy as jnp
    num = jnp.linalg.norm((out - ref).astype(jnp.float32).ravel())
    den = jnp.linalg.norm(ref.astype(jnp.float32).ravel())
    den = float(den)
    if den == 0.0:
        return float("inf")
    return float(num) / den


def measure_copy_bandwidth(total_bytes: int, rounds: int = 7, pieces: int = 8) -> float:
    """Bytes read + written per second by ``x + 1`` over ``pieces`` distinct arrays."""
    import jax
    import jax.numpy as jnp
    n = max(1, total_bytes // (4 * pieces))
    keys = jax.random.split(jax.random.PRNGKey(1), pieces)
    xs = tuple(jax.random.normal(k, (n,), jnp.float32) for k in keys)
    f = jax.jit(lambda xs: tuple(x + 1.0 for x in xs))
    per = _time_rounds(f, (xs,), 1, rounds, 2)
    return 2.0 * 4 * n * pieces / (statistics.median(per) * 1e-6)


def measure_event_copy_bandwidth() -> float | None:
    """The extension's device-to-device copy rate (CUDA events, read + written), or None."""
    from . import _ffi
    if _ffi.cuda_module is None or _ffi.cuda_device_count() == 0:
        return None
    try:
        return float(_ffi.cuda_module.calibrate(0)["copy_bytes_per_s"])
    except RuntimeError:
        return None


def measure_gemm_rate(n: int, rounds: int = 5, counts: tuple[int, int] = (2, 6)) -> float:
    """f32 GEMM FLOP/s at precision HIGHEST (2 n^3 per n x n x n product).

    Chains of c1 and c2 dependent products, each in one jit, timed alike: the difference of
    the two times cancels the call's fixed cost (about 1 ms on an H200 for these sizes), which
    a single timed product would count as GEMM time."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    k1, k2 = jax.random.split(jax.random.PRNGKey(2))
    a = jax.random.normal(k1, (n, n), jnp.float32)
    b = jax.random.normal(k2, (n, n), jnp.float32) * (1.0 / n ** 0.5)   # keeps the chain finite

    def chain(k):
        def f(a, b):
            return lax.fori_loop(0, k, lambda _, c: jnp.dot(c, b, precision=lax.Precision.HIGHEST), a)
        return jax.jit(f)
    c1, c2 = counts
    t1 = statistics.median(_time_rounds(chain(c1), (a, b), 1, rounds, 2))
    t2 = statistics.median(_time_rounds(chain(c2), (a, b), 1, rounds, 2))
    if t2 <= t1:   # too noisy to difference (tiny CPU sizes): fall back to the longer chain
        return 2.0 * n ** 3 * c2 / (t2 * 1e-6)
    return 2.0 * n ** 3 * (c2 - c1) / ((t2 - t1) * 1e-6)


def _torch_available() -> tuple[bool, str]:
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return False, f"torch not importable ({type(e).__name__})"
    try:
        if not torch.cuda.is_available():
            return False, "torch has no CUDA device"
    except Exception as e:  # noqa: BLE001
        return False, f"torch.cuda failed: {e!r}"
    return True, f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}"


def _torch_case(case: Case, spec, xs, ws, refs: dict, R: int, rounds: int, warmup: int) -> dict:
    """torch/cuDNN fp32 on the same inputs (DLPack). Asymmetric SAME padding (stride 2 on an
    even map) is applied to the inputs before timing, so torch runs an unpadded conv there."""
    import jax.numpy as jnp
    import torch
    import torch.nn.functional as F
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    (pt, pb), (pl, pr) = spec.padding
    sym = pt == pb and pl == pr
    pad = (pt, pl) if sym else (0, 0)
    nhwc = case.layout == "NHWC"
    cl = torch.channels_last if nhwc else torch.contiguous_format

    def to_t(a, is_w):
        if not is_w and not sym:
            widths = [(0, 0)] * 4
            hax, wax = (1, 2) if nhwc else (2, 3)
            widths[hax], widths[wax] = (pt, pb), (pl, pr)
            a = jnp.pad(a, widths)
        t = torch.from_dlpack(a)
        if nhwc:  # NHWC -> logical NCHW view (channels_last); HWIO -> OIHW
            t = t.permute(0, 3, 1, 2) if not is_w else t.permute(3, 2, 0, 1)
        return t.contiguous(memory_format=cl)

    tx = [to_t(x, False) for x in xs]
    tw = [to_t(w, True) for w in ws]
    sh, sw = case.stride

    def one(i):
        return F.conv2d(tx[i], tw[i], stride=(sh, sw), padding=pad)
    outs = [one(i) for i in range(R)]
    torch.cuda.synchronize()
    errs = []
    for i, ref in refs.items():
        r = torch.from_dlpack(ref)
        if nhwc:
            r = r.permute(0, 3, 1, 2)
        errs.append(float(torch.linalg.norm((outs[i] - r).flatten()) / torch.linalg.norm(r.flatten())))
    del outs
    for _ in range(warmup):
        for i in range(R):
            one(i)
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        res = [None] * R
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(R):
            res[i] = one(i)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / R)
        del res
    del tx, tw
    torch.cuda.empty_cache()
    return {"us": statistics.median(times), "samples_us": times, "rel_err": max(errs)}


def run_case(case: Case, *, impls: dict, ceilings: dict, explain: Callable | None = None,
             R: int = DEFAULT_R, rounds: int = DEFAULT_ROUNDS, warmup: int = DEFAULT_WARMUP,
             mem_cap_bytes: float = 2e9, max_bytes: float | None = None,
             use_torch: bool = False, seed: int = 0) -> dict:
    """Check and time one case. ``impls`` maps "fastconv", "lax_highest", "lax_default" to
    traceable ``fn(x, w, case, spec)`` (inject a stand-in for fastconv in tests)."""
    import jax
    spec = case.spec()
    d = spec.dims
    per_call = spec.min_bytes
    r = R
    note = None
    if r * per_call > mem_cap_bytes:
        r = max(MIN_R, int(mem_cap_bytes // per_call))
        note = (f"R lowered from {R} to {r} by the memory cap ({mem_cap_bytes / 1e9:.1f} GB)"
                if r * per_call <= mem_cap_bytes else
                f"R = {r} uses {r * per_call / 1e9:.1f} GB, over the memory cap "
                f"({mem_cap_bytes / 1e9:.1f} GB); kept at the minimum R = {MIN_R}")
    floor_s = roofline_floor_s(spec.flops, spec.min_bytes, ceilings["gemm_flop_per_s"],
                               ceilings["copy_bytes_per_s"])
    row = {
        "set": case.set, "name": case.name, "count": case.count, "batch": case.N,
        "N": case.N, "C": case.C, "H": case.H, "W": case.W, "M": case.M,
        "KH": case.KH, "KW": case.KW, "OH": d["OH"], "OW": d["OW"],
        "stride": list(case.stride), "padding": case.padding,
        "pads": [list(p) for p in spec.padding], "layout": case.layout,
        "flops": int(spec.flops), "min_bytes": int(spec.min_bytes),
        "floor_us": floor_s * 1e6, "R": r, "note": note,
        "fastconv_us": None, "lax_highest_us": None, "lax_default_us": None, "torch_us": None,
        "speedup_vs_lax_highest": None, "speedup_vs_lax_default": None,
        "speedup_vs_torch": None, "pct_roofline": None, "pct_roofline_by_impl": {},
        "rel_err": None, "correct": False, "rel_err_peers": {},
        "status": "ok", "error": None, "samples_us": {},
    }
    row.update(_explain_case(explain, case, spec))
    if max_bytes is not None and r * per_call > max_bytes:
        row.update(status="skipped", note=(
            f"needs {r * per_call / 1e9:.1f} GB for R = {r} inputs+outputs, over the guard "
            f"of {max_bytes / 1e9:.1f} GB (--max-gb)"))
        return row
    xs = ws = None
    try:
        xs, ws = _make_inputs(spec, r, seed)
        slots = sorted({0, r - 1})
        f_ref = _batched(impls["lax_highest"], case, spec)
        ref_all = f_ref(xs, ws)
        jax.block_until_ready(ref_all)
        refs = {i: ref_all[i] for i in slots}
        del ref_all
        f_fc = _batched(impls["fastconv"], case, spec)
        out_all = f_fc(xs, ws)
        jax.block_until_ready(out_all)
        err = max(_rel_err(out_all[i], refs[i]) for i in slots)
        del out_all
        row["rel_err"] = err
        row["correct"] = bool(err <= REL_TOL)
        f_def = _batched(impls["lax_default"], case, spec) if "lax_default" in impls else None
        if f_def is not None:
            o = f_def(xs, ws)
            row["rel_err_peers"]["lax_default"] = max(_rel_err(o[i], refs[i]) for i in slots)
            del o
        timings = {}
        if row["correct"]:
            timings["fastconv"] = _time_rounds(f_fc, (xs, ws), r, rounds, warmup)
        else:
            row["status"] = "wrong"
        timings["lax_highest"] = _time_rounds(f_ref, (xs, ws), r, rounds, warmup)
        if f_def is not None:
            timings["lax_default"] = _time_rounds(f_def, (xs, ws), r, rounds, warmup)
        if use_torch:
            try:
                t = _torch_case(case, spec, xs, ws, refs, r, rounds, warmup)
                timings["torch"] = t["samples_us"]
                row["rel_err_peers"]["torch"] = t["rel_err"]
            except Exception as e:  # noqa: BLE001 - the torch column is optional
                row["torch_error"] = f"{type(e).__name__}: {e}"[:300]
        del refs
        for k, v in timings.items():
            row[f"{k}_us"] = statistics.median(v)
            row["samples_us"][k] = v
            row["pct_roofline_by_impl"][k] = pct_of_roofline(floor_s, row[f"{k}_us"] * 1e-6)
        if row["correct"]:
            ours = row["fastconv_us"]
            for p in PEERS:
                row[f"speedup_vs_{p}"] = speedup(row[f"{p}_us"], ours)
            row["pct_roofline"] = pct_of_roofline(floor_s, ours * 1e-6)
    except Exception as e:  # noqa: BLE001 - one broken case must not lose the run
        row.update(status="error", error=f"{type(e).__name__}: {e}"[:500], correct=False,
                   fastconv_us=None, speedup_vs_lax_highest=None, speedup_vs_lax_default=None,
                   speedup_vs_torch=None, pct_roofline=None)
    finally:
        del xs, ws
    return row


def measure_overheads(impls: dict, explain: Callable | None, *, calls: int = 100) -> dict:
    """Planning cost of explain() (a new shape, a cached shape) and the wall time of one small
    un-batched jitted call, fastconv vs lax HIGHEST (dispatch included, that is the point)."""
    import jax
    import jax.numpy as jnp
    out: dict = {}
    if explain is not None:
        new = []
        for i in range(5):  # shapes nobody has asked for yet in this process
            c = Case("overhead", 1, 3 + i, 37 + 2 * i, 41 + 2 * i, 17 + i, 3, 3)
            spec = c.spec()
            t0 = time.perf_counter()
            _explain_case(explain, c, spec)
            new.append((time.perf_counter() - t0) * 1e6)
        cached = []
        for _ in range(50):
            t0 = time.perf_counter()
            _explain_case(explain, c, spec)
            cached.append((time.perf_counter() - t0) * 1e6)
        out["plan_new_shape_us"] = statistics.median(new)
        out["plan_cached_shape_us"] = statistics.median(cached)
    else:
        out["plan_new_shape_us"] = out["plan_cached_shape_us"] = None
    c = Case("overhead", 1, 8, 16, 16, 8, 3, 3, padding="SAME")
    spec = c.spec()
    k1, k2 = jax.random.split(jax.random.PRNGKey(3))
    x = jax.random.normal(k1, spec.lhs_shape, jnp.float32)
    w = jax.random.normal(k2, spec.rhs_shape, jnp.float32)
    out["dispatch_case"] = spec.describe()
    for name in ("fastconv", "lax_highest"):
        fn = impls[name]
        f = jax.jit(lambda x, w, fn=fn: fn(x, w, c, spec))
        ts = _time_rounds(f, (x, w), 1, calls, 5)
        out[f"dispatch_{name}_us"] = statistics.median(ts)
    f0 = jax.jit(lambda x: x + 1.0)
    out["jit_call_overhead_us"] = statistics.median(_time_rounds(f0, (x,), 1, calls, 5))
    return out


# -- the run ------------------------------------------------------------------------------


def _git_commit() -> tuple[str | None, bool | None]:
    """The source commit: $JAX_FASTCONV_GIT_COMMIT (set where the tree has no .git, e.g. a
    copied working tree), else `git` in the current directory."""
    if os.environ.get("JAX_FASTCONV_GIT_COMMIT"):
        return os.environ["JAX_FASTCONV_GIT_COMMIT"], None
    root = Path.cwd()
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=5).stdout.strip() or None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, timeout=5).stdout.strip()
        return sha, (bool(dirty) if sha else None)
    except Exception:  # noqa: BLE001
        return None, None


def _progress(items, enabled: bool):
    if not enabled:
        return items, None
    try:
        from tqdm import tqdm
        bar = tqdm(items, desc="bench", unit="case", file=sys.stderr, dynamic_ncols=True)
        return bar, bar
    except Exception:  # noqa: BLE001 - tqdm is an optional extra
        return items, None


def _write_json(d: dict, path: Path) -> None:
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w") as f:
        json.dump(d, f, indent=1, default=float, allow_nan=True)
    os.replace(tmp, path)


def run_benchmark(cases: Sequence[Case], *, out_dir: str | None = DEFAULT_OUT,
                  impls: dict | None = None, explain: Callable | None = None,
                  R: int = DEFAULT_R, rounds: int = DEFAULT_ROUNDS,
                  warmup: int = DEFAULT_WARMUP, mem_cap_gb: float = 2.0,
                  max_gb: float | None = None, use_torch: bool | None = None,
                  ceilings: dict | None = None, overheads: bool = True, plot: bool = True,
                  progress: bool = True, tag: str | None = None, extra_meta: dict | None = None,
                  log: Callable[[str], None] = print) -> dict:
    """Run the cases; write ``bench-<tag>.json`` (after every case, so a killed run keeps what
    it measured), ``.png`` and ``.md`` under ``out_dir``; return the result dict."""
    import jax
    if R < MIN_R:
        raise ValueError(f"R must be >= {MIN_R}, got {R}")
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    gpus = _gpu_devices()
    on_gpu = bool(gpus)
    dev = (gpus or jax.devices())[0]
    if impls is None:
        impls, explain0 = default_impls()
        explain = explain if explain is not None else explain0
    torch_info = "not requested"
    if use_torch is None:
        use_torch = on_gpu
    if use_torch:
        ok, torch_info = _torch_available()
        use_torch = ok and on_gpu
    if max_gb is None:
        mem = _device_memory_bytes() if on_gpu else None
        max_bytes = 0.4 * mem if mem else (24e9 if on_gpu else 4e9)
    else:
        max_bytes = max_gb * 1e9
    if ceilings is None:
        log("measuring ceilings (copy bandwidth, f32 GEMM at HIGHEST) ...")
        xla_copy = measure_copy_bandwidth(2 << 30 if on_gpu else 16 << 20)
        ceilings = {
            "copy_bytes_per_s": xla_copy,
            "copy_method": "XLA x + 1 over 2 GiB, wall clock",
            "xla_elementwise_copy_bytes_per_s": xla_copy,
            "gemm_flop_per_s": measure_gemm_rate(8192 if on_gpu else 256),
            "copy_bytes": (2 << 30) * 2 if on_gpu else (16 << 20) * 2,
            "gemm_n": 8192 if on_gpu else 256,
            "gemm_method": "chains of 2 and 6 dependent n^3 products at HIGHEST, time difference",
        }
        if on_gpu:
            # XLA's elementwise x + 1 stays well under the memory's copy rate on Hopper (2-3 TB/s
            # against 4.2 measured on an H200), which would inflate % of roofline: the ceiling is
            # the faster of it and the extension's cudaMemcpy D2D timed with CUDA events.
            event_copy = measure_event_copy_bandwidth()
            if event_copy is not None and event_copy > xla_copy:
                ceilings["copy_bytes_per_s"] = event_copy
                ceilings["copy_method"] = ("cudaMemcpy device-to-device timed with CUDA events "
                                           "(jax_fastconv calibrate), bytes read + written")
            ceilings["event_copy_bytes_per_s"] = event_copy
    sha, dirty = _git_commit()
    try:
        import jaxlib
        jaxlib_version = getattr(jaxlib, "__version__", None)
    except Exception:  # noqa: BLE001
        jaxlib_version = None
    try:
        from importlib.metadata import version
        fc_version = version("jax_fastconv")
    except Exception:  # noqa: BLE001
        fc_version = None
    stamp = _dt.datetime.now(_dt.timezone.utc)
    meta = {
        "schema_version": SCHEMA_VERSION,
        "device": getattr(dev, "device_kind", str(dev)), "platform": dev.platform,
        "gpu_found": on_gpu, "device_count": len(gpus) if on_gpu else len(jax.devices()),
        "jax_version": jax.__version__, "jaxlib_version": jaxlib_version,
        "jax_fastconv_version": fc_version, "python": _platform.python_version(),
        "date": stamp.isoformat(timespec="seconds"), "git_commit": sha, "git_dirty": dirty,
        "R": R, "R_min": MIN_R, "rounds": rounds, "warmup": warmup,
        "rel_tol": REL_TOL, "mem_cap_bytes": mem_cap_gb * 1e9, "max_bytes": max_bytes,
        "torch": torch_info if use_torch or torch_info != "not requested" else None,
        "torch_used": bool(use_torch),
        "ceilings": ceilings, "complete": False,
        "peers": dict(PEER_LABELS),
        "method": __doc__.split("Method (design.md, \"Measuring\"):", 1)[-1].strip(),
        "env": {k: os.environ[k] for k in ("XLA_PYTHON_CLIENT_PREALLOCATE",
                                           "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_FLAGS")
                if k in os.environ},
    }
    if extra_meta:
        meta.update(extra_meta)
    result = {"meta": meta, "overheads": {}, "cases": [], "summary": {}}
    json_path = png_path = md_path = None
    if out_dir:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        slug = "".join(ch if ch.isalnum() else "-" for ch in meta["device"].lower()).strip("-")
        base = f"bench-{tag or slug}-{stamp.strftime('%Y%m%d-%H%M%S')}"
        json_path = Path(out_dir) / f"{base}.json"
        png_path = Path(out_dir) / f"{base}.png"
        md_path = Path(out_dir) / f"{base}.md"
    if overheads:
        try:
            result["overheads"] = measure_overheads(impls, explain, calls=200 if on_gpu else 30)
        except Exception as e:  # noqa: BLE001
            result["overheads"] = {"error": f"{type(e).__name__}: {e}"[:300]}
    it, bar = _progress(list(cases), progress)
    for i, case in enumerate(it):
        if bar is not None:
            bar.set_postfix_str(f"{case.set} N{case.N} C{case.C} {case.H}x{case.W} M{case.M} "
                                f"K{case.KH}", refresh=False)
        row = run_case(case, impls=impls, ceilings=ceilings, explain=explain, R=R,
                       rounds=rounds, warmup=warmup, mem_cap_bytes=mem_cap_gb * 1e9,
                       max_bytes=max_bytes, use_torch=use_torch, seed=i)
        result["cases"].append(row)
        if row["status"] == "wrong":
            msg = (f"WRONG: {case.set} {row.get('name') or ''} N{case.N} C{case.C} "
                   f"{case.H}x{case.W} M{case.M} K{case.KH} {case.layout}: rel_err "
                   f"{row['rel_err']:.2e} > {REL_TOL:g} (not timed)")
            (bar.write(msg) if bar is not None else log(msg))
        if json_path is not None:
            result["summary"] = summarize(result["cases"])
            _write_json(result, json_path)
    if bar is not None:
        bar.close()
    result["summary"] = summarize(result["cases"])
    meta["complete"] = True
    if json_path is not None:
        meta["files"] = {"json": str(json_path), "md": str(md_path)}
        if plot and plot_result(result, str(png_path)):
            meta["files"]["png"] = str(png_path)
        elif plot:
            meta["files"]["png"] = None
            meta["plot_note"] = "matplotlib not installed: no PNG"
        md_path.write_text(markdown_summary(result))
        _write_json(result, json_path)
    validate_result(result)
    return result


# -- CLI ------------------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", dest="sets", action="extend", nargs="+", metavar="NAME",
                   help="layer set from benchmarks/layers.json (one or more, repeatable; 'all' = the "
                        "default sets: paper-single, paper-multi, resnet50, vgg16)")
    p.add_argument("--shape", action="append", metavar="N,C,H,W,M,KH,KW[,stride[,padding]]",
                   help="a case of your own (repeatable), e.g. 8,64,56,56,64,3,3,1,SAME; "
                        "alone, it replaces the default sets")
    p.add_argument("--batch", type=int, action="append", metavar="N",
                   help="batch size(s) for the sets (repeatable; default: each set's own, 1 and 32)")
    p.add_argument("--layout", default="NHWC", choices=["NHWC", "NCHW", "both", "BOTH"],
                   help="data layout: NHWC/HWIO (default, what JAX users use), NCHW/OIHW, or both")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"where the JSON, PNG and Markdown summary go (default {DEFAULT_OUT})")
    p.add_argument("--quick", action="store_true",
                   help="the cases marked quick in each set, at the first batch only")
    p.add_argument("--reps", type=int, default=DEFAULT_R, metavar="R",
                   help=f"calls on distinct inputs per jitted call (>= {MIN_R}; default {DEFAULT_R})")
    p.add_argument("--rounds", type=int, default=None,
                   help=f"timed rounds per impl, median reported (default {DEFAULT_ROUNDS})")
    p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help="untimed calls first")
    p.add_argument("--mem-cap-gb", type=float, default=2.0,
                   help="lower R (not below 16) to keep R x (in+filter+out) under this")
    p.add_argument("--max-gb", type=float, default=None,
                   help="skip cases whose 16 calls need more than this (default 40%% of the "
                        "device memory)")
    p.add_argument("--no-torch", action="store_true", help="leave out the torch/cuDNN column")
    p.add_argument("--no-plot", action="store_true", help="no PNG")
    p.add_argument("--sets-file", default=None, help="another layers.json")
    p.add_argument("--list-sets", action="store_true", help="print the sets and exit")
    p.add_argument("--tag", default=None, help="name for the output files (default: device)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def register_cli(subparsers) -> argparse.ArgumentParser:
    """Add ``bench`` to the package CLI (``python -m jax_fastconv bench``)."""
    p = subparsers.add_parser(
        "bench", help="benchmark fastconv against lax (and torch/cuDNN) with a roofline",
        description="Check every case against lax HIGHEST, then time fastconv and the peers "
                    "(R calls on distinct inputs per jit, median of rounds); write a table, "
                    "a JSON file with every number and a PNG plot.")
    add_arguments(p)
    p.set_defaults(func=cli_main)
    return p


def select_cases(args, sets: dict, *, on_gpu: bool, log=print) -> list[Case]:
    layouts = _layouts(args.layout)
    customs = [parse_shape(s, layout=lay) for s in (args.shape or []) for lay in layouts]
    names = list(args.sets or [])
    if "all" in names:
        names = [n for n in names if n != "all"] + list(sets.get("default_sets", []))
    names = list(dict.fromkeys(names))
    if not on_gpu:
        if names:
            log(f"(the sets {', '.join(names)} need a GPU; running '{CPU_SET}' instead)")
        names = [] if customs else [CPU_SET]
    elif not names and not customs:
        names = list(sets.get("default_sets", []))
    cases = []
    for n in names:
        cases += expand_set(sets, n, batches=args.batch, layouts=layouts, quick=args.quick)
    if customs and args.batch:
        customs = [dataclasses.replace(c, N=b) for c in customs for b in args.batch]
    return cases + customs


def cli_main(args) -> int:
    if getattr(args, "list_sets", False):
        sets = load_sets(args.sets_file)
        for name, s in sets["sets"].items():
            print(f"{name:14s} {len(s['cases']):3d} cases, batches {s.get('batches')}, "
                  f"padding {s.get('padding')}: {s.get('description', '')}")
        return 0
    if args.reps < MIN_R:
        print(f"error: --reps must be >= {MIN_R}", file=sys.stderr)
        return 2
    use_torch = not args.no_torch
    if use_torch:
        # torch shares the GPU: without this JAX takes 75% of it up front.
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    on_gpu = bool(_gpu_devices())
    if not on_gpu:
        print(f"No GPU found (JAX platform: {jax.devices()[0].platform}): running the CPU path "
              f"on a few small cases; these numbers say nothing about GPU performance.")
    sets = load_sets(args.sets_file)
    try:
        cases = select_cases(args, sets, on_gpu=on_gpu)
    except (KeyError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rounds = args.rounds if args.rounds is not None else DEFAULT_ROUNDS
    print(f"{len(cases)} cases on {jax.devices()[0].device_kind}; R = {args.reps}, "
          f"median of {rounds} rounds; sets file {sets['_path']}")
    result = run_benchmark(
        cases, out_dir=args.out, R=args.reps, rounds=rounds, warmup=args.warmup,
        mem_cap_gb=args.mem_cap_gb, max_gb=args.max_gb, use_torch=use_torch and on_gpu,
        plot=not args.no_plot, progress=not args.no_progress, tag=args.tag,
        extra_meta={"argv": sys.argv[1:], "quick": bool(args.quick)})
    print(format_table(result))
    m = result["meta"]
    c = m["ceilings"]
    print(f"\nceilings: copy {c['copy_bytes_per_s'] / 1e12:.2f} TB/s, f32 GEMM HIGHEST "
          f"{c['gemm_flop_per_s'] / 1e12:.2f} TFLOP/s; torch: {m['torch']}")
    oh = result["overheads"]
    if oh and "error" not in oh:
        def fmt(v):
            return "-" if v is None else f"{v:.1f} us"
        print(f"overheads: plan new shape {fmt(oh.get('plan_new_shape_us'))}, cached "
              f"{fmt(oh.get('plan_cached_shape_us'))}; one small jitted call: fastconv "
              f"{fmt(oh.get('dispatch_fastconv_us'))}, lax {fmt(oh.get('dispatch_lax_highest_us'))}")
    files = m.get("files") or {}
    for k in ("json", "png", "md"):
        if files.get(k):
            print(f"wrote {files[k]}")
    if not on_gpu:
        print("No GPU found: ran the CPU path only.")
    wrong = [r for r in result["cases"] if r["status"] in ("wrong", "error")]
    if wrong:
        print(f"{len(wrong)} case(s) wrong or failed: see 'status' in the JSON", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="jax-fastconv bench")
    add_arguments(p)
    return cli_main(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
