"""Where the first-trace cost of autotune.choose_gemm / choose goes, by phase: a scratch driver
run on the device in session 28, one fresh process per case. From the repo root:
python3 -P benchmarks/notes/autotune_cost.py"""
import json, os, subprocess, sys, time
CASES = {"ds1-b1-nhwc": ((1, 56, 56, 96), (2, 2, 96, 192), (2, 2), ("NHWC", "HWIO", "NHWC")),
         "stem-b1-nhwc": ((1, 224, 224, 3), (4, 4, 3, 96), (4, 4), ("NHWC", "HWIO", "NHWC")),
         "ds3-b32-nchw": ((32, 384, 14, 14), (768, 384, 2, 2), (2, 2), ("NCHW", "OIHW", "NCHW")),
         "mc-k3-b32-lax": ((32, 28, 28, 128), (3, 3, 128, 128), (1, 1), ("NHWC", "HWIO", "NHWC"))}
if len(sys.argv) == 1:
    for name in CASES:
        r = subprocess.run([sys.executable, "-P", __file__, name], capture_output=True, text=True)
        print(r.stdout.strip() or r.stderr[-2000:], flush=True)
    sys.exit(0)
name = sys.argv[1]; lhs, rhs, stride, dn = CASES[name]
t = {}; t0 = time.perf_counter()
import jax
from jax_fastconv import autotune, planner, patch_gemm
from jax_fastconv.api import _normalize_args
from jax_fastconv.hardware import resolve_hardware
from jax_fastconv.primitive import conv_p
from jax_fastconv.timing import time_interleaved
jax.devices(); t["import+init"] = time.perf_counter() - t0
spec = _normalize_args(lhs, rhs, stride, "SAME" if name.endswith("lax") else "VALID", None, None, dn, 1, 1, None)
if name.endswith("lax"):
    t0 = time.perf_counter(); c = autotune.measure(spec, planner.plan_cached(spec, resolve_hardware(None)))
    print(json.dumps({"case": name, "seconds": {"import+init": round(t["import+init"], 2), "measure() lax, cold": round(time.perf_counter() - t0, 2)}, "choice": c.describe()}))
    sys.exit(0)
plan = planner.plan_cached(spec, resolve_hardware(None))
t0 = time.perf_counter(); xs, ws, R = autotune._random_inputs(spec, autotune.BUDGET_BYTES); t["inputs"] = time.perf_counter() - t0
t0 = time.perf_counter(); k = autotune._compiled_loop(lambda x, w: conv_p.bind(x, w, spec=spec, plan=plan, precision=None), xs, ws); t["compile kernel loop"] = time.perf_counter() - t0
t0 = time.perf_counter(); g1 = jax.jit(lambda x, w: patch_gemm.conv(x, w, spec)).lower(xs[0], ws[0]).compile(); t["compile one gemm"] = time.perf_counter() - t0
t0 = time.perf_counter(); g = autotune._compiled_loop(lambda x, w: patch_gemm.conv(x, w, spec), xs, ws); t["compile gemm loop"] = time.perf_counter() - t0
t0 = time.perf_counter(); s = time_interleaved({"kernel": k, "gemm": g}, (xs, ws), R, autotune.ROUNDS, autotune.WARMUP); t["rounds"] = time.perf_counter() - t0
t0 = time.perf_counter(); c = autotune.measure(spec, plan, rival="gemm"); t["measure() again (warm caches)"] = time.perf_counter() - t0
print(json.dumps({"case": name, "R": R, "plan": plan.method, "seconds": {a: round(b, 2) for a, b in t.items()},
                  "kernel_us": round(min(s["kernel"]), 2), "gemm_us": round(min(s["gemm"]), 2), "choice": c.describe()}))
