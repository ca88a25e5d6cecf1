"""``python -m jax_fastconv bench``: fastconv against lax (HIGHEST and DEFAULT) and torch/cuDNN.

Method (design.md, "Measuring"):

* Correct before fast: each case runs fastconv and lax HIGHEST on the same random normal
  inputs (never zeros); relative error ||out - ref|| / ||ref|| must be <= 1e-5 (float32),
  checked on the first and the last of the R calls. A wrong case is reported as wrong and is
  not timed (no fastconv time, no speedup, no % of roofline).
* Wall time per call ("wall/R", prescribed): R independent calls on R distinct inputs
  (distinct lhs *and* rhs) inside one ``jax.jit``, a Python-unrolled loop whose R outputs are
  all returned as a tuple: nothing can be CSE'd (distinct inputs) or dead-code eliminated
  (every output is live) and there is no reduction to subtract. Wall time of the call
  (``time.perf_counter`` around the call and ``block_until_ready``) / R; median of >= 7
  rounds after warm-up. The rounds are interleaved: each round times every jitted impl once
  (fastconv, lax HIGHEST, lax DEFAULT, in that order), so slow phases of the machine hit all
  impls alike, and each timed call follows an untimed call of the same impl (``settle``), so
  every impl is timed in its own steady state, as a jitted step repeated in a loop: right
  after another executable, a call ran 0.4-0.5 us per convolution slower on the device for
  our small batch-1 kernels under XLA's command buffers (timing.time_interleaved; results
  before 2026-11-26's round 21 were timed without it, ``meta.settle`` says which). Each
  jitted call carries a fixed cost (about 0.2 ms for small outputs, up to about 1 ms for
  large ones on an H200) that is in every impl's time as its 1/R share, so wall/R ratios
  are pulled towards 1 on fast cases.
* R per case (adaptive, the default): R = clamp(ceil(4000 us / max(floor_us, 10 us)), 16,
  R_max), R_max = 256 on a GPU (64 on a CPU), i.e. about 4 ms of roofline work per jitted
  call, so the fixed cost is a small share (measured on an H200: ~0.9 ms per call, 14 us per
  conv at R = 64, 3.5 us at R = 256; results before this rule had R_max = 64 on a GPU too,
  ``meta.R_max`` says which);
  ``--reps R`` (>= 16) fixes R instead. Then the memory cap: R x (input + filter + output
  bytes) is kept under ``--mem-cap-gb`` (default 12 on a GPU, 2 on a CPU) by lowering R, but
  never below 16; a case where R = 16 is over the cap says so in ``note``, and one over the
  hard guard (``--max-gb``, default 40% of device memory) is skipped. Each case records its R.
* Device span (CUPTI, on a GPU, with ``--device-time``): after the wall and stream rounds, one
  ``jax.profiler`` trace per case in which the compiled calls run 3 times each, interleaved,
  each followed by ``block_until_ready`` and a 10 ms sleep. The GPU stream kernel events are
  sorted by start and split into clusters at gaps > 1.5 ms; when there are as many clusters
  as calls, cluster i is call i. Where there are more (a host stall inside a call), the
  extra clusters merge across the smallest gaps when each is at most a third of every gap
  left between calls, and the note says so. ``device_us`` = median over an impl's calls of (last kernel
  end - first kernel start) / R, ``kernel_us`` = median of (sum of kernel durations) / R.
  This leaves out the host-side fixed cost of the call (it keeps the gaps between the
  call's kernels). When the clusters do not match the calls, or the trace fails, the case
  gets None and says why in ``device_time_note``. torch has no device span (its CUDA-event
  time is its own column).
* Stream span (CUDA events, on a GPU; ``--no-stream-time`` skips it): after the wall rounds, each
  jitted impl again with a stream stamp before its R convolutions and one after them
  (``stream_stamp``: custom calls that record CUDA events on XLA's stream; an
  optimization barrier holds every input until the first, the second takes every output),
  the same interleaved warm-up and rounds; ``stream_us`` = median (event time) / R. This is
  the R convolutions' device time as XLA runs them, CUDA graphs and the gaps between kernels
  included, without the call's host-side handling of its 2R arguments and R results (which
  wall/R includes, several us per convolution) and without a profiler (under a CUPTI trace
  XLA runs each command buffer's thunks one at a time, which spreads out a peer's several
  small kernels per convolution: lax's device span on small batch-1 layers exceeded its whole
  wall/R). None where the stamps are not built (``stream_time_note`` says why).
* The same process, harness and inputs time fastconv and the lax peers. torch (optional, when
  importable with CUDA) gets the same inputs through DLPack: cuDNN benchmark mode, TF32 off,
  R back-to-back calls between two CUDA events, / R, median of the rounds (its own rounds,
  after the jitted impls').
* Ceilings measured in the same run: device copy bandwidth (bytes read + written: the faster
  of XLA's ``x + 1`` over 2 GiB and, on a GPU, the extension's cudaMemcpy D2D timed with CUDA
  events; XLA's elementwise copy reaches only 2-3 of 4.2 TB/s on an H200) and the f32 GEMM
  rate at HIGHEST (chains of 2 and 6 dependent n^3 ``jnp.dot`` products, time difference).
  Roofline floor = max(FLOP / GEMM rate, min_bytes / copy bandwidth); % of roofline =
  floor / measured time (``pct_roofline``: wall/R; ``pct_roofline_device``: device span).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import glob
import json
import math
import os
import platform as _platform
import statistics
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

from . import stream_stamp as _stream_stamp
from .timing import SETTLE, random_pairs, time_interleaved as _time_interleaved
from .bench_report import (DEVICE_PEERS, PEER_LABELS, PEERS, SCHEMA_VERSION,  # noqa: F401
                           format_table, geomean,
                           markdown_summary, pct_of_roofline, plot_result, roofline_floor_s,
                           speedup, summarize, validate_result)

REL_TOL = 1e-5
MIN_R = 16
MAX_R = 64                 # adaptive R: at most this many calls per jitted call (CPU)
GPU_MAX_R = 256            # on a GPU: the call's ~0.9 ms fixed cost is 3.5 us per conv at 256
TARGET_ROUND_US = 4000.0   # adaptive R: about this much roofline work per jitted call
FLOOR_MIN_US = 10.0        # adaptive R: floors below this count as this
DEFAULT_R = 32             # kept for callers that pass it; the CLI default is adaptive
DEFAULT_MEM_CAP_GB = 12.0  # on a GPU
CPU_MEM_CAP_GB = 2.0


def r_rule(r_max: int = MAX_R) -> str:
    return (f"R = clamp(ceil({TARGET_ROUND_US:g} us / max(floor_us, {FLOOR_MIN_US:g} us)), "
            f"{MIN_R}, {r_max}), then lowered (not below {MIN_R}) to keep R x (input + filter + "
            f"output bytes) under the memory cap")


R_RULE = r_rule()
DEVICE_CALLS = 3           # traced calls per impl (device span)
DEVICE_SLEEP_S = 10e-3     # host sleep after each traced call
DEVICE_GAP_NS = 1.5e6      # kernel clusters split at gaps longer than this
DEVICE_MERGE_RATIO = 3.0   # extra clusters merge across gaps <= 1/3 of every gap between calls
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
        return {"method": None, "path": None, "reason": "no explain() available", "plan": None,
                "autotune": None}
    from jax import lax
    from .spec import as_dimension_numbers
    try:
        e = explain(spec.lhs_shape, spec.rhs_shape, case.stride, case.padding,
                    dimension_numbers=as_dimension_numbers(spec),
                    precision=lax.Precision.HIGHEST)
    except Exception as err:  # noqa: BLE001 - reported, never fatal
        return {"method": None, "path": None, "reason": f"explain failed: {err!r}", "plan": None,
                "autotune": None}
    path = getattr(e, "path", None)
    plan = getattr(e, "plan", None)
    method = getattr(plan, "method", None) if plan is not None else None
    # The autotuner's own timing of the kernel against lax HIGHEST (jax_fastconv/autotune.py):
    # kept so the report can show the kernel alone where lax was chosen.
    measured = getattr(e, "measured", None)
    autotune = None
    if measured is not None:
        autotune = {"use_kernel": bool(measured.use_kernel), "kernel_us": measured.kernel_us,
                    "lax_us": measured.lax_us, "R": measured.R, "note": measured.note or None}
        if getattr(measured, "gemm_us", None) is not None:   # timed against the patch GEMM
            autotune["gemm_us"] = measured.gemm_us
        if hasattr(measured, "plan_us"):
            # a choice among launches of our kernel: kernel_us and plan_us are device us per
            # launch (CUDA events, autotune.measure_plans), R is 0 (no per-call inputs)
            rec = measured.record()
            autotune["plan_us"], autotune["plan"] = rec["plan_us"], rec["chosen"]
    if path == "lax":
        method = "lax-autotuned" if measured is not None else "lax-fallback"
    elif path == "gemm":
        method = "patch-gemm-autotuned" if measured is not None else "patch-gemm"
    desc = None
    if plan is not None and hasattr(plan, "describe"):
        try:
            desc = plan.describe()
        except Exception:  # noqa: BLE001
            desc = None
    return {"method": method, "path": path, "reason": getattr(e, "reason", None), "plan": desc,
            "autotune": autotune}


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


def _batched(fn: ConvFn, case: Case, spec):
    import jax

    def run(xs, ws):
        return tuple(fn(x, w, case, spec) for x, w in zip(xs, ws))
    return jax.jit(run)


def adaptive_reps(floor_us: float, *, target_us: float = TARGET_ROUND_US,
                  r_min: int = MIN_R, r_max: int = MAX_R) -> int:
    """R for a case whose roofline floor is ``floor_us`` per conv: enough calls for about
    ``target_us`` of roofline work per jitted call, so the call's fixed cost is a small share:
    clamp(ceil(target_us / max(floor_us, 10 us)), r_min, r_max)."""
    if not floor_us > 0 or not math.isfinite(floor_us):
        return r_max
    return int(min(r_max, max(r_min, math.ceil(target_us / max(floor_us, FLOOR_MIN_US)))))


def choose_reps(floor_us: float, per_call_bytes: float, *, R: int | None = None,
                mem_cap_bytes: float = DEFAULT_MEM_CAP_GB * 1e9,
                r_max: int = MAX_R) -> tuple[int, str | None]:
    """(R, note) of one case: ``R`` when given (fixed, ``--reps``), else ``adaptive_reps``;
    then lowered to keep R x ``per_call_bytes`` under ``mem_cap_bytes``, never below MIN_R
    (the note says when R was lowered, or when even MIN_R is over the cap)."""
    want = int(R) if R is not None else adaptive_reps(floor_us, r_max=r_max)
    r = want
    note = None
    if r * per_call_bytes > mem_cap_bytes:
        r = max(MIN_R, min(want, int(mem_cap_bytes // per_call_bytes)))
        note = (f"R lowered from {want} to {r} by the memory cap ({mem_cap_bytes / 1e9:.1f} GB)"
                if r * per_call_bytes <= mem_cap_bytes else
                f"R = {r} uses {r * per_call_bytes / 1e9:.1f} GB, over the memory cap "
                f"({mem_cap_bytes / 1e9:.1f} GB); kept at the minimum R = {MIN_R}")
    return r, note


def _time_rounds(f, args, R: int, rounds: int, warmup: int) -> list[float]:
    """Per-call microseconds of each round of one fn: wall time of one call of R convs / R."""
    return _time_interleaved({"f": f}, args, R, rounds, warmup)["f"]


# -- device time (CUPTI trace) ----------------------------------------------------------------

KernelEvent = tuple  # (start_ns, duration_ns, name)


def cluster_kernel_events(events: Sequence[KernelEvent], *,
                          gap_ns: float = DEVICE_GAP_NS) -> list[dict]:
    """Group kernel events into clusters: sorted by start, a new cluster begins where a kernel
    starts more than ``gap_ns`` after every kernel before it has ended. Exact duplicate events
    count once. Each cluster: start_ns, end_ns, span_ns, busy_ns (sum of durations), kernels,
    names (distinct kernel names, in order of first start)."""
    evs = sorted({(float(s), float(d), str(n)) for s, d, n in events})
    clusters: list[dict] = []
    cur = None
    for st, du, name in evs:
        if cur is None or st - cur["end_ns"] > gap_ns:
            cur = {"start_ns": st, "end_ns": st + du, "busy_ns": 0.0, "kernels": 0, "names": []}
            clusters.append(cur)
        cur["end_ns"] = max(cur["end_ns"], st + du)
        cur["busy_ns"] += du
        cur["kernels"] += 1
        if name not in cur["names"]:
            cur["names"].append(name)
    for c in clusters:
        c["span_ns"] = c["end_ns"] - c["start_ns"]
    return clusters


def _merge_clusters(clusters: list[dict], n: int,
                    ratio: float = DEVICE_MERGE_RATIO) -> tuple[list[dict], str | None]:
    """``clusters`` (in time order, more than ``n``) merged into ``n`` at their smallest gaps,
    with a note, when every merged gap is at most 1/``ratio`` of every gap kept (a host stall
    inside one call, not a call boundary: the calls are a sleep apart); else unchanged."""
    gaps = [b["start_ns"] - a["end_ns"] for a, b in zip(clusters, clusters[1:])]
    order = sorted(range(len(gaps)), key=gaps.__getitem__)
    merged, kept = order[:len(clusters) - n], order[len(clusters) - n:]
    if kept and max(gaps[i] for i in merged) * ratio > min(gaps[i] for i in kept):
        return clusters, None
    out: list[dict] = []
    for i, c in enumerate(clusters):
        if i == 0 or (i - 1) not in merged:
            out.append(dict(c, names=list(c["names"])))
            continue
        cur = out[-1]
        cur["end_ns"] = max(cur["end_ns"], c["end_ns"])
        cur["span_ns"] = cur["end_ns"] - cur["start_ns"]
        cur["busy_ns"] += c["busy_ns"]
        cur["kernels"] += c["kernels"]
        cur["names"] += [x for x in c["names"] if x not in cur["names"]]
    note = (f"{len(clusters)} clusters for {n} traced calls: merged across the "
            f"{len(merged)} smallest gaps (<= {max(gaps[i] for i in merged) / 1e6:.2f} ms; "
            f"gaps between calls >= {min(gaps[i] for i in kept) / 1e6:.2f} ms)" if kept else None)
    return out, note


def device_times_from_events(events: Sequence[KernelEvent], calls: Sequence[str], R: int, *,
                             gap_ns: float = DEVICE_GAP_NS) -> dict:
    """Per-conv device times from the kernel events of a trace in which the jitted calls named
    by ``calls`` (impl names, in call order, R convs each) ran separated by idle gaps.

    Returns {"device_us": {impl: median span / R}, "kernel_us": {impl: median busy / R},
    "device_samples_us": {impl: [span / R per call]}, "kernels": {impl: {"per_conv": median
    kernel count / R, "names": [...]}}, "note": None, why the values are None, or which
    clusters were merged}. The clusters are assigned to the calls in order only when there are
    as many clusters as calls, after ``_merge_clusters`` where there are more; otherwise every
    value is None and the note says what was found."""
    impls = list(dict.fromkeys(calls))
    res: dict = {"device_us": {k: None for k in impls}, "kernel_us": {k: None for k in impls},
                 "device_samples_us": {}, "kernels": {}, "note": None}
    if not calls:
        res["note"] = "no calls were traced"
        return res
    clusters = cluster_kernel_events(events, gap_ns=gap_ns)
    if not clusters:
        res["note"] = "no GPU kernel events in the trace"
        return res
    if len(clusters) > len(calls):
        clusters, res["note"] = _merge_clusters(clusters, len(calls))
    if len(clusters) != len(calls):
        res["note"] = (f"{len(clusters)} clusters of GPU kernels (split at gaps > "
                       f"{gap_ns / 1e6:g} ms) for {len(calls)} traced calls: not assigned")
        return res
    for k in impls:
        mine = [c for c, name in zip(clusters, calls) if name == k]
        spans = [c["span_ns"] / 1e3 / R for c in mine]
        res["device_samples_us"][k] = spans
        res["device_us"][k] = statistics.median(spans)
        res["kernel_us"][k] = statistics.median(c["busy_ns"] / 1e3 / R for c in mine)
        res["kernels"][k] = {"per_conv": statistics.median(c["kernels"] for c in mine) / R,
                             "names": [n[:100] for n in mine[0]["names"][:8]]}
    return res


def kernel_events_from_profile(pd, *, plane_contains: str = "GPU",
                               line_contains: str = "Stream") -> list[KernelEvent]:
    """(start_ns, duration_ns, name) of the events on the lines whose name contains
    ``line_contains`` of the planes whose name contains ``plane_contains`` of a
    ``jax.profiler.ProfileData`` (GPU device planes are "/device:GPU:<i>", their kernel lines
    "Stream #<n>...")."""
    out = []
    for plane in pd.planes:
        if plane_contains not in plane.name:
            continue
        for line in plane.lines:
            if line_contains not in line.name:
                continue
            for e in line.events:
                out.append((float(e.start_ns), float(e.duration_ns), str(e.name)))
    return out


def _trace_kernel_events(body: Callable[[], None], *, plane_contains: str = "GPU",
                         line_contains: str = "Stream") -> list[KernelEvent]:
    """Run ``body`` inside one ``jax.profiler`` trace (a temporary directory, deleted after)
    and return the kernel events of the GPU planes."""
    import jax
    d = tempfile.mkdtemp(prefix="fastconv-trace-")
    try:
        opts = jax.profiler.ProfileOptions()
        # Device (CUPTI) events only: the Python tracer would record every Python call of the
        # process and made one trace cost seconds.
        opts.python_tracer_level = 0
        opts.host_tracer_level = 1
        with jax.profiler.trace(d, profiler_options=opts):
            body()
        pbs = sorted(glob.glob(os.path.join(d, "**", "*.xplane.pb"), recursive=True))
        if not pbs:
            raise RuntimeError("the trace wrote no .xplane.pb file")
        events = []
        for pb in pbs:
            pd = jax.profiler.ProfileData.from_file(pb)
            events += kernel_events_from_profile(pd, plane_contains=plane_contains,
                                                 line_contains=line_contains)
        return events
    finally:
        shutil.rmtree(d, ignore_errors=True)


def measure_device_time(fns: dict, args, R: int, *, calls: int = DEVICE_CALLS,
                        sleep_s: float = DEVICE_SLEEP_S, gap_ns: float = DEVICE_GAP_NS,
                        tracer: Callable | None = None) -> dict:
    """Device span and kernel time per conv of each (already compiled) fn in ``fns``: one
    trace in which every fn runs ``calls`` times, interleaved, each call followed by
    ``block_until_ready`` and a ``sleep_s`` sleep, then ``device_times_from_events``. Never
    raises: a failed trace gives None values and a note."""
    import jax
    order: list[str] = []

    def body():
        for _ in range(calls):
            for n, f in fns.items():
                out = f(*args)
                jax.block_until_ready(out)
                del out
                order.append(n)
                time.sleep(sleep_s)
    try:
        events = (tracer or _trace_kernel_events)(body)
    except Exception as e:  # noqa: BLE001 - the device column is optional, never fatal
        res = device_times_from_events([], list(fns), R)
        res["note"] = f"trace failed: {type(e).__name__}: {e}"[:300]
        return res
    try:
        return device_times_from_events(events, order, R, gap_ns=gap_ns)
    except Exception as e:  # noqa: BLE001
        res = device_times_from_events([], list(fns), R)
        res["note"] = f"parsing the trace failed: {type(e).__name__}: {e}"[:300]
        return res


def measure_stream_time(fns: dict, args, R: int, rounds: int, warmup: int, *,
                        stamps=None, settle: int = SETTLE) -> dict:
    """Stream span per conv of each jitted fn in ``fns`` (``stream_stamp``): each wrapped in
    two stamps (slots 2i, 2i + 1), then timed like the wall rounds (interleaved, ``warmup``,
    ``rounds`` and ``settle``) by the events' time / R. Never raises: a failure gives None
    values and a note. ``stamps``: the stamp module (None: ``stream_stamp``; a stand-in in
    tests)."""
    import jax
    stamps = stamps or _stream_stamp
    slots = {n: 2 * i for i, n in enumerate(fns)}
    res: dict = {"stream_us": {n: None for n in fns}, "stream_samples_us": {}, "note": None}
    try:
        wrapped = {n: jax.jit(stamps.stamped(f, slots[n])) for n, f in fns.items()}
        samples = _time_interleaved(wrapped, args, R, rounds, warmup,
                                    read=lambda n: stamps.elapsed_us(slots[n]), settle=settle)
    except Exception as e:  # noqa: BLE001 - the stream column is optional, never fatal
        res["note"] = f"stream stamps failed: {type(e).__name__}: {e}"[:300]
        return res
    res["stream_us"] = {n: statistics.median(v) for n, v in samples.items()}
    res["stream_samples_us"] = samples
    return res


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
             R: int | None = None, rounds: int = DEFAULT_ROUNDS, warmup: int = DEFAULT_WARMUP,
             mem_cap_bytes: float = DEFAULT_MEM_CAP_GB * 1e9, max_bytes: float | None = None,
             use_torch: bool = False, device_time: bool = False,
             device_time_skip_note: str | None = None, stream_time: bool = False,
             seed: int = 0, r_max: int = MAX_R, stamps=None) -> dict:
    """Check and time one case. ``impls`` maps "fastconv", "lax_highest", "lax_default" to
    traceable ``fn(x, w, case, spec)`` (inject a stand-in for fastconv in tests). ``R``: None
    for the adaptive R (``choose_reps``, at most ``r_max``), else that R (>= 16; both lowered
    by the memory cap).
    ``device_time``: also trace the jitted calls for the device span (GPU only);
    ``stream_time``: also time them by stream stamps (``measure_stream_time``, GPU only)."""
    import jax
    spec = case.spec()
    d = spec.dims
    per_call = spec.min_bytes
    floor_s = roofline_floor_s(spec.flops, spec.min_bytes, ceilings["gemm_flop_per_s"],
                               ceilings["copy_bytes_per_s"])
    r, note = choose_reps(floor_s * 1e6, per_call, R=R, mem_cap_bytes=mem_cap_bytes, r_max=r_max)
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
        "device_us": {}, "kernel_us": {}, "speedup_device_vs_lax_highest": None,
        "speedup_device_vs_lax_default": None, "pct_roofline_device": None,
        "device_time_note": None if device_time else (device_time_skip_note or "not measured"),
        "stream_us": {}, "speedup_stream_vs_lax_highest": None,
        "speedup_stream_vs_lax_default": None, "pct_roofline_stream": None,
        "stream_time_note": None if stream_time else "not measured",
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
        xs, ws = random_pairs(spec.lhs_shape, spec.rhs_shape, r, seed)
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
        timed = {}   # the jitted impls, in the order each round calls them
        if row["correct"]:
            timed["fastconv"] = f_fc
        else:
            row["status"] = "wrong"
        timed["lax_highest"] = f_ref
        if f_def is not None:
            timed["lax_default"] = f_def
        timings = _time_interleaved(timed, (xs, ws), r, rounds, warmup)
        if use_torch:
            try:
                t = _torch_case(case, spec, xs, ws, refs, r, rounds, warmup)
                timings["torch"] = t["samples_us"]
                row["rel_err_peers"]["torch"] = t["rel_err"]
            except Exception as e:  # noqa: BLE001 - the torch column is optional
                row["torch_error"] = f"{type(e).__name__}: {e}"[:300]
        del refs
        if stream_time:
            st = measure_stream_time(timed, (xs, ws), r, rounds, warmup, stamps=stamps)
            row["stream_us"] = st["stream_us"]
            row["stream_samples_us"] = st["stream_samples_us"]
            row["stream_time_note"] = st["note"]
        if device_time:   # last: nothing else of this case runs after a trace
            dt = measure_device_time(timed, (xs, ws), r)
            row["device_us"] = dt["device_us"]
            row["kernel_us"] = dt["kernel_us"]
            row["device_samples_us"] = dt["device_samples_us"]
            row["device_kernels"] = dt["kernels"]
            row["device_time_note"] = dt["note"]
        for k, v in timings.items():
            row[f"{k}_us"] = statistics.median(v)
            row["samples_us"][k] = v
            row["pct_roofline_by_impl"][k] = pct_of_roofline(floor_s, row[f"{k}_us"] * 1e-6)
        if row["correct"]:
            ours = row["fastconv_us"]
            for p in PEERS:
                row[f"speedup_vs_{p}"] = speedup(row[f"{p}_us"], ours)
            row["pct_roofline"] = pct_of_roofline(floor_s, ours * 1e-6)
            for clock in ("device", "stream"):
                times = row[f"{clock}_us"]
                ours_c = times.get("fastconv")
                for p in DEVICE_PEERS:
                    row[f"speedup_{clock}_vs_{p}"] = speedup(times.get(p), ours_c)
                row[f"pct_roofline_{clock}"] = pct_of_roofline(
                    floor_s, None if ours_c is None else ours_c * 1e-6)
    except Exception as e:  # noqa: BLE001 - one broken case must not lose the run
        row.update(status="error", error=f"{type(e).__name__}: {e}"[:500], correct=False,
                   fastconv_us=None, speedup_vs_lax_highest=None, speedup_vs_lax_default=None,
                   speedup_vs_torch=None, pct_roofline=None, speedup_device_vs_lax_highest=None,
                   speedup_device_vs_lax_default=None, pct_roofline_device=None,
                   speedup_stream_vs_lax_highest=None, speedup_stream_vs_lax_default=None,
                   pct_roofline_stream=None)
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
                  R: int | None = None, rounds: int = DEFAULT_ROUNDS,
                  warmup: int = DEFAULT_WARMUP, mem_cap_gb: float | None = None,
                  max_gb: float | None = None, use_torch: bool | None = None,
                  device_time: bool = False, stream_time: bool = True,
                  ceilings: dict | None = None, overheads: bool = True, plot: bool = True,
                  progress: bool = True, tag: str | None = None, extra_meta: dict | None = None,
                  log: Callable[[str], None] = print) -> dict:
    """Run the cases; write ``bench-<tag>.json`` (after every case, so a killed run keeps what
    it measured), ``.png`` and ``.md`` under ``out_dir``; return the result dict.

    ``R``: None for the adaptive R per case (``choose_reps``), else a fixed R >= 16.
    ``mem_cap_gb``: None for 12 on a GPU, 2 on a CPU. ``device_time``: trace each case for
    the device span (only on a GPU); ``stream_time``: time each case by stream stamps too
    (only on a GPU with the CUDA module)."""
    import jax
    if R is not None and R < MIN_R:
        raise ValueError(f"R must be >= {MIN_R}, got {R}")
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    gpus = _gpu_devices()
    on_gpu = bool(gpus)
    dev = (gpus or jax.devices())[0]
    if mem_cap_gb is None:
        mem_cap_gb = DEFAULT_MEM_CAP_GB if on_gpu else CPU_MEM_CAP_GB
    trace_device = bool(device_time and on_gpu)
    stream_device = bool(stream_time and on_gpu and _stream_stamp.available())
    stream_skip_note = (None if stream_device else
                        "not measured: no GPU" if not on_gpu else
                        "not measured (--no-stream-time)" if not stream_time else
                        "not measured: the CUDA module has no stream stamps")
    r_max = GPU_MAX_R if on_gpu else MAX_R
    device_skip_note = (None if trace_device else
                        "not measured: no GPU" if not on_gpu else
                        "not measured (no --device-time)")
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
        "R": R, "R_min": MIN_R, "R_max": r_max if R is None else R,
        "R_mode": "adaptive" if R is None else "fixed",
        "R_target_round_us": TARGET_ROUND_US if R is None else None,
        "R_rule": (r_rule(r_max) if R is None else
                   f"R = {R} (--reps), then lowered (not below {MIN_R}) to keep R x (input + "
                   f"filter + output bytes) under the memory cap"),
        "round_order": "interleaved: each round times fastconv, lax_highest, lax_default once, "
                       "in that order, each timed call right after `settle` untimed calls of "
                       "the same impl (torch afterwards, its own rounds)",
        "settle": SETTLE,
        "rounds": rounds, "warmup": warmup,
        "rel_tol": REL_TOL, "mem_cap_bytes": mem_cap_gb * 1e9, "max_bytes": max_bytes,
        "torch": torch_info if use_torch or torch_info != "not requested" else None,
        "torch_used": bool(use_torch),
        "device_time": {
            "measured": trace_device, "note": device_skip_note,
            "calls_per_impl": DEVICE_CALLS, "sleep_ms": DEVICE_SLEEP_S * 1e3,
            "cluster_gap_ms": DEVICE_GAP_NS / 1e6,
            "method": "one jax.profiler (CUPTI) trace per case; GPU stream kernel events "
                      "clustered at idle gaps, one cluster per call; device_us = median "
                      "(cluster end - start) / R, kernel_us = median (sum of kernel "
                      "durations) / R"},
        "stream_time": {
            "measured": stream_device,
            "note": stream_skip_note,
            "method": "CUDA events recorded on XLA's stream by custom calls before and after "
                      "the R convolutions of each jitted call (stream_stamp), interleaved "
                      "rounds as for wall/R; stream_us = median (event time) / R"},
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
        t_case = time.perf_counter()
        row = run_case(case, impls=impls, ceilings=ceilings, explain=explain, R=R,
                       rounds=rounds, warmup=warmup, mem_cap_bytes=mem_cap_gb * 1e9,
                       max_bytes=max_bytes, use_torch=use_torch, device_time=trace_device,
                       device_time_skip_note=device_skip_note, stream_time=stream_device,
                       seed=i, r_max=r_max)
        row["case_seconds"] = round(time.perf_counter() - t_case, 2)  # harness cost, not a timing
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
    if overheads and trace_device and isinstance(result["overheads"], dict) \
            and "error" not in result["overheads"]:
        # The same small jitted calls again, after the per-case traces: a profiler that left
        # a cost on every launch would show here (compare with the numbers before).
        try:
            after = measure_overheads(impls, None, calls=200)
            result["overheads"]["after_device_traces"] = {
                k: after[k] for k in ("dispatch_fastconv_us", "dispatch_lax_highest_us",
                                      "jit_call_overhead_us")}
        except Exception as e:  # noqa: BLE001
            result["overheads"]["after_device_traces"] = {"error": f"{type(e).__name__}: {e}"[:300]}
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
    p.add_argument("--reps", type=int, default=None, metavar="R",
                   help=f"calls on distinct inputs per jitted call, fixed (>= {MIN_R}; default: "
                        f"adaptive per case, clamp(ceil({TARGET_ROUND_US:g} us / max(floor, "
                        f"{FLOOR_MIN_US:g} us)), {MIN_R}, {MAX_R}))")
    p.add_argument("--rounds", type=int, default=None,
                   help=f"timed rounds (each times every jitted impl once), median reported "
                        f"(default {DEFAULT_ROUNDS})")
    p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help="untimed calls first")
    p.add_argument("--mem-cap-gb", type=float, default=None,
                   help=f"lower R (not below {MIN_R}) to keep R x (in+filter+out) under this "
                        f"(default {DEFAULT_MEM_CAP_GB:g} on a GPU, {CPU_MEM_CAP_GB:g} on a CPU)")
    p.add_argument("--max-gb", type=float, default=None,
                   help="skip cases whose R calls (R after the memory cap) need more than this "
                        "(default 40%% of the device memory)")
    p.add_argument("--no-torch", action="store_true", help="leave out the torch/cuDNN column")
    p.add_argument("--no-stream-time", action="store_true",
                   help="skip the stream span (CUDA events recorded on XLA's stream around each "
                        "call's convolutions; on a GPU only)")
    p.add_argument("--device-time", action="store_true",
                   help="also trace each case with the profiler (CUPTI) for the device span and "
                        "kernel names (on a GPU; off by default: the stream span measures device "
                        "time without a profiler, and one H200 run with both lost the device "
                        "spans after 30 cases to a profile over 2 GB)")
    p.add_argument("--no-device-time", action="store_true", help=argparse.SUPPRESS)  # the old default
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
                    "(R calls on distinct inputs per jit, median of interleaved rounds; on a "
                    "GPU also the CUPTI device span); write a table, a JSON file with every "
                    "number and a PNG plot.")
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
    if args.reps is not None and args.reps < MIN_R:
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
    r_text = (f"R = {args.reps}" if args.reps is not None else
              f"R adaptive ({MIN_R}-{MAX_R}, ~{TARGET_ROUND_US / 1e3:g} ms of roofline work "
              f"per call)")
    print(f"{len(cases)} cases on {jax.devices()[0].device_kind}; {r_text}, median of "
          f"{rounds} interleaved rounds; sets file {sets['_path']}")
    result = run_benchmark(
        cases, out_dir=args.out, R=args.reps, rounds=rounds, warmup=args.warmup,
        mem_cap_gb=args.mem_cap_gb, max_gb=args.max_gb, use_torch=use_torch and on_gpu,
        device_time=args.device_time and not args.no_device_time,
        stream_time=not args.no_stream_time,
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
        aft = oh.get("after_device_traces") or {}
        if aft and "error" not in aft:
            print(f"  the same after the device traces: fastconv "
                  f"{fmt(aft.get('dispatch_fastconv_us'))}, lax "
                  f"{fmt(aft.get('dispatch_lax_highest_us'))}")
    dt = m.get("device_time") or {}
    if dt.get("measured"):
        n_dev = sum(1 for row in result["cases"]
                    if (row.get("device_us") or {}).get("lax_highest"))
        print(f"device span (CUPTI): {n_dev} of {len(result['cases'])} cases have one; see "
              f"device_time_note in the JSON for the others")
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
