"""Loads the compiled modules and registers their FFI targets with XLA (once, at import)."""
from __future__ import annotations

import jax

CPU_TARGET = "fastconv_conv2d_cpu"
CUDA_TARGET = "fastconv_conv2d_cuda"
# The same handler marked command-buffer compatible (XLA may capture it into CUDA graphs): the
# default; CUDA_TARGET (no trait) with JAX_FASTCONV_CUDA_GRAPHS=0 (primitive._target).
CUDA_GRAPH_TARGET = "fastconv_conv2d_cuda_graph"
CUDA_GRAPHS_ENV = "JAX_FASTCONV_CUDA_GRAPHS"

try:
    from . import _fastconv_cpu as cpu_module
except ImportError as e:  # not built (e.g. imported from a source tree without installing)
    cpu_module = None
    CPU_IMPORT_ERROR = str(e)
else:
    CPU_IMPORT_ERROR = None
    for _name, _capsule in cpu_module.registrations().items():
        jax.ffi.register_ffi_target(_name, _capsule, platform="cpu")

try:
    from . import _fastconv_cuda as cuda_module
except ImportError as e:  # built without CUDA
    cuda_module = None
    CUDA_IMPORT_ERROR = str(e)
else:
    CUDA_IMPORT_ERROR = None
    for _name, _capsule in cuda_module.registrations().items():
        jax.ffi.register_ffi_target(_name, _capsule, platform="CUDA")


def cuda_device_count() -> int:
    return cuda_module.device_count() if cuda_module is not None else 0
