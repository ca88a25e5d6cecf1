"""Patchify convolutions (stride == kernel size) as one GEMM at float32 precision.

Where the windows tile the map without overlap (ViT's 16x16/16 stem and its kin), the
convolution is a matrix product: [N x OH x OW, C x KH x KW] patches times [C x KH x KW, M]
filters. The GPU runs this where no kernel of ours is planned (api._decide: a direct plan):
1 < C < 8 without a compiled strided instance (its generic one ran 0.31-0.58x lax HIGHEST on
ViT-B/16's stem) and C = 1 layers of >= 49 taps (plan_single_channel.generic_patchify); and
where a kernel is planned but the first trace timed this GEMM faster (autotune.choose_gemm,
ConvNeXt's stem at batch 1 on the H100). cuDNN's
direct algorithms are far from the FMA floor there; XLA's dot at HIGHEST (cuBLAS SGEMM) is not
(H100, b32 ViT-B/16 stem: 198 us against lax HIGHEST's 608 us, benchmarks/notes/patch_gemm.md).

`conv` is pure JAX (a crop, a reshape that splits each spatial axis into (patch, offset) in
place, one einsum), so jit, vmap and grad need no rules of their own.
"""
from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from .spec import ConvSpec

# einsum labels: batch, channel, filter, patch row / column, offset in the patch row / column
_LHS = {"N": "n", "C": "c"}
_RHS = {"O": "m", "I": "c"}
_OUT = {"N": "n", "C": "m"}


def uncovered_reason(spec: ConvSpec) -> str | None:
    """None when `conv` computes `spec` exactly as the convolution, else why not."""
    if spec.ndim_spatial != 2:
        return f"{spec.ndim_spatial} spatial dimensions (the patch GEMM is 2-D)"
    if spec.dtype != "float32" or spec.rhs_dtype != "float32" or spec.out_dtype != "float32":
        return f"dtype {spec.dtype} -> {spec.out_dtype} (float32 only)"
    if spec.feature_group_count != 1 or spec.batch_group_count != 1:
        return "grouped convolution"
    if any(v != 1 for v in spec.lhs_dilation + spec.rhs_dilation):
        return "dilation"
    d = spec.dims
    k = (d["KH"], d["KW"])
    if tuple(spec.window_strides) != k:
        return f"stride {tuple(spec.window_strides)} is not the kernel size {k[0]}x{k[1]}"
    for (lo, _), size, n_out, kk in zip(spec.padding, (d["H"], d["W"]), (d["OH"], d["OW"]), k):
        # Every window must lie inside the map: patch 0 starts at 0 and the last one ends in it.
        if lo != 0 or n_out * kk > size:
            return "a window reaches into the padding"
    if min(d.values()) <= 0:
        return "empty operand or output"
    return None


def replaces(plan, spec: ConvSpec) -> bool:
    """Whether the GPU runs this GEMM for `spec` planned as `plan` (api._decide, the plan CLI):
    no kernel is planned (method direct) and the GEMM computes the layer."""
    return plan.method == "direct" and uncovered_reason(spec) is None


def rivals(plan, spec: ConvSpec) -> bool:
    """Whether a kernel is planned for `spec` and this GEMM computes it too (stride = kernel
    size > 1x1, windows inside the map): on a GPU the first trace times the two against each
    other (autotune.choose_gemm; the plan CLI says so)."""
    d = spec.dims
    return plan.method != "direct" and d["KH"] * d["KW"] > 1 and uncovered_reason(spec) is None


def conv(lhs, rhs, spec: ConvSpec):
    """The convolution `spec` of lhs and rhs (any layouts) as one einsum at HIGHEST."""
    d = spec.dims
    lhs_s, rhs_s, out_s = spec.layouts            # e.g. "NHWC", "HWIO", "NHWC"
    crop, shape, labels = [], [], []
    for axis, ch in enumerate(lhs_s):
        if ch in "HW":
            n_out, kk = (d["OH"], d["KH"]) if ch == "H" else (d["OW"], d["KW"])
            crop.append(slice(0, n_out * kk))     # drop the rows / columns no window reads
            shape += [n_out, kk]
            labels += ["a", "h"] if ch == "H" else ["b", "w"]
        else:
            crop.append(slice(None))
            shape.append(lhs.shape[axis])
            labels.append(_LHS[ch])
    patches = lhs[tuple(crop)].reshape(shape)
    rhs_labels = "".join(_RHS.get(ch, ch.lower()) for ch in rhs_s)
    out_labels = "".join(_OUT.get(ch, {"H": "a", "W": "b"}.get(ch)) for ch in out_s)
    return jnp.einsum(f"{''.join(labels)},{rhs_labels}->{out_labels}", patches, rhs,
                      precision=lax.Precision.HIGHEST,
                      preferred_element_type=jnp.float32)
