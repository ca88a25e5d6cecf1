"""Session 27's scratch driver for notes/patch_gemm.md (kept for provenance; its last form,
run 3): patchify convolutions (stride == kernel, windows inside the map) through the package
(run A), and the patch GEMM (patch_gemm.conv) injected as the bench's "fastconv" impl against
the package's kernels (runs B, C). Device spans by the bench harness (bench.run_benchmark).
Runs 1 and 2 used the same einsum on the case lists quoted in the notes. On the GPU machine:
python3 -P benchmarks/notes/patchify_experiment.py (writes bench-patch-*.json under $OUT)."""
import os

import jax_fastconv.patch_gemm
from jax_fastconv import bench

def patch_gemm(x, w, case, spec):
    # runs 1-3 used a scratch einsum of the same form; the package's is checked against lax
    # in tests/test_patch_gemm.py and tests/test_gpu.py
    return jax_fastconv.patch_gemm.conv(x, w, spec)


def cases(L):
    return [bench.Case(set="patch", N=b, C=C, H=H, W=H, M=M, KH=K, KW=K, stride=(K, K),
                       padding="VALID", layout=lay, name=name)
            for b in (1, 32) for lay in ("NHWC", "NCHW") for name, C, H, M, K in L]

impls, explain = bench.default_impls()
impls.pop("lax_default")
outdir = os.environ.get("OUT", "/tmp")
A = cases([("vit-b16", 3, 224, 768, 16), ("c1-16x16-m768", 1, 224, 768, 16), ("c1-7x7-m256", 1, 28, 256, 7)])
B = cases([("c1-3x3-m64", 1, 255, 64, 3), ("c1-5x5-m64", 1, 255, 64, 5)])
f = lambda v: f"{v:8.1f}" if v else "    None"
ra = bench.run_benchmark(A, out_dir=outdir, impls=impls, explain=explain, tag="patch-gemm-package",
                         plot=False, overheads=False, use_torch=True, progress=False)
for a in ra["cases"]:
    print(f"{a['name']:16s} {a['batch']:3d} {a['layout']} floor {a['floor_us']:6.1f} ours {f(a['device_us'].get('fastconv'))} laxH {f(a['device_us'].get('lax_highest'))} torchW {f(a['torch_us'])} wall {f(a['fastconv_us'])}/{f(a['lax_highest_us'])} {a['rel_err']} {a['path']}", flush=True)
rb = bench.run_benchmark(B, out_dir=outdir, impls=dict(impls, fastconv=patch_gemm), explain=None,
                         tag="patch-gemm-c1-small", plot=False, overheads=False, use_torch=False, progress=False)
rc = bench.run_benchmark(B, out_dir=outdir, impls=impls, explain=explain, tag="patch-kernel-c1-small",
                         plot=False, overheads=False, use_torch=False, progress=False)
for a, b in zip(rb["cases"], rc["cases"]):
    print(f"{a['name']:16s} {a['batch']:3d} {a['layout']} floor {a['floor_us']:6.1f} gemm {f(a['device_us'].get('fastconv'))} ours {f(b['device_us'].get('fastconv'))} laxH {f(a['device_us'].get('lax_highest'))} {b['path']}", flush=True)
