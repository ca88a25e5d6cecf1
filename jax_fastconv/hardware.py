"""The hardware description the planner's model needs (paper section 2.2, Table 1).

Sources, in the order `resolve_hardware` consults them:

* an explicit argument (a preset name, ``"current"``, a JSON path, a dict or a `Hardware`);
* the environment variable ``JAX_FASTCONV_HARDWARE`` (a preset name, ``"current"`` or a path to
  a JSON file of `Hardware` fields; a partial JSON overrides the fields of the current device,
  or of the preset named by its ``"base"`` key);
* the CUDA runtime, through the extension's ``device_properties(ordinal)``; what the runtime
  cannot tell (FP32 cores per SM, global-memory latency) comes from tables by compute
  capability, and a cached calibration (``python -m jax_fastconv calibrate``) overrides the
  latency, the bandwidth and the FMA rate with measured values.

Interpretation of the paper's factor 2 (Table 1, "Flops/clock cycle/core = 2"): every CUDA
core of Pascal and of Hopper retires one FP32 FMA per clock, i.e. 2 flops. `Hardware` stores
the physical rate, ``fma_per_core_per_clock = 1``, and the planner computes
``N_FMA = latency x cores_per_SM x fma_per_core_per_clock x 2`` (the 2 being the paper's flops
per FMA). That reproduces the paper's 66,048 for the GTX 1080Ti exactly and applies the same
(2x) margin on every GPU. A calibrated FMA rate enters through ``fma_per_core_per_clock``.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
from pathlib import Path
from typing import Any, Mapping

__all__ = [
    "Hardware", "PRESETS", "CORES_PER_SM", "LATENCY_CYCLES", "cores_per_sm_for",
    "latency_cycles_for", "hardware_from_properties", "current_hardware", "resolve_hardware",
    "cache_dir", "device_cache_path", "calibration_path", "load_calibration", "save_calibration",
    "apply_calibration", "run_calibration", "clear_caches", "ENV_HARDWARE", "ENV_CACHE_DIR",
]

ENV_HARDWARE = "JAX_FASTCONV_HARDWARE"
ENV_CACHE_DIR = "JAX_FASTCONV_CACHE_DIR"

KB = 1024


@dataclasses.dataclass(frozen=True)
class Hardware:
    """One GPU as the paper's model sees it. Frozen and hashable (a cache key of plans)."""

    name: str
    sm_count: int                    # N_sm
    cores_per_sm: int                # N_cores (FP32 cores per SM)
    fma_per_core_per_clock: float    # 1 on Pascal..Hopper (see the module docstring)
    clock_hz: float                  # the clock the latency is counted in
    bandwidth_bytes_per_s: float     # global-memory bandwidth
    latency_cycles: float            # global-memory latency (pointer chase), clock cycles
    shared_per_sm: int               # bytes of shared memory per SM
    shared_per_block_optin: int      # bytes of shared memory one block may opt in to
    regs_per_sm: int                 # 32-bit registers per SM
    max_threads_per_sm: int
    max_threads_per_block: int
    compute_capability: tuple[int, int]
    l2_bytes: int = 0
    max_regs_per_thread: int = 255
    source: str = "preset"           # preset | runtime | calibrated | override

    def replace(self, **changes) -> "Hardware":
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["compute_capability"] = list(self.compute_capability)
        return d

    def summary(self) -> str:
        return (f"{self.name} (sm_{self.compute_capability[0]}{self.compute_capability[1]}, "
                f"{self.sm_count} SMs x {self.cores_per_sm} cores, "
                f"{self.clock_hz / 1e6:.0f} MHz, {self.bandwidth_bytes_per_s / 1e9:.0f} GB/s, "
                f"latency {self.latency_cycles:g} cycles, "
                f"{self.shared_per_sm // KB} KB shared/SM, "
                f"{self.shared_per_block_optin // KB} KB/block; source: {self.source})")


_FIELDS = {f.name: f for f in dataclasses.fields(Hardware)}

PRESETS: dict[str, Hardware] = {
    # The paper's Table 1. Clock: the base clock the paper uses (1480 MHz); 96 KB shared
    # memory per SM (the paper's S_shared), 48 KB per block (Pascal has no larger opt-in).
    "gtx1080ti": Hardware(
        name="NVIDIA GeForce GTX 1080 Ti", sm_count=28, cores_per_sm=128,
        fma_per_core_per_clock=1, clock_hz=1480e6, bandwidth_bytes_per_s=484e9,
        latency_cycles=258, shared_per_sm=96 * KB, shared_per_block_optin=48 * KB,
        regs_per_sm=65536, max_threads_per_sm=2048, max_threads_per_block=1024,
        compute_capability=(6, 1), l2_bytes=2816 * KB, source="preset"),
    # H100 SXM5: 132 SMs, 128 FP32 cores/SM (128 FP32 FMA/clk/SM), 1.98 GHz boost,
    # 3.35 TB/s HBM3, 228 KB shared/SM, 227 KB per block after opt-in, 64K registers/SM.
    # Latency: 650 cycles, the middle of public pointer-chase figures for Hopper HBM
    # (roughly 570-860 cycles depending on clock and TLB state); `calibrate` measures it.
    "h100": Hardware(
        name="NVIDIA H100 SXM", sm_count=132, cores_per_sm=128, fma_per_core_per_clock=1,
        clock_hz=1980e6, bandwidth_bytes_per_s=3.35e12, latency_cycles=650,
        shared_per_sm=228 * KB, shared_per_block_optin=227 * KB, regs_per_sm=65536,
        max_threads_per_sm=2048, max_threads_per_block=1024, compute_capability=(9, 0),
        l2_bytes=50 * KB * KB, source="preset"),
    # H200 SXM: the H100 SXM die with 4.8 TB/s HBM3e. Latency: 690 cycles, measured with
    # cuda/calibrate.cu on an H200 (691-692 cycles at 1970-1980 MHz; the same run measured
    # 4.23 TB/s device copy, read + write, and 33.0 TFMA/s, i.e. 0.99 FMA/core/clock).
    "h200": Hardware(
        name="NVIDIA H200", sm_count=132, cores_per_sm=128, fma_per_core_per_clock=1,
        clock_hz=1980e6, bandwidth_bytes_per_s=4.8e12, latency_cycles=690,
        shared_per_sm=228 * KB, shared_per_block_optin=227 * KB, regs_per_sm=65536,
        max_threads_per_sm=2048, max_threads_per_block=1024, compute_capability=(9, 0),
        l2_bytes=50 * KB * KB, source="preset"),
}

# FP32 cores per SM by compute capability (CUDA programming guide, arithmetic throughput).
CORES_PER_SM: dict[tuple[int, int], int] = {
    (5, 0): 128, (5, 2): 128, (5, 3): 128,
    (6, 0): 64, (6, 1): 128, (6, 2): 128,
    (7, 0): 64, (7, 2): 64, (7, 5): 64,
    (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128,
    (9, 0): 128,
    (10, 0): 128, (10, 1): 128, (10, 3): 128, (11, 0): 128, (12, 0): 128, (12, 1): 128,
}

# Global-memory latency in clock cycles by compute-capability major, where the runtime cannot
# tell. Approximate public pointer-chase figures; `python -m jax_fastconv calibrate` replaces
# them with a measurement for the device at hand.
LATENCY_CYCLES: dict[int, float] = {
    5: 350,   # Maxwell
    6: 258,   # Pascal: the paper's GTX 1080Ti figure (Mei & Chu's method)
    7: 430,   # Volta / Turing
    8: 470,   # Ampere / Ada
    9: 650,   # Hopper
    10: 700,  # Blackwell
    11: 700,
    12: 700,
}
_DEFAULT_LATENCY = 650


def cores_per_sm_for(cc: tuple[int, int]) -> int:
    if cc in CORES_PER_SM:
        return CORES_PER_SM[cc]
    same_major = [v for (ma, _), v in CORES_PER_SM.items() if ma == cc[0]]
    return same_major[-1] if same_major else 128


def latency_cycles_for(cc: tuple[int, int]) -> float:
    return LATENCY_CYCLES.get(cc[0], _DEFAULT_LATENCY)


# ------------------------------------------------------------------ the runtime's view
def hardware_from_properties(p: Mapping[str, Any]) -> Hardware:
    """A `Hardware` from the extension's ``device_properties(ordinal)`` dict."""
    cc = (int(p["major"]), int(p["minor"]))
    clock_hz = float(p["clockRate_khz"]) * 1e3
    # DDR: two transfers per memory clock over memoryBusWidth bits.
    bandwidth = 2.0 * float(p["memoryClockRate_khz"]) * 1e3 * float(p["memoryBusWidth"]) / 8.0
    return Hardware(
        name=str(p["name"]), sm_count=int(p["multiProcessorCount"]),
        cores_per_sm=cores_per_sm_for(cc), fma_per_core_per_clock=1, clock_hz=clock_hz,
        bandwidth_bytes_per_s=bandwidth, latency_cycles=latency_cycles_for(cc),
        shared_per_sm=int(p["sharedMemPerMultiprocessor"]),
        shared_per_block_optin=int(p["sharedMemPerBlockOptin"]),
        regs_per_sm=int(p["regsPerMultiprocessor"]),
        max_threads_per_sm=int(p["maxThreadsPerMultiProcessor"]),
        max_threads_per_block=int(p["maxThreadsPerBlock"]), compute_capability=cc,
        l2_bytes=int(p.get("l2CacheSize", 0)), source="runtime")


def _extension():
    """The compiled CUDA module (with device_properties/calibrate), or None."""
    from . import _ffi
    return _ffi.cuda_module


@functools.lru_cache(maxsize=None)
def current_hardware(device_ordinal: int = 0) -> Hardware | None:
    """The CUDA device `device_ordinal` as the runtime reports it (plus a cached calibration),
    or None without the extension or without a CUDA device."""
    ext = _extension()
    if ext is None or not hasattr(ext, "device_properties"):
        return None
    try:
        props = ext.device_properties(int(device_ordinal))
    except RuntimeError:
        return None
    hw = hardware_from_properties(props)
    cal = load_calibration(hw.name)
    return apply_calibration(hw, cal) if cal else hw


# ------------------------------------------------------------------ calibration cache
def cache_dir() -> Path:
    """JAX_FASTCONV_CACHE_DIR, else $XDG_CACHE_HOME/jax_fastconv, else ~/.cache/jax_fastconv."""
    if os.environ.get(ENV_CACHE_DIR):
        return Path(os.environ[ENV_CACHE_DIR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "jax_fastconv"


def device_cache_path(kind: str, device_name: str) -> Path:
    """cache_dir()/<kind>-<device name as a file-name slug>.json (calibration, autotune)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", device_name).strip("_") or "device"
    return cache_dir() / f"{kind}-{slug}.json"


def calibration_path(device_name: str) -> Path:
    return device_cache_path("calibration", device_name)


def load_calibration(device_name: str) -> dict | None:
    path = calibration_path(device_name)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    keys = ("latency_cycles", "copy_bytes_per_s", "fma_per_s", "clock_hz")
    if not isinstance(data, dict) or not all(isinstance(data.get(k), (int, float)) and
                                             data[k] > 0 for k in keys):
        return None
    return data


def save_calibration(device_name: str, result: Mapping[str, Any]) -> Path:
    path = calibration_path(device_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"device": device_name, **{k: float(v) for k, v in result.items()
                                      if isinstance(v, (int, float))}}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    tmp.replace(path)
    return path


def apply_calibration(hw: Hardware, cal: Mapping[str, Any]) -> Hardware:
    """Measured latency (cycles), copy bandwidth (read + write bytes/s) and FMA rate replace
    the table/runtime values. The FMA rate becomes FMAs per core per clock at the measured
    clock, so N_FMA keeps the paper's form."""
    clock = float(cal.get("clock_hz") or hw.clock_hz)
    fma_rate = float(cal["fma_per_s"]) / (hw.sm_count * hw.cores_per_sm * clock)
    return hw.replace(latency_cycles=round(float(cal["latency_cycles"]), 1),
                      bandwidth_bytes_per_s=float(cal["copy_bytes_per_s"]), clock_hz=clock,
                      fma_per_core_per_clock=round(fma_rate, 3), source="calibrated")


def run_calibration(device_ordinal: int = 0) -> tuple[Hardware, dict, Path]:
    """Measure on the GPU (through the extension), cache per device, return the result."""
    ext = _extension()
    if ext is None or not hasattr(ext, "calibrate") or not hasattr(ext, "device_properties"):
        raise RuntimeError("calibrate needs the compiled CUDA extension "
                           "(jax_fastconv._fastconv with calibrate/device_properties)")
    props = ext.device_properties(int(device_ordinal))  # RuntimeError without a device
    hw = hardware_from_properties(props)
    result = dict(ext.calibrate(int(device_ordinal)))
    path = save_calibration(hw.name, result)
    clear_caches()
    return apply_calibration(hw, result), result, path


def clear_caches() -> None:
    current_hardware.cache_clear()


# ------------------------------------------------------------------ overrides
def _coerce_field(name: str, value: Any) -> Any:
    if name not in _FIELDS:
        raise ValueError(f"unknown Hardware field {name!r}; known: {sorted(_FIELDS)}")
    if name == "compute_capability":
        if isinstance(value, str):
            value = value.replace(".", ",").split(",")
        return tuple(int(v) for v in value)
    if name in ("name", "source"):
        return str(value)
    if name in ("fma_per_core_per_clock", "clock_hz", "bandwidth_bytes_per_s",
                "latency_cycles"):
        return float(value)
    return int(value)


def _from_mapping(d: Mapping[str, Any]) -> Hardware:
    d = dict(d)
    base_name = d.pop("base", None)
    fields = {k: _coerce_field(k, v) for k, v in d.items()}
    fields["source"] = "override"
    if base_name is not None:
        base = _lookup_name(str(base_name))
        if base is None:
            raise ValueError(f"hardware override: base {base_name!r} is not available")
        return base.replace(**fields)
    missing = [f for f, spec in _FIELDS.items()
               if f not in fields and spec.default is dataclasses.MISSING]
    if not missing:
        return Hardware(**fields)
    base = current_hardware()
    if base is None:
        raise ValueError(f"hardware override is partial (missing {missing}) and there is no "
                         f"CUDA device to take the rest from; add \"base\": one of "
                         f"{sorted(PRESETS)}")
    return base.replace(**fields)


def _lookup_name(name: str) -> Hardware | None:
    key = name.strip().lower().replace("-", "").replace("_", "").replace(" ", "")
    if key == "current":
        return current_hardware()
    for k, hw in PRESETS.items():
        if key == k:
            return hw
    raise ValueError(f"unknown hardware {name!r}: use one of {sorted(PRESETS)}, 'current', "
                     f"or a path to a JSON file of Hardware fields")


def _from_string(s: str) -> Hardware | None:
    path = Path(s).expanduser()
    if s.endswith(".json") or path.is_file():
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise ValueError(f"hardware override {s!r}: cannot read JSON: {e}") from None
        if not isinstance(data, dict):
            raise ValueError(f"hardware override {s!r}: the JSON must be an object of fields")
        return _from_mapping(data)
    return _lookup_name(s)


def resolve_hardware(hardware: None | str | Hardware | Mapping[str, Any] = None,
                     device_ordinal: int = 0) -> Hardware | None:
    """The hardware to plan for. None: $JAX_FASTCONV_HARDWARE if set, else the current CUDA
    device (None when there is none). A str: preset name, 'current' or JSON path. A dict:
    fields (partial: over its 'base' preset or over the current device)."""
    if isinstance(hardware, Hardware):
        return hardware
    if isinstance(hardware, Mapping):
        return _from_mapping(hardware)
    if isinstance(hardware, str):
        if hardware.strip().lower() == "current":
            return current_hardware(device_ordinal)
        return _from_string(hardware)
    if hardware is not None:
        raise TypeError(f"hardware must be None, a str, a dict or a Hardware, got "
                        f"{type(hardware).__name__}")
    env = os.environ.get(ENV_HARDWARE)
    if env:
        if env.strip().lower() == "current":
            return current_hardware(device_ordinal)
        return _from_string(env)
    return current_hardware(device_ordinal)
