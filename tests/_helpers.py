"""Shared test utilities: the lax reference, the relative error, seeded random convolution
configurations and checks that the fast path (the custom call) was really taken.

Imported by every test module (tests/conftest.py puts this directory on sys.path).
"""
from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import jax
import jax.numpy as jnp
from jax import lax

import jax_fastconv as fc
from jax_fastconv import _ffi

CPU_TARGET = _ffi.CPU_TARGET    # "fastconv_conv2d_cpu"
CUDA_TARGET = _ffi.CUDA_GRAPH_TARGET  # the default CUDA target (command-buffer compatible)
HIGHEST = lax.Precision.HIGHEST
RTOL = 1e-5                     # ||out - ref|| / ||ref|| in float32

def skip_module_without_cuda():
    """Skips the calling test module unless jax runs on a CUDA device and the CUDA extension
    is built (the GPU test modules call it before anything that needs the device)."""
    if jax.default_backend() != "gpu":
        pytest.skip(f"needs a CUDA device (jax backend is {jax.default_backend()!r})",
                    allow_module_level=True)
    if _ffi.cuda_module is None:
        pytest.skip(f"the CUDA extension is not built ({_ffi.CUDA_IMPORT_ERROR})",
                    allow_module_level=True)


# -- reference and error ---------------------------------------------------------------------


def ref_conv(lhs, rhs, window_strides, padding, **kwargs):
    """lax.conv_general_dilated at HIGHEST precision (the reference for every comparison)."""
    kwargs = dict(kwargs)
    kwargs["precision"] = HIGHEST
    return lax.conv_general_dilated(lhs, rhs, window_strides, padding, **kwargs)


def rel_err(out, ref) -> float:
    """||out - ref|| / ||ref|| in float64 (||out|| when ref is exactly zero)."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert out.shape == ref.shape, f"shape {out.shape} != reference shape {ref.shape}"
    assert np.all(np.isfinite(out)), "non-finite values in the output"
    num = np.linalg.norm((out - ref).ravel())
    den = np.linalg.norm(ref.ravel())
    return float(num / den) if den > 0 else float(num)


def assert_close(out, ref, rtol: float = RTOL, what: str = ""):
    err = rel_err(out, ref)
    assert err <= rtol, f"{what} relative error {err:.3e} > {rtol:.1e}"
    return err


def assert_trees_close(out, ref, rtol: float = RTOL, what: str = ""):
    leaves_o, tree_o = jax.tree_util.tree_flatten(out)
    leaves_r, tree_r = jax.tree_util.tree_flatten(ref)
    assert tree_o == tree_r, f"{what}: tree structure {tree_o} != {tree_r}"
    for i, (o, r) in enumerate(zip(leaves_o, leaves_r)):
        assert_close(o, r, rtol, what=f"{what}[leaf {i}]")


def randn(rng: np.random.Generator, shape, dtype=np.float32):
    """Standard normal values (never zeros), as a jax array."""
    return jnp.asarray(rng.standard_normal(shape).astype(np.float32), dtype=dtype)


# -- lowered text / custom calls ------------------------------------------------------------


def lowered_text(f, *args, platforms=None) -> str:
    """StableHLO text of jax.jit(f) for `args` (optionally for other platforms)."""
    traced = jax.jit(f).trace(*args)
    lowered = traced.lower(lowering_platforms=tuple(platforms)) if platforms else traced.lower()
    return lowered.as_text()


def count_custom_calls(text: str, target: str) -> int:
    """Number of custom calls to `target` in lowered StableHLO text."""
    return len(re.findall(r"custom_call\s*@" + re.escape(target) + r"\b", text))


def pretend_cuda(monkeypatch, hardware: str, *, autotune: bool = False):
    """Route `api._decide` as on a CUDA device planned for preset `hardware`, on this machine
    (nothing runs on a GPU: lower with lowering_platforms=("cuda",) or run the paths without a
    custom call). The autotuner stays off unless `autotune`."""
    from jax_fastconv import api
    monkeypatch.setattr(api, "_target_platform", lambda: "cuda")
    monkeypatch.setattr(_ffi, "cuda_module", object())
    monkeypatch.setenv("JAX_FASTCONV_HARDWARE", hardware)
    if not autotune:
        monkeypatch.setenv("JAX_FASTCONV_AUTOTUNE", "0")


def jit_checked(f, *args, target: str = CPU_TARGET, expect_calls: int | None = None,
                expect_fast: bool = True):
    """Lower jax.jit(f) once, assert the custom call is (or is not) there, compile and run.

    Returns (output, lowered text). `expect_calls` pins the exact number of custom calls.
    """
    lowered = jax.jit(f).lower(*args)
    text = lowered.as_text()
    n = count_custom_calls(text, target)
    if expect_fast:
        assert n >= 1, f"fast path not taken: no custom call {target} in the lowered HLO"
        if expect_calls is not None:
            assert n == expect_calls, f"expected {expect_calls} custom call(s) {target}, found {n}"
    else:
        assert n == 0, f"expected the lax fallback, found {n} custom call(s) {target}"
    return lowered.compile()(*args), text


def assert_matches_lax_twice(f, cfg, target: str, *, expect_fast: bool = True):
    """f(x, w) on cfg's random arrays: one custom call (none: `expect_fast=False`), lax
    HIGHEST's answer, and the same bits when run again (deterministic kernels, split sums in
    fixed order). Returns the lowered text."""
    x, w = cfg.arrays()
    calls = dict(expect_calls=1) if expect_fast else dict(expect_fast=False)
    out, text = jit_checked(f, x, w, target=target, **calls)
    assert_close(out, ref_conv(x, w, **cfg.kwargs()), what=cfg.id)
    again, _ = jit_checked(f, x, w, target=target, **calls)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(again))
    return text


# -- layouts and random configurations -----------------------------------------------------

# name -> dimension_numbers as strings (None means lax's default NCHW/OIHW/NCHW).
LAYOUTS: dict[str, Any] = {
    "default": None,
    "NCHW": ("NCHW", "OIHW", "NCHW"),
    "NHWC": ("NHWC", "HWIO", "NHWC"),
    "NHWC-OIHW-NCHW": ("NHWC", "OIHW", "NCHW"),
    "NCHW-HWIO-NHWC": ("NCHW", "HWIO", "NHWC"),
    "CHWN-HWIO-NHWC": ("CHWN", "HWIO", "NHWC"),
    "HWCN-OHWI-CNHW": ("HWCN", "OHWI", "CNHW"),
    # ConvDimensionNumbers objects, as Flax passes them (built from the shapes at make time)
    "dnobj-NCHW": ("obj", ("NCHW", "OIHW", "NCHW")),
    "dnobj-NHWC": ("obj", ("NHWC", "HWIO", "NHWC")),
}
RANDOM_LAYOUTS = tuple(LAYOUTS)  # (what random_config draws from; the ones below are added later)
LAYOUTS["NCHW-OIHW-NHWC"] = ("NCHW", "OIHW", "NHWC")
LAYOUTS["NCHW-HWIO-NCHW"] = ("NCHW", "HWIO", "NCHW")   # filter-contiguous filters, plane outputs
MAIN_LAYOUTS = ("NCHW", "NHWC")


def _shape_for(spec: str, sizes: dict) -> tuple[int, ...]:
    return tuple(sizes[ch] for ch in spec)


def layout_strings(layout: str) -> tuple[str, str, str]:
    dn = LAYOUTS[layout]
    if dn is None:
        return ("NCHW", "OIHW", "NCHW")
    if dn[0] == "obj":
        return dn[1]
    return dn


@dataclasses.dataclass(frozen=True)
class ConvConfig:
    """One 2-D convolution: logical sizes, stride, padding and a layout name from LAYOUTS."""

    n: int
    c: int
    m: int
    h: int
    w: int
    kh: int
    kw: int
    strides: tuple[int, int] = (1, 1)
    padding: Any = "VALID"           # a string or ((lo, hi), (lo, hi)) for (H, W)
    layout: str = "NCHW"
    seed: int = 0

    @property
    def id(self) -> str:
        pad = self.padding if isinstance(self.padding, str) else \
            "p" + "_".join(f"{lo}.{hi}" for lo, hi in self.padding)
        return (f"s{self.seed}-{self.layout}-N{self.n}C{self.c}M{self.m}-{self.h}x{self.w}"
                f"-k{self.kh}x{self.kw}-st{self.strides[0]}{self.strides[1]}-{pad}")

    def shapes(self):
        lhs_s, rhs_s, _ = layout_strings(self.layout)
        lhs = _shape_for(lhs_s, dict(N=self.n, C=self.c, H=self.h, W=self.w))
        rhs = _shape_for(rhs_s, dict(O=self.m, I=self.c, H=self.kh, W=self.kw))
        return lhs, rhs

    def dimension_numbers(self):
        dn = LAYOUTS[self.layout]
        if dn is not None and dn[0] == "obj":
            lhs, rhs = self.shapes()
            return lax.conv_dimension_numbers(lhs, rhs, dn[1])
        return dn

    def kwargs(self) -> dict:
        """Keyword arguments after (lhs, rhs): window_strides, padding, dimension_numbers."""
        return dict(window_strides=self.strides, padding=self.padding,
                    dimension_numbers=self.dimension_numbers())

    def arrays(self, dtype=np.float32):
        rng = np.random.default_rng(10_000 + self.seed)
        lhs_shape, rhs_shape = self.shapes()
        return randn(rng, lhs_shape, dtype), randn(rng, rhs_shape, dtype)

    def out_shape(self):
        lhs, rhs = self.shapes()
        return jax.eval_shape(
            lambda a, b: lax.conv_general_dilated(a, b, **self.kwargs()),
            jax.ShapeDtypeStruct(lhs, jnp.float32), jax.ShapeDtypeStruct(rhs, jnp.float32)).shape

    def explain(self):
        lhs, rhs = self.shapes()
        return fc.explain(lhs, rhs, **self.kwargs())


def _valid(cfg: ConvConfig) -> bool:
    try:
        shape = cfg.out_shape()
    except Exception:
        return False
    return all(d > 0 for d in shape)


def random_single_channel_layers(count: int, seed: int, kernels, id0: int,
                                 taps_ok=lambda kh, kw: True) -> list[ConvConfig]:
    """C = 1, stride 1 layers for the single-channel kernels' GPU tests: kernels drawn from
    `kernels` ((kh, kw), or None for a random 1-8 x 1-8 one) kept where taps_ok(kh, kw), maps
    1-90 a side and a few wide ones (whole-row tiles of 300-700 columns), 1-130 filters (M % 16
    != 0: partial groups of filters), batch 1-32, every padding kind (negative pairs too),
    NCHW, NHWC and the other layout permutations (scalar stores); seeds id0, id0 + 1, ..."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        i = len(out)
        k = kernels[int(rng.integers(len(kernels)))]
        kh, kw = k if k else (int(rng.integers(1, 9)), int(rng.integers(1, 9)))
        if not taps_ok(kh, kw):
            continue
        n = int(rng.choice([1, 1, 2, 3, 32]))
        m = int(rng.choice([1, 5, 16, 20, 32, 64, 130]))
        h = int(rng.integers(1, 91))
        w = int(rng.integers(300, 700)) if i % 7 == 3 else int(rng.integers(1, 91))
        kind = rng.choice(["SAME", "SAME_LOWER", "VALID", "explicit"])
        pad = (tuple((int(rng.integers(-2, 5)), int(rng.integers(-2, 5))) for _ in range(2))
               if kind == "explicit" else str(kind))
        layout = str(rng.choice(["NCHW", "NHWC"])) if i % 4 else str(rng.choice(RANDOM_LAYOUTS))
        cfg = ConvConfig(n, 1, m, h, w, kh, kw, (1, 1), pad, layout, id0 + i)
        if _valid(cfg) and np.prod(cfg.out_shape()) <= 4_000_000:
            out.append(cfg)
    return out


def random_config(rng: np.random.Generator, seed: int, *, max_n=3, max_c=8, max_m=8,
                  max_hw=12, max_k=5, layouts=RANDOM_LAYOUTS, strides=(1, 2),
                  p_single_channel=0.0, small_maps=True) -> ConvConfig:
    """A random valid convolution: 1x1 and odd sizes, non-square kernels, every padding kind
    (SAME, SAME_LOWER, VALID, explicit pairs with negative entries), strides 1 and 2.

    `p_single_channel`: probability of forcing C == 1 (the paper's single-channel kernel);
    `small_maps`: bias map sizes toward 1..3 (cheap on the naive CPU kernel)."""
    while True:
        n = int(rng.integers(1, max_n + 1))
        c = int(rng.integers(1, max_c + 1))
        if p_single_channel > 0 and rng.random() < p_single_channel:
            c = 1
        m = int(rng.integers(1, max_m + 1))
        if small_maps:
            # bias toward small maps (1x1 included) while covering the range
            h = int(rng.choice([1, 2, 3, int(rng.integers(1, max_hw + 1)),
                                int(rng.integers(1, max_hw + 1))]))
            w = int(rng.choice([1, 2, 3, int(rng.integers(1, max_hw + 1)),
                                int(rng.integers(1, max_hw + 1))]))
        else:
            h = int(rng.choice([1, int(rng.integers(1, max_hw + 1)), int(rng.integers(1, max_hw + 1))]))
            w = int(rng.choice([1, int(rng.integers(1, max_hw + 1)), int(rng.integers(1, max_hw + 1))]))
        kh = int(rng.integers(1, max_k + 1))
        kw = int(rng.integers(1, max_k + 1))
        st = (int(rng.choice(strides)), int(rng.choice(strides)))
        kind = rng.choice(["SAME", "SAME_LOWER", "VALID", "explicit", "explicit"])
        if kind == "explicit":
            pad = tuple((int(rng.integers(-2, 4)), int(rng.integers(-2, 4))) for _ in range(2))
        else:
            pad = str(kind)
        layout = str(rng.choice(list(layouts)))
        cfg = ConvConfig(n, c, m, h, w, kh, kw, st, pad, layout, seed)
        if _valid(cfg):
            return cfg


def random_configs(count: int, seed: int = 0, **kwargs) -> list[ConvConfig]:
    """`count` seeded random configurations; config i has seed `seed + i` (its own arrays)."""
    out = []
    for i in range(count):
        rng = np.random.default_rng(seed + i)
        out.append(random_config(rng, seed + i, **kwargs))
    return out


# Hand-picked edge cases that random sampling might miss.
EDGE_CONFIGS = [
    ConvConfig(1, 1, 1, 1, 1, 1, 1, (1, 1), "VALID", "NCHW", 900),            # everything 1
    ConvConfig(2, 3, 4, 7, 5, 1, 1, (1, 1), "SAME", "NHWC", 901),             # 1x1 kernel
    ConvConfig(2, 3, 4, 7, 5, 1, 1, (2, 2), "VALID", "NCHW", 902),            # 1x1 stride 2
    ConvConfig(2, 3, 2, 6, 7, 3, 2, (1, 1), ((-1, 2), (0, -1)), "NCHW", 903),  # negative pads
    ConvConfig(1, 2, 3, 6, 7, 3, 2, (2, 1), ((-1, 2), (0, -1)), "NHWC", 904),
    ConvConfig(3, 5, 6, 9, 11, 5, 3, (2, 2), "SAME", "NHWC", 905),            # odd, stride 2
    ConvConfig(3, 5, 6, 9, 11, 5, 3, (2, 2), "SAME_LOWER", "NCHW", 906),
    ConvConfig(1, 8, 8, 12, 12, 5, 5, (1, 1), ((2, 2), (2, 2)), "NHWC", 907),
    ConvConfig(2, 4, 3, 5, 5, 5, 5, (1, 1), "VALID", "NCHW", 908),            # kernel == map
    ConvConfig(2, 4, 3, 4, 4, 5, 5, (1, 1), "SAME", "NHWC", 909),             # kernel > map
    ConvConfig(2, 3, 4, 8, 8, 2, 4, (2, 1), ((3, 0), (0, 3)), "NHWC-OIHW-NCHW", 910),
    ConvConfig(2, 3, 4, 8, 6, 3, 3, (1, 2), "SAME", "CHWN-HWIO-NHWC", 911),
    ConvConfig(2, 3, 4, 8, 6, 3, 3, (1, 1), "VALID", "HWCN-OHWI-CNHW", 912),
    ConvConfig(2, 3, 4, 8, 6, 3, 1, (2, 2), "SAME", "dnobj-NHWC", 913),
    ConvConfig(2, 3, 4, 8, 6, 1, 3, (1, 1), ((1, 1), (1, 1)), "dnobj-NCHW", 914),
    ConvConfig(2, 3, 4, 8, 6, 3, 3, (1, 1), "SAME", "default", 915),
    ConvConfig(1, 1, 5, 9, 9, 3, 3, (1, 1), "SAME", "NCHW", 916),             # C == 1
    ConvConfig(1, 1, 5, 9, 9, 3, 3, (1, 1), "SAME", "NHWC", 917),
]


def assert_partition(ranges, extent):
    """(lo, hi) ranges that cover [0, extent) exactly once, in order, none empty."""
    assert ranges and all(lo < hi for lo, hi in ranges), ranges
    assert ranges[0][0] == 0 and ranges[-1][1] == extent
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:])), ranges


# -- host builds of the CUDA headers' host-side code ------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


def build_host_check(name: str, out_dir) -> Path:
    """Builds tests/cuda/<name>.cc against cuda/ with the host C++ compiler (skips the test
    when there is none) and returns the executable."""
    import pytest
    if shutil.which("c++") is None:
        pytest.skip("no host C++ compiler")
    exe = Path(out_dir) / name
    subprocess.run(["c++", "-std=c++17", "-O2", "-I", str(ROOT / "cuda"), "-o", str(exe),
                    str(ROOT / "tests" / "cuda" / f"{name}.cc")], check=True)
    return exe


class StreamStampStandIn:
    """Stands in for ``jax_fastconv.stream_stamp`` on a CPU: ``stamped`` runs the function
    unchanged (no tokens) and notes its slot; ``elapsed_us(slot)`` notes the read and gives R x
    ``per_slot_us[slot]`` (``fail``: raises as an unrecorded slot would)."""

    def __init__(self, per_slot_us: dict, R: int, fail: bool = False):
        self.per_slot_us, self.R, self.fail, self.slots, self.reads = per_slot_us, R, fail, [], []

    def stamped(self, fn, slot):
        self.slots.append(slot)
        return lambda xs, ws: (fn(xs, ws), ())

    def elapsed_us(self, slot):
        if self.fail:
            raise RuntimeError(f"no stamp recorded in slot {slot} on device 0")
        self.reads.append(slot)
        return self.per_slot_us[slot] * self.R

    @staticmethod
    def available():
        return True


def numpy_nhwc_conv(x, w, padding):
    """float64 direct convolution (NHWC, HWIO, stride 1): the float semantics of FMAs."""
    (pt, pb), (pl, pr) = padding
    xp = np.pad(np.asarray(x, np.float64), ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    w = np.asarray(w, np.float64)
    kh, kw = w.shape[:2]
    oh, ow = xp.shape[1] - kh + 1, xp.shape[2] - kw + 1
    with np.errstate(invalid="ignore"):
        out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
        for i in range(kh):
            for j in range(kw):
                out += np.einsum("nhwc,cm->nhwm", xp[:, i:i + oh, j:j + ow, :], w[i, j])
    return out


def to_layout(layout, a, src):
    """a (laid out as src) transposed to layout: both are strings of the same letters."""
    return np.transpose(a, [src.index(ch) for ch in layout])


def single_channel_candidates(cfg: ConvConfig, why_not, is_kind, kernel: str):
    """cfg's explanation and the candidate plans (plan_single_channel.candidate_plans on this
    device) whose attributes is_kind names; the test is skipped with why_not(spec, hw)'s reason
    where `kernel` does not run the layer."""
    from jax_fastconv import hardware
    from jax_fastconv import plan_single_channel as ps
    ex = cfg.explain()
    assert ex.path == "fastconv-cuda" and ex.plan.method == "single_channel", ex.reason
    hw = hardware.current_hardware()
    why = why_not(ex.spec, hw)
    if why is not None:
        pytest.skip(f"{kernel} does not run this layer: {why}")
    plans = [p for p in ps.candidate_plans(ex.spec, hw, ex.plan) if is_kind(p.kernel_attrs)]
    assert plans, ex.spec.describe()
    return ex, plans


def plan_fn(spec, plan):
    """conv_p with `plan`, as a function of (lhs, rhs)."""
    from jax_fastconv.primitive import conv_p
    return lambda a, b: conv_p.bind(a, b, spec=spec, plan=plan, precision=None)


def run_plan(spec, plan, x, w) -> np.ndarray:
    """conv_p with `plan`, jitted."""
    return np.asarray(jax.jit(plan_fn(spec, plan))(x, w))


def assert_plans_match_lax(cfg: ConvConfig, ex, plans, kernel: str, differ: bool):
    """Each plan against lax HIGHEST, with the same bits on a second run; with `differ`, bits
    other than the planned plan's (evidence that `kernel`, whose sums round differently, ran)."""
    x, w = cfg.arrays()
    ref = np.asarray(ref_conv(x, w, **cfg.kwargs()))
    planned = run_plan(ex.spec, ex.plan, x, w)
    for plan in plans:
        out = run_plan(ex.spec, plan, x, w)
        assert_close(out, ref, what=f"{cfg.id} {plan.kernel_attrs}")
        np.testing.assert_array_equal(out, run_plan(ex.spec, plan, x, w))   # same bits again
        if differ:
            assert not np.array_equal(out, planned), f"{plan.kernel_attrs}: {kernel} did not run"


def assert_plan_vmaps_into_one_call(cfg: ConvConfig, spec, plan):
    """conv_p with `plan` under vmap over two inputs of cfg (the second flipped): one custom
    call (the vmap folds into the batch), lax HIGHEST's answer."""
    x, w = cfg.arrays()
    run = plan_fn(spec, plan)
    xb = np.stack([np.asarray(x), np.asarray(x)[::-1]])
    out, _ = jit_checked(jax.vmap(run, in_axes=(0, None)), xb, w, target=CUDA_TARGET,
                         expect_calls=1)
    ref = jax.vmap(lambda a, b: ref_conv(a, b, **cfg.kwargs()), in_axes=(0, None))(xb, w)
    assert_close(out, ref, what="vmap")


def measured_plan_choice(cfg: ConvConfig, monkeypatch, tmp_path):
    """cfg.explain() with the plan autotuner on and an empty cache (the first trace times the
    layer's candidate plans on this device): the explanation and the timed plans' attributes."""
    from jax_fastconv import autotune
    monkeypatch.setenv(autotune.ENV, "1")
    monkeypatch.setenv("JAX_FASTCONV_CACHE_DIR", str(tmp_path))
    autotune.clear_memory()
    ex = cfg.explain()
    assert ex.path == "fastconv-cuda" and ex.measured is not None, ex.reason
    return ex, [tuple(a) for a, _ in ex.measured.plan_us]


def assert_chosen_plan_matches_lax(cfg: ConvConfig, ex) -> None:
    """After measured_plan_choice: the plan the autotuner kept runs as one custom call under jit
    and matches lax HIGHEST; then the autotuner's memory is cleared for the next test."""
    from jax_fastconv import autotune
    x, w = cfg.arrays()
    out, _ = jit_checked(lambda a, b: fc.conv_general_dilated(a, b, **cfg.kwargs()), x, w,
                         target=CUDA_TARGET, expect_calls=1)
    assert_close(out, ref_conv(x, w, **cfg.kwargs()), what=f"chosen {ex.plan.kernel_attrs}")
    autotune.clear_memory()


def assert_float32_non_finite_semantics(fn, cfg):
    """fn(x, w) (one custom call) with inf, -inf and NaN planted in cfg's input: NaN and +-inf
    exactly where float32 FMAs put them (a float64 direct convolution), the finite outputs
    within 1e-5. Tensor-core kernels meet inf x 0 in their split products and must recompute
    such tiles with FFMAs. Stride 1, non-negative padding."""
    lhs_l, rhs_l, out_l = cfg.dimension_numbers()
    x, w = cfg.arrays()
    x = np.array(x)
    n, h, wd, c = to_layout("NHWC", x, lhs_l).shape
    rng = np.random.default_rng(cfg.seed)
    at = [(0, rng.integers(h), rng.integers(wd), rng.integers(c), np.inf),
          (n - 1, rng.integers(h), rng.integers(wd), rng.integers(c), -np.inf),
          (0, h // 2, wd // 2, 0, np.nan)]
    for i, y, z, ch_, v in at:  # logical (n, h, w, c) positions
        x[tuple(dict(N=i, H=y, W=z, C=ch_)[ch] for ch in lhs_l)] = v
    out, _ = jit_checked(fn, x, w, target=CUDA_TARGET, expect_calls=1)
    out = to_layout("NHWC", np.asarray(out, np.float64), out_l)
    pad = cfg.padding
    if isinstance(pad, str):
        pad = tuple(jax.lax.padtype_to_pads((h, wd), (cfg.kh, cfg.kw), (1, 1), pad))
    ref = numpy_nhwc_conv(to_layout("NHWC", x, lhs_l), to_layout("HWIO", np.asarray(w), rhs_l), pad)
    assert np.isnan(ref).any() and np.isinf(ref).any()  # the case exercises both
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    np.testing.assert_array_equal(np.isposinf(out), np.isposinf(ref))
    np.testing.assert_array_equal(np.isneginf(out), np.isneginf(ref))
    fin = np.isfinite(ref)
    err = np.linalg.norm(out[fin] - ref[fin]) / np.linalg.norm(ref[fin])
    assert err <= 1e-5, f"{cfg.id}: finite outputs relative error {err:.2e}"


def assert_plans_keep_non_finite_semantics(cfg: ConvConfig, spec, plans):
    """assert_float32_non_finite_semantics for conv_p with each of `plans` (candidate kernels
    whose products round or overflow differently from the direct sums)."""
    for plan in plans:
        assert_float32_non_finite_semantics(plan_fn(spec, plan), cfg)
