"""Measured choice, per shape and device, between the planned kernel and lax at HIGHEST.

The planner's model (paper sections 2.2-3.2) sizes our kernels; it cannot see what cuDNN
does. At batch 32 with K = 3/5 and many channels cuDNN runs FFT or Winograd algorithms that
need fewer multiplications than any direct FP32 convolution (benchmarks/notes/
multi_channel.md), and on tiny layers both sides cost the same fixed launch time. So, like
XLA's and cuDNN's own autotuning, the first time a GPU shape is traced both candidates are
timed and the faster one is used from then on:

* the same harness idea as the benchmark: R distinct random inputs inside one compiled call
  (AOT-compiled, so it runs concretely even while an outer jit is tracing), warm-up, then
  interleaved rounds. The fastest round of each counts: host noise on this kind of machine is
  additive and bimodal (a median of 7 flipped small-layer choices between runs), and the
  fixed cost of one call is the same for both. The kernel is kept unless lax is faster by
  more than TIE (3%): on a near-tie our float32 FMAs and no flapping between runs win;
* the answer is cached per process and on disk (``cache_dir()/autotune-<device>.json``,
  keyed by the convolution, the plan and the package/jax versions); delete the file to
  measure again;
* only where lax can win: multi-channel layers with K >= 3 (KH x KW >= 9), C >= 32 and at
  least 1 GFLOP, where cuDNN's reduced-multiplication algorithms apply. Everywhere else the
  kernel won on every paper layer on the H200 (benchmarks/results/, 2026-11-21) or the layer is
  bound by the per-call host cost, and a measurement would cost seconds (6-21 s per new shape
  on an H200, XLA autotuning the lax convolution it compiles and, until timing.random_pairs
  drew them eagerly, XLA folding the inputs' draw on the host) for nothing;
* patchify layers (stride = kernel size, windows inside the map) that a kernel covers are
  timed the same way against the patch GEMM (patch_gemm.py, ``choose_gemm``): neither won on
  every ConvNeXt stem / downsampling shape on the H100 (benchmarks/notes/patch_gemm.md);
* ``JAX_FASTCONV_AUTOTUNE_CLOCK=stream`` times these two choices by stream stamps instead
  (stream_stamp.py: CUDA events on XLA's stream around the R convolutions, device time
  without the call's host cost; its choices are cached under their own keys). Opt-in: the
  benchmark's stream span ran on an H200, this use of it not yet;
* ``JAX_FASTCONV_AUTOTUNE=0`` turns it off (always the kernel, e.g. to test the kernels);
* a lax choice keeps float32 accuracy: lax runs at ``Precision.HIGHEST`` whatever precision
  the caller passed (DEFAULT would be TF32 on Hopper).

The same cache picks among launches of our own single-channel kernel (``choose_plan``): the
planned plan and a few variants of it that won on some paper layers in the H200 sweeps
(``plan_single_channel.VARIANTS``; up to 0.75x the planned time, by shape, with no rule that
separates them). These are timed in device time, not by the wall clock: the CUDA extension's
``time_plans`` (cuda/plan_timer.cc) runs each plan's launches back to back in a CUDA graph (as
XLA's command buffers run the kernel) between two CUDA events, on buffers of its own rotated
over up to 256 sets whose outputs exceed 2x the L2 cache and 6 GiB where the memory budget allows
(a launch does not find the previous ones' data in L2 nor write pages touched in the last GBs, as
in a network whose activations span GBs: over 2x L2 only, launches of many small tiles measured
up to 1.29x faster than they ran in the benchmark), in interleaved rounds; each plan counts with the
median of its rounds (device time has no additive host noise for a minimum to remove).
The wall clock of jitted calls could not resolve a few percent of kernel time on mid-size
layers (it switched b32 56x56 K3 NCHW from 34.2 to 36.0 us), compiled every candidate and made
the benchmark run twice as long. Layers with >= PLAN_MIN_BYTES (4 MiB) of traffic are measured:
the measurement costs tens of milliseconds at the first trace of a shape (11 rounds of about
1 ms per plan), the events resolve kernels of about 1 us and up, and below that the layer is
bound by the per-call cost. A variant replaces the plan only if it is more than PLAN_TIE (1%)
faster: interleaved device-time medians resolve that (the lax choice keeps TIE = 3%: its
wall-clock rounds carry host noise).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import threading
from pathlib import Path

from . import stream_stamp
from .timing import random_pairs, time_interleaved

ENV = "JAX_FASTCONV_AUTOTUNE"
# The clock of the kernel/lax and kernel/GEMM choices: "wall" (default: the wall time of the
# compiled call) or "stream" (stream_stamp's CUDA events around the call's R convolutions:
# device time without the call's host cost, which on small layers is most of the wall time and
# blurs near-ties). "stream" has not yet been run on a GPU inside the autotuner (the
# benchmark's stream span has): opt in until it has.
CLOCK_ENV = "JAX_FASTCONV_AUTOTUNE_CLOCK"
STREAM_NOTE = "clock: stream span"
STREAM_SLOT = 32   # the autotuner's stamp slots (32-35); the benchmark's are 0-5
# worth_measuring(): the region where lax HIGHEST beat the kernel on the H200 (b32 K3/K5).
MIN_TAPS = 9
MIN_CHANNELS = 32
MIN_FLOPS = 1e9
ROUNDS = 11
WARMUP = 2
MAX_R = 32
TIE = 0.03
# choose_plan's margin (see the docstring). 2% kept the FFMA kernel on b1 512^2 K3 NHWC where the
# wgmma launch led by 1.8-2.3% in the plan timer and ran ~3% faster in the benchmark (H200,
# notes round 29).
PLAN_TIE = 0.01
# What the single-channel kernels make of a plan's attributes on their own (the register-tile
# rules pick_tm / pick_tp in cuda/single_channel.cu, the store orders of the pointwise 1x1
# kernel): part of choose_plan's cache key, so that choices stored before such a rule changed
# are measured again. Bump it with the rules.
KERNEL_RULES = "sc-2026-11-25-tp8-mb64-pointwise"
BUDGET_BYTES = 1 << 30   # measure(): the R calls of one candidate
# measure_plans(): all of time_plans' buffers (it also keeps to half the free device memory).
# One set of a b32 512x512 M32 layer is 1.1 GB: under a 1 GiB budget it went unmeasured (H200,
# 2026-11-22) and kept a plan 7% slower than a variant.
PLAN_BUDGET_BYTES = 8 << 30


# What the kernel is timed against: lax HIGHEST (choose), or the patch GEMM (choose_gemm).
RIVAL_NAMES = {"lax": "lax HIGHEST", "gemm": "the patch GEMM"}


@dataclasses.dataclass(frozen=True)
class Choice:
    """The measured choice between the kernel and one rival: lax HIGHEST (lax_us) or, for
    patchify layers, the patch GEMM (gemm_us); use_kernel says whether the kernel won."""
    use_kernel: bool
    kernel_us: float | None
    lax_us: float | None
    R: int = 0
    note: str = ""
    gemm_us: float | None = None

    @property
    def rival(self) -> str:
        return "gemm" if self.gemm_us is not None else "lax"

    @property
    def rival_us(self) -> float | None:
        return self.gemm_us if self.gemm_us is not None else self.lax_us

    def describe(self) -> str:
        if self.kernel_us is None or self.rival_us is None:
            return f"not measured ({self.note})"
        name = RIVAL_NAMES[self.rival]
        won = "kernel" if self.use_kernel else name
        clock = " of device time (stream span)" if self.note == STREAM_NOTE else ""
        return (f"measured on this device: kernel {self.kernel_us:.1f} us, {name} "
                f"{self.rival_us:.1f} us per call{clock} (R={self.R}) -> {won}")


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "off", "no")


def stream_clock() -> bool:
    """Whether measure() times by stream stamps: JAX_FASTCONV_AUTOTUNE_CLOCK=stream and the
    stamps can run here (CUDA module built, a GPU backend)."""
    return (os.environ.get(CLOCK_ENV, "wall").strip().lower() == "stream"
            and stream_stamp.available())


def _on_gpu() -> bool:
    import jax
    return jax.default_backend() == "gpu"


_lock = threading.Lock()
_memory: dict[tuple[str, str], Choice] = {}


def worth_measuring(spec, plan) -> bool:
    """Only multi-channel layers with K >= 3, C >= 32 and >= 1 GFLOP can lose to cuDNN's
    Winograd/FFT algorithms; measuring anything else costs seconds and changes nothing."""
    d = spec.dims
    return (getattr(plan, "method", None) == "multi_channel" and d["KH"] * d["KW"] >= MIN_TAPS
            and d["C"] >= MIN_CHANNELS and spec.flops >= MIN_FLOPS)


@functools.lru_cache(maxsize=None)
def _versions() -> str:
    import jax
    try:
        from importlib.metadata import version
        own = version("jax_fastconv")
    except Exception:  # noqa: BLE001 - running from a source tree
        own = "src"
    return f"fastconv={own},jax={jax.__version__}"


def cache_key(spec, plan) -> str:
    return f"{spec.describe()} | plan={tuple(plan.kernel_attrs)} | {_versions()}"


def cache_path(device_kind: str) -> Path:
    from .hardware import device_cache_path
    return device_cache_path("autotune", device_kind)


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _store(path: Path, key: str, value: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _load(path)
        data[key] = value
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache only costs a re-measurement in the next process


def _from_dict(d) -> Choice | None:
    try:
        return Choice(bool(d["use_kernel"]), d["kernel_us"], d["lax_us"], int(d.get("R", 0)),
                      str(d.get("note", "")), d.get("gemm_us"))
    except (KeyError, TypeError, ValueError):
        return None


def _random_inputs(spec, budget_bytes: int):
    """R distinct random (lhs, rhs) pairs for timing, R from the memory budget (drawn eagerly,
    also while an outer jax.jit is tracing: timing.random_pairs)."""
    R = int(max(2, min(MAX_R, budget_bytes // max(spec.min_bytes, 1))))
    xs, ws = random_pairs(spec.lhs_shape, spec.rhs_shape, R)
    return xs, ws, R


def _compiled_loop(fn, xs, ws, slot: int | None = None):
    """One executable that applies fn to each of the R (x, w) pairs; with ``slot``, between the
    stream stamps of slot and slot + 1 (stream_stamp.stamped)."""
    import jax

    def loop(xs, ws):
        return tuple(fn(x, w) for x, w in zip(xs, ws))
    if slot is not None:
        loop = stream_stamp.stamped(loop, slot)
    return jax.jit(loop).lower(xs, ws).compile()


def measure(spec, plan, *, rival: str = "lax", rounds: int = ROUNDS, warmup: int = WARMUP,
            budget_bytes: int = BUDGET_BYTES) -> Choice:
    """Time the kernel (this package's primitive with `plan`) and `rival` on the default
    device: lax HIGHEST ("lax") or the patch GEMM ("gemm", patch_gemm.conv); both get the
    same R distinct random inputs."""
    from jax import lax
    from . import patch_gemm
    from .primitive import conv_p
    from .spec import as_dimension_numbers

    # Everything is compiled ahead of time and called as an executable: no tracing, so this
    # also works while an outer jax.jit is being traced.
    xs, ws, R = _random_inputs(spec, budget_bytes)
    dn = as_dimension_numbers(spec)

    def kernel(x, w):
        return conv_p.bind(x, w, spec=spec, plan=plan, precision=None)

    def reference(x, w):
        return lax.conv_general_dilated(x, w, spec.window_strides, spec.padding,
                                        dimension_numbers=dn, precision=lax.Precision.HIGHEST)

    def gemm(x, w):
        return patch_gemm.conv(x, w, spec)

    fns = {"kernel": kernel, rival: {"lax": reference, "gemm": gemm}[rival]}
    slots = ({n: STREAM_SLOT + 2 * i for i, n in enumerate(fns)} if stream_clock() else {})
    read = (lambda n: stream_stamp.elapsed_us(slots[n])) if slots else None
    # Interleaved rounds: both candidates see the same noise.
    loops = {n: _compiled_loop(f, xs, ws, slots.get(n)) for n, f in fns.items()}
    samples = time_interleaved(loops, (xs, ws), R, rounds, warmup, read=read)
    k_us, r_us = min(samples["kernel"]), min(samples[rival])
    use_kernel = r_us >= k_us * (1.0 - TIE)
    note = STREAM_NOTE if slots else ""
    if rival == "gemm":
        return Choice(use_kernel, k_us, None, R, note, gemm_us=r_us)
    return Choice(use_kernel, k_us, r_us, R, note)


def _cached(key: str, decode, measure_fn, failed, encode):
    """The choice for `key` on the default device: from this process, else from the disk
    cache (decode(stored) -> choice, or None), else measure_fn(), stored as encode(choice); a
    failed measurement gives failed(message) and is not stored."""
    import jax
    device_kind = getattr(jax.devices()[0], "device_kind", "device")
    with _lock:
        hit = _memory.get((device_kind, key))
        if hit is not None:
            return hit
        path = cache_path(device_kind)
        choice = decode(_load(path).get(key)) if path.exists() else None
        if choice is None:
            try:
                choice = measure_fn()
            except Exception as e:  # noqa: BLE001 - never fail the user's call over timing
                choice = failed(f"measurement failed: {type(e).__name__}: {str(e)[:200]}")
            else:
                _store(path, key, encode(choice))
        _memory[(device_kind, key)] = choice
        return choice


def _choose(spec, plan, rival: str) -> Choice:
    # The lax entries keep their keys of before the GEMM rival existed; wall-clock entries
    # keep theirs of before the stream clock existed.
    key = (cache_key(spec, plan) + ("" if rival == "lax" else f" | rival={rival}")
           + (" | clock=stream" if stream_clock() else ""))
    return _cached(key, _from_dict, lambda: measure(spec, plan, rival=rival),
                   lambda msg: Choice(True, None, None, 0, f"{msg}; the kernel is used"),
                   dataclasses.asdict)


def choose(spec, plan) -> Choice:
    """The measured choice between the kernel and lax HIGHEST on the default device (cached)."""
    return _choose(spec, plan, "lax")


# -- the measured choice between a patchify kernel and the patch GEMM ----------------------


def worth_measuring_gemm(spec, plan) -> bool:
    """Patchify layers (stride = kernel size > 1x1, every window inside the map) that a kernel
    of ours covers, on a GPU: the patch GEMM (patch_gemm.py) computes them too, and no rule
    separates the two (H100, device span: the GEMM faster on ConvNeXt's 4x4/4 RGB stem at b1
    and on its 2x2/2 downsampling with C >= 192 at b32, the kernel on the same stem at b32
    NCHW and on the downsampling at b1; benchmarks/notes/patch_gemm.md). A network has a few
    such layers (stem, downsampling), so timing both at their first trace costs little."""
    from . import patch_gemm
    return patch_gemm.rivals(plan, spec) and _on_gpu()


def choose_gemm(spec, plan) -> Choice:
    """The measured choice between the kernel and the patch GEMM on the default device
    (cached like choose(); the kernel is kept unless the GEMM is faster by more than TIE)."""
    return _choose(spec, plan, "gemm")


# -- the measured choice among launches of the single-channel kernel ---------------------------

# Device time (CUDA events) resolves kernels of about 1 us and up (4 MiB is about 1 us of copy
# on an H200), and a measurement costs tens of ms per new shape: smaller layers are bound by the
# per-call cost whatever their launch.
PLAN_MIN_BYTES = 4 << 20


@dataclasses.dataclass(frozen=True)
class PlanChoice:
    """The measured choice among candidate plans; the Choice fields keep explain() and the
    benchmark's report working (the kernel runs, lax was not timed). plan_us holds device
    microseconds per launch (CUDA events, median of the rounds); R is 0: no per-call inputs
    (the timer rotates over buffer sets of its own)."""
    plan: object
    plan_us: tuple = ()          # ((kernel_attrs, device us per launch), ...) in candidate order
    R: int = 0
    note: str = ""
    use_kernel: bool = True
    lax_us: float | None = None

    @property
    def kernel_us(self) -> float | None:
        for attrs, us in self.plan_us:
            if tuple(attrs) == tuple(self.plan.kernel_attrs):
                return us
        return None

    def record(self) -> dict:
        """What the disk cache (and the benchmark's row) keeps of it."""
        return {"chosen": list(self.plan.kernel_attrs), "R": self.R,
                "plan_us": [[list(a), us] for a, us in self.plan_us]}

    def describe(self) -> str:
        if not self.plan_us:
            return f"plans not measured ({self.note})"
        times = ", ".join(f"{list(a)[1:]}: {us:.1f} us" for a, us in self.plan_us)
        return (f"measured {len(self.plan_us)} single-channel plans on this device (device time "
                f"per launch, CUDA events, median of rounds): {times} -> "
                f"{list(self.plan.kernel_attrs)[1:]}")


def worth_measuring_plans(spec, plan) -> bool:
    """Single-channel layers with >= PLAN_MIN_BYTES (4 MiB) of traffic, when the process runs on
    a GPU (timing GPU plans needs one). CUDA events resolve their kernels (about 1 us and up);
    below that the per-call cost bounds the layer, and each new shape costs tens of ms to
    measure."""
    return (getattr(plan, "method", None) == "single_channel"
            and spec.min_bytes >= PLAN_MIN_BYTES and _on_gpu())


def _device_ordinal() -> int:
    """The CUDA ordinal of jax's default device (the one _cached keys the choice by)."""
    import jax
    device = jax.devices()[0]
    ordinal = getattr(device, "local_hardware_id", None)
    return int(device.id if ordinal is None else ordinal)


def time_plans_args(spec, plan) -> dict:
    """The convolution arguments of the extension's time_plans for `spec` (any of its plans):
    its FFI attributes (primitive.ffi_attributes) but the plan, as lists of ints."""
    from .primitive import ffi_attributes
    attrs = ffi_attributes(spec, plan)
    return {k: [int(v) for v in a] for k, a in attrs.items() if k != "plan"}


def measure_plans(spec, plans, *, rounds: int = ROUNDS,
                  budget_bytes: int = PLAN_BUDGET_BYTES) -> tuple[dict[tuple, float], int]:
    """Device microseconds per launch of the kernel under each plan (median of `rounds`
    interleaved rounds), timed with CUDA events by the extension's time_plans on jax's
    default device, keyed by kernel_attrs; and R = 0 (no per-call inputs)."""
    import statistics
    from . import _ffi

    module = _ffi.cuda_module
    if module is None:
        raise RuntimeError(f"the CUDA extension is not built ({_ffi.CUDA_IMPORT_ERROR})")
    samples = module.time_plans(**time_plans_args(spec, plans[0]),
                                plans=[[int(v) for v in p.kernel_attrs] for p in plans],
                                rounds=rounds, ordinal=_device_ordinal(),
                                budget_bytes=budget_bytes)
    if len(samples) != len(plans) or not all(samples):
        raise RuntimeError(f"time_plans returned {len(samples)} sample lists for {len(plans)} "
                           f"plans")
    return {tuple(p.kernel_attrs): statistics.median(s) for p, s in zip(plans, samples)}, 0


def choose_plan(spec, plans) -> PlanChoice:
    """The measured choice among `plans` (the planned one first) on the default device, cached
    like choose()."""
    # "device-time": the entries of the earlier wall-clock timing are not reused.
    key = (f"plans device-time | {spec.describe()} | "
           + " ".join(str(tuple(p.kernel_attrs)) for p in plans)
           + f" | {_versions()} | rules={KERNEL_RULES} | tie={PLAN_TIE}")
    by_attrs = {tuple(p.kernel_attrs): p for p in plans}

    def decode(stored):
        try:
            return PlanChoice(by_attrs[tuple(stored["chosen"])],
                              tuple((tuple(a), float(us)) for a, us in stored["plan_us"]),
                              int(stored["R"]))
        except (KeyError, TypeError, ValueError):
            return None

    def measure_fn():
        times, R = measure_plans(spec, plans)
        planned = tuple(plans[0].kernel_attrs)
        best = min(times, key=times.get)
        chosen = best if times[best] < times[planned] * (1.0 - PLAN_TIE) else planned
        return PlanChoice(by_attrs[chosen], tuple((a, times[a]) for a in by_attrs), R)

    return _cached(key, decode, measure_fn,
                   lambda msg: PlanChoice(plans[0], (), 0, f"{msg}; the planned plan is used"),
                   PlanChoice.record)


def clear_memory() -> None:
    with _lock:
        _memory.clear()
