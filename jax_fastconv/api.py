"""Public entry points: a drop-in lax.conv_general_dilated, explain() and plan().

Flow: normalise once (spec.normalize) -> decide fast path or lax fallback (with the reason)
-> plan (planner.plan_cached, at trace time) -> conv_p.bind(..., spec=, plan=).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

from . import _ffi, autotune, hardware as hw_mod, patch_gemm, plan_single_channel, planner
from .primitive import conv_p
from .spec import ConvSpec, normalize

# GPU shapes that no paper kernel covers would run the straightforward direct kernel, which
# is slower than XLA's convolution: they go to lax unless this is set (tests, debugging).
FORCE_DIRECT_ENV = "JAX_FASTCONV_FORCE_DIRECT"


@dataclasses.dataclass(frozen=True)
class Explanation:
    path: str              # "fastconv-cuda" | "fastconv-cpu" | "gemm" | "lax"
    reason: str            # why this path
    spec: ConvSpec
    plan: Any              # planner.Plan (the plan for the target device; None if not planned)
    measured: Any = None   # autotune.Choice / PlanChoice when chosen by timing

    def __str__(self) -> str:
        lines = [f"path: {self.path}", f"reason: {self.reason}", f"conv: {self.spec.describe()}"]
        if self.plan is not None:
            lines.append(self.plan.describe())
        if self.measured is not None:
            lines.append(f"autotune: {self.measured.describe()}")
        return "\n".join(lines)


def _shape_dtype(x, name: str):
    """Arrays, tracers, ShapeDtypeStructs, or bare shapes (float32 assumed)."""
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return tuple(x.shape), x.dtype
    if isinstance(x, (tuple, list)) and all(isinstance(d, (int, np.integer)) for d in x):
        return tuple(int(d) for d in x), np.dtype("float32")
    try:
        a = np.asarray(x)
    except Exception:
        raise TypeError(f"{name} must be an array or a shape, got {type(x).__name__}") from None
    return a.shape, a.dtype


def _target_platform() -> str:
    backend = jax.default_backend()
    return "cuda" if backend == "gpu" else backend


def _uncovered_reason(spec: ConvSpec, out_sharding, platform: str) -> str | None:
    """Why the fast path does not cover these valid arguments (None: it does)."""
    if spec.ndim_spatial != 2:
        return f"only 2-D convolutions have a kernel (got {spec.ndim_spatial} spatial dimensions)"
    if spec.dtype != "float32" or spec.out_dtype != "float32":
        return f"only float32 has a kernel (got {spec.dtype} -> {spec.out_dtype})"
    if any(d != 1 for d in spec.lhs_dilation + spec.rhs_dilation):
        return (f"dilation is not covered (lhs_dilation={spec.lhs_dilation}, "
                f"rhs_dilation={spec.rhs_dilation})")
    if spec.feature_group_count != 1 or spec.batch_group_count != 1:
        return (f"grouped convolution is not covered (feature_group_count="
                f"{spec.feature_group_count}, batch_group_count={spec.batch_group_count})")
    if out_sharding is not None:
        return "out_sharding is handled by lax"
    if 0 in spec.lhs_shape + spec.rhs_shape + spec.out_shape:
        return "zero-size operand or output"
    if platform == "cpu" and _ffi.cpu_module is None:
        return f"the CPU extension is not built ({_ffi.CPU_IMPORT_ERROR})"
    if platform == "cuda" and _ffi.cuda_module is None:
        return f"the CUDA extension is not built ({_ffi.CUDA_IMPORT_ERROR})"
    if platform not in ("cpu", "cuda"):
        return f"no kernel for platform {platform!r}"
    return None


def _decide(spec: ConvSpec, out_sharding, hardware=None) -> Explanation:
    platform = _target_platform()
    reason = _uncovered_reason(spec, out_sharding, platform)
    if reason is not None:
        return Explanation("lax", reason, spec, None)
    # The device we lower for (or $JAX_FASTCONV_HARDWARE); the CPU path needs no hardware model.
    hw = hw_mod.resolve_hardware(hardware) if (hardware is not None or platform == "cuda") else None
    plan = planner.plan_cached(spec, hw)
    if platform == "cpu":
        return Explanation("fastconv-cpu", "CPU: the C++ direct convolution (custom call)", spec, plan)
    if plan.method == "direct" and os.environ.get(FORCE_DIRECT_ENV, "") not in ("1", "true"):
        if patch_gemm.replaces(plan, spec):
            return Explanation("gemm", f"patchify (stride = kernel size, windows inside the "
                               f"map): one GEMM at float32 precision (XLA's dot, HIGHEST), "
                               f"since no paper kernel covers it ({plan.reason}) and cuDNN's "
                               f"direct algorithms run it far from the FMA floor (set "
                               f"{FORCE_DIRECT_ENV}=1 for the plain direct kernel)", spec, plan)
        return Explanation("lax", f"no paper kernel covers this case on the GPU ({plan.reason}); "
                           f"lax beats the plain direct kernel (set {FORCE_DIRECT_ENV}=1 to force it)",
                           spec, plan)
    # The first trace of a shape may time candidates on this device (autotune.py); not when
    # planning for other hardware, nor with JAX_FASTCONV_AUTOTUNE=0.
    timed = hardware is None and autotune.enabled()
    measured = None
    if timed and autotune.worth_measuring_gemm(spec, plan):
        # A patchify layer that a kernel covers and the patch GEMM computes too: neither wins
        # on every shape, so the first trace of a shape times both (autotune.choose_gemm).
        measured = autotune.choose_gemm(spec, plan)
        if not measured.use_kernel:
            return Explanation("gemm", f"patchify (stride = kernel size, windows inside the "
                               f"map): the patch GEMM at float32 precision (XLA's dot, "
                               f"HIGHEST) was faster than the planned kernel: "
                               f"{measured.describe()} (set {autotune.ENV}=0 to force the "
                               f"kernel)", spec, plan, measured)
    if timed and autotune.worth_measuring(spec, plan):
        # The planner models our kernels only; cuDNN's FFT/Winograd algorithms can beat any
        # direct FP32 convolution, so the first trace of a shape times both (autotune.py).
        choice = autotune.choose(spec, plan)
        if not choice.use_kernel:
            return Explanation("lax", f"lax HIGHEST was faster on this device: "
                               f"{choice.describe()} (set {autotune.ENV}=0 to force the "
                               f"kernel)", spec, plan, choice)
        return Explanation("fastconv-cuda", plan.reason, spec, plan, choice)
    if timed and autotune.worth_measuring_plans(spec, plan):
        # Launch variants of the single-channel kernel that no rule separates from the planned
        # one: the first trace of a shape times them (autotune.choose_plan).
        candidates = plan_single_channel.candidate_plans(spec, hw, plan)
        if len(candidates) > 1:
            choice = autotune.choose_plan(spec, candidates)
            return Explanation("fastconv-cuda", choice.plan.reason, spec, choice.plan, choice)
    return Explanation("fastconv-cuda", plan.reason, spec, plan, measured)


def _normalize_args(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                    dimension_numbers, feature_group_count, batch_group_count,
                    preferred_element_type) -> ConvSpec:
    lhs_shape, lhs_dtype = _shape_dtype(lhs, "lhs")
    rhs_shape, rhs_dtype = _shape_dtype(rhs, "rhs")
    return normalize(lhs_shape, rhs_shape, window_strides, padding, lhs_dilation, rhs_dilation,
                     dimension_numbers, feature_group_count, batch_group_count, lhs_dtype,
                     rhs_dtype, preferred_element_type)


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         out_sharding=None):
    """Drop-in for `jax.lax.conv_general_dilated` (same signature, same result).

    2-D float32 convolutions run jax_fastconv's kernels (the C++ direct convolution on the
    CPU, the paper's kernels on the GPU); on the GPU, patchify convolutions that no kernel
    covers, or where the GEMM was measured faster, run as one GEMM (patch_gemm.py); everything
    else goes to lax. `explain()` says which.
    """
    lhs = jnp.asarray(lhs)
    rhs = jnp.asarray(rhs)
    spec = _normalize_args(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                           dimension_numbers, feature_group_count, batch_group_count,
                           preferred_element_type)
    decision = _decide(spec, out_sharding)
    if decision.path == "gemm":
        return patch_gemm.conv(lhs, rhs, spec)
    if decision.path == "lax":
        if decision.measured is not None:   # chosen by timing: keep float32 accuracy
            precision = lax.Precision.HIGHEST
        return lax.conv_general_dilated(
            lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
            rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
            feature_group_count=feature_group_count, batch_group_count=batch_group_count,
            precision=precision, preferred_element_type=preferred_element_type,
            out_sharding=out_sharding)
    return conv_p.bind(lhs, rhs, spec=spec, plan=decision.plan,
                       precision=_hashable_precision(precision))


def _hashable_precision(precision):
    if isinstance(precision, (list, tuple)):
        return tuple(precision)
    return precision


def explain(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
            dimension_numbers=None, feature_group_count=1, batch_group_count=1, precision=None,
            preferred_element_type=None, out_sharding=None, *, hardware=None) -> Explanation:
    """Which path `conv_general_dilated` takes for these arguments, the plan, and why.

    `lhs`/`rhs` may be arrays, ShapeDtypeStructs or shapes. `hardware` (a preset name such as
    "h100", a JSON path, a dict or a Hardware) plans for a device other than the current one.
    """
    del precision
    spec = _normalize_args(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                           dimension_numbers, feature_group_count, batch_group_count,
                           preferred_element_type)
    return _decide(spec, out_sharding, hardware)


def plan(lhs, rhs, window_strides=(1, 1), padding="VALID", dimension_numbers=None,
         dtype="float32", *, hardware=None, lhs_dilation=None, rhs_dilation=None):
    """The planner's Plan for a convolution (shapes or arrays), on `hardware` (default: the
    current GPU, or no GPU)."""
    lhs_shape, _ = _shape_dtype(lhs, "lhs")
    rhs_shape, _ = _shape_dtype(rhs, "rhs")
    spec = normalize(lhs_shape, rhs_shape, window_strides, padding, lhs_dilation, rhs_dilation,
                     dimension_numbers, lhs_dtype=dtype)
    return planner.plan_cached(spec, hw_mod.resolve_hardware(hardware))
