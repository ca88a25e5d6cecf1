"""`python -m jax_fastconv info | plan | calibrate | bench` (also the `jax-fastconv` script)."""
from __future__ import annotations

import argparse
import sys


def build_info() -> dict:
    """What was built and what this process sees."""
    import jax
    from . import _ffi, __version__
    cuda = _ffi.cuda_module
    info = {
        "jax_fastconv": __version__,
        "jax": jax.__version__,
        "jaxlib": getattr(jax.lib, "__version__", None) or _jaxlib_version(),
        "cpu_module": _ffi.cpu_module is not None,
        "cuda_module": cuda is not None,
        "cuda_architectures": cuda.cuda_architectures if cuda is not None else None,
        "cuda_runtime_version": cuda.cuda_runtime_version if cuda is not None else None,
        "cuda_devices_seen_by_runtime": _ffi.cuda_device_count(),
        "jax_backend": jax.default_backend(),
        "jax_devices": [str(d) for d in jax.devices()],
    }
    if cuda is None:
        info["cuda_module_error"] = _ffi.CUDA_IMPORT_ERROR
    if _ffi.cuda_device_count() > 0:
        from . import hardware
        hw = hardware.current_hardware()
        info["device"] = None if hw is None else hw.name
    return info


def _jaxlib_version():
    try:
        import jaxlib
        return jaxlib.__version__
    except Exception:
        return None


def _cmd_info(args) -> int:
    for key, value in build_info().items():
        print(f"{key:30s} {value}")
    return 0


def make_parser() -> argparse.ArgumentParser:
    from . import bench, planner
    parser = argparse.ArgumentParser(prog="jax-fastconv", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="what was built: jax version, CUDA archs, devices seen")
    p.set_defaults(func=_cmd_info)
    planner.register_cli(sub)
    bench.register_cli(sub)
    return parser


def main(argv=None) -> int:
    args = make_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
