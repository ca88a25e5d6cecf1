"""The benchmark harness on CPU: layer sets, roofline arithmetic, geomeans, the JSON schema on
a tiny real run, the no-GPU CLI path, a wrong implementation caught before timing, the
adaptive R, interleaved rounds, and the device-span parsing on synthetic kernel events (one
`gpu`-marked test runs the real CUPTI trace).

Never asserts a timing (design.md: tests never time). Uses lax as the stand-in for fastconv
wherever the package's own conv is not importable.
"""
from __future__ import annotations

import json
import math

import pytest

from jax import lax

from jax_fastconv import bench, bench_report
from jax_fastconv.bench import Case
from jax_fastconv.bench_report import (SCHEMA_VERSION, geomean, markdown_summary,
                                       pct_of_roofline, roofline_floor_s, summarize,
                                       validate_result)

# Ceilings that make the arithmetic easy: 1 TFLOP/s and 1 TB/s.
CEIL = {"copy_bytes_per_s": 1e12, "gemm_flop_per_s": 1e12}


def _lax_standin(precision="HIGHEST"):
    return bench._lax_impl(precision)


def _wrong(x, w, case, spec):
    return _lax_standin()(x, w, case, spec) + 1e-3


class _Plan:
    method = "stand-in"

    def describe(self):
        return "stand-in plan"


class _Expl:
    path = "lax"
    reason = "stand-in"
    plan = _Plan()


def _explain_standin(*args, **kwargs):
    return _Expl()


STANDIN = {"fastconv": _lax_standin(), "lax_highest": _lax_standin(),
           "lax_default": _lax_standin("DEFAULT")}


def _real_or_standin():
    """The package's conv when it is importable, else lax (the harness is the same)."""
    try:
        return bench.default_impls()
    except Exception:  # noqa: BLE001 - package mid-build: test the harness with lax
        return dict(STANDIN), _explain_standin


# -- layer sets -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sets():
    return bench.load_sets()


def test_sets_load(sets):
    names = set(sets["sets"])
    for n in ("paper-single", "paper-multi", "resnet50", "vgg16", "cpu-smoke"):
        assert n in names
    assert set(sets["default_sets"]) == {"paper-single", "paper-multi", "resnet50", "vgg16"}
    for n, s in sets["sets"].items():
        assert s["cases"], n
        for e in s["cases"]:
            assert all(isinstance(e[k], int) and e[k] > 0 for k in ("C", "H", "W", "M", "KH", "KW"))
        for c in bench.expand_set(sets, n):  # every case normalises
            c.spec()


def test_paper_single(sets):
    s = sets["sets"]["paper-single"]
    assert s["padding"] == "VALID" and s["batches"] == [1, 32]
    assert all(e["C"] == 1 for e in s["cases"])
    maps = {(e["H"], e["M"]) for e in s["cases"]}
    assert maps == {(28, 512), (56, 256), (112, 128), (224, 64), (512, 32), (1024, 32)}
    assert {e["KH"] for e in s["cases"]} == {1, 3, 5}
    assert len(s["cases"]) == 18
    cases = bench.expand_set(sets, "paper-single")
    assert {c.N for c in cases} == {1, 32} and len(cases) == 36
    assert all(c.padding == "VALID" and c.layout == "NHWC" for c in cases)


def test_paper_multi(sets):
    s = sets["sets"]["paper-multi"]
    assert s["padding"] == "VALID" and s["batches"] == [1, 32]
    hs = {e["H"] for e in s["cases"]}
    assert min(hs) == 7 and max(hs) == 512
    assert all(e["C"] == e["M"] and 64 <= e["C"] <= 512 for e in s["cases"])
    assert {e["C"] for e in s["cases"]} == {64, 128, 256, 512}
    assert {e["KH"] for e in s["cases"]} == {1, 3, 5}


def test_networks(sets):
    r = sets["sets"]["resnet50"]
    assert r["padding"] == "SAME"
    first = [e for e in r["cases"] if e["KH"] == 7]
    assert first and first[0]["C"] == 3 and first[0]["stride"] == 2 and first[0]["H"] == 224
    assert sum(1 for e in r["cases"] if e["stride"] == 2) >= 6
    assert sum(e.get("count", 1) for e in r["cases"]) == 53  # convs in ResNet-50
    v = sets["sets"]["vgg16"]
    assert v["padding"] == "SAME"
    assert all(e["KH"] == 3 for e in v["cases"])
    assert sum(e.get("count", 1) for e in v["cases"]) == 13
    c1 = [c for c in bench.expand_set(sets, "resnet50", batches=[1]) if c.KH == 7][0]
    d = c1.spec().dims
    assert (d["OH"], d["OW"]) == (112, 112)


def test_expand_options(sets):
    q = bench.expand_set(sets, "paper-single", quick=True)
    assert 0 < len(q) < 18 and {c.N for c in q} == {1}
    b = bench.expand_set(sets, "vgg16", batches=[4], layouts=("NHWC", "NCHW"))
    assert {c.N for c in b} == {4} and {c.layout for c in b} == {"NHWC", "NCHW"}
    assert len(b) == 2 * len(sets["sets"]["vgg16"]["cases"])
    with pytest.raises(KeyError):
        bench.expand_set(sets, "nope")


def test_parse_shape():
    c = bench.parse_shape("2,3,32,30,8,5,5,2,same", layout="NCHW")
    assert (c.N, c.C, c.H, c.W, c.M, c.KH, c.KW) == (2, 3, 32, 30, 8, 5, 5)
    assert c.stride == (2, 2) and c.padding == "SAME" and c.layout == "NCHW"
    c = bench.parse_shape("1,1,8,8,4,3,3")
    assert c.stride == (1, 1) and c.padding == "VALID"
    assert bench.parse_shape("1,1,8,8,4,3,3,2x1").stride == (2, 1)
    for bad in ("1,2,3", "1,1,8,8,4,3,3,1,FULL", "1,1,8,8,0,3,3", "a,1,8,8,4,3,3"):
        with pytest.raises(ValueError):
            bench.parse_shape(bad)


# -- arithmetic -------------------------------------------------------------------------

def test_roofline_floor_hand_computed():
    # Compute-bound: 2e9 FLOP at 1e12 FLOP/s = 2 ms; 1e6 B at 1e12 B/s = 1 us.
    assert roofline_floor_s(2e9, 1e6, 1e12, 1e12) == pytest.approx(2e-3)
    # Memory-bound: 1e6 FLOP -> 1 us; 4e8 B at 4e12 B/s -> 100 us.
    assert roofline_floor_s(1e6, 4e8, 1e12, 4e12) == pytest.approx(1e-4)
    # paper-single 28x28 M=512 K=1 N=1, the anchors' ceilings (51.3 TFLOP/s, 4.28 TB/s):
    c = Case("t", 1, 1, 28, 28, 512, 1, 1, layout="NCHW")
    s = c.spec()
    assert s.flops == 2 * 512 * 28 * 28
    assert s.min_bytes == 4 * (28 * 28 + 512 + 512 * 28 * 28)
    floor = roofline_floor_s(s.flops, s.min_bytes, 51.3e12, 4.28e12)
    assert floor == pytest.approx(s.min_bytes / 4.28e12)
    assert floor * 1e6 == pytest.approx(0.38, abs=0.01)  # the anchors' 0.38 us
    assert pct_of_roofline(1e-6, 4e-6) == pytest.approx(25.0)
    assert pct_of_roofline(1e-6, None) is None
    with pytest.raises(ValueError):
        roofline_floor_s(1, 1, 0, 1)


def test_geomean():
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean([1.0, 10.0, 100.0]) == pytest.approx(10.0)
    assert geomean([0.5, 2.0, None, float("nan")]) == pytest.approx(1.0)
    assert geomean([]) is None and geomean([None]) is None


def test_summarize():
    rows = [dict(set="a", batch=1, layout="NHWC", status="ok", correct=True,
                 speedup_vs_lax_highest=2.0, speedup_vs_lax_default=1.0, speedup_vs_torch=None,
                 pct_roofline=10.0),
            dict(set="a", batch=1, layout="NHWC", status="ok", correct=True,
                 speedup_vs_lax_highest=8.0, speedup_vs_lax_default=4.0, speedup_vs_torch=None,
                 pct_roofline=40.0),
            dict(set="a", batch=32, layout="NHWC", status="wrong", correct=False,
                 speedup_vs_lax_highest=None, speedup_vs_lax_default=None,
                 speedup_vs_torch=None, pct_roofline=None)]
    s = summarize(rows)
    assert s["by_set"]["a"]["geomean_speedup_vs_lax_highest"] == pytest.approx(4.0)
    assert s["by_set"]["a"]["geomean_speedup_vs_lax_default"] == pytest.approx(2.0)
    assert s["by_set"]["a"]["geomean_pct_roofline"] == pytest.approx(20.0)
    assert s["by_set"]["a"]["wrong"] == 1 and s["by_set"]["a"]["timed"] == 2
    assert s["by_set_batch"]["a/b32"]["geomean_speedup_vs_lax_highest"] is None
    assert s["by_set_batch"]["a/b1"]["geomean_speedup_vs_torch"] is None


# -- real runs on CPU -------------------------------------------------------------------

TINY = [Case("tiny", 1, 1, 8, 8, 4, 3, 3, layout="NHWC"),
        Case("tiny", 2, 3, 9, 9, 4, 3, 3, stride=(2, 2), padding="SAME", layout="NCHW")]


def test_tiny_run_schema(tmp_path, monkeypatch):
    impls, explain = _real_or_standin()
    seen = []   # the impls of every _time_interleaved call: one call per case, all impls
    real = bench._time_interleaved

    def spy(fns, *a, **k):
        seen.append(list(fns))
        return real(fns, *a, **k)
    monkeypatch.setattr(bench, "_time_interleaved", spy)
    res = bench.run_benchmark(TINY, out_dir=str(tmp_path), impls=impls, explain=explain, R=16,
                              rounds=2, warmup=1, ceilings=dict(CEIL), overheads=True,
                              plot=False, progress=False, tag="t", log=lambda s: None)
    assert validate_result(res)
    seen = [x for x in seen if x != ["f"]]   # _time_rounds (overheads) times one fn
    assert seen == [["fastconv", "lax_highest", "lax_default"]] * len(TINY)
    on_disk = json.loads(next(tmp_path.glob("bench-t-*.json")).read_text())
    assert validate_result(on_disk)
    assert on_disk["meta"]["complete"] is True and on_disk["meta"]["R"] == 16
    assert len(on_disk["cases"]) == 2
    for c in on_disk["cases"]:
        assert c["status"] == "ok" and c["correct"] and c["rel_err"] <= 1e-5
        assert c["R"] >= 16 and c["fastconv_us"] > 0 and c["lax_highest_us"] > 0
        assert c["speedup_vs_lax_highest"] == pytest.approx(c["lax_highest_us"] / c["fastconv_us"])
        assert c["floor_us"] == pytest.approx(
            1e6 * max(c["flops"] / 1e12, c["min_bytes"] / 1e12))
        assert c["pct_roofline"] == pytest.approx(100 * c["floor_us"] / c["fastconv_us"])
        assert c["torch_us"] is None and c["speedup_vs_torch"] is None
        assert len(c["samples_us"]["fastconv"]) == 2
        assert c["device_us"] == {} and c["speedup_device_vs_lax_highest"] is None
        assert c["device_time_note"] == "not measured: no GPU"
    assert on_disk["meta"]["schema_version"] == SCHEMA_VERSION >= 2
    assert on_disk["meta"]["R_mode"] == "fixed"
    assert on_disk["meta"]["device_time"]["measured"] is False
    oh = on_disk["overheads"]
    assert oh["dispatch_fastconv_us"] > 0 and oh["dispatch_lax_highest_us"] > 0
    assert "by_set" in on_disk["summary"] and "tiny/b1" in on_disk["summary"]["by_set_batch"]
    text = bench.format_table(on_disk)
    assert "tiny" in text and "Geometric means" in text
    assert "| tiny | 1 |" in next(tmp_path.glob("bench-t-*.md")).read_text()


def test_wrong_impl_is_not_timed(tmp_path):
    impls = dict(STANDIN, fastconv=_wrong)
    res = bench.run_benchmark(TINY[:1], out_dir=None, impls=impls, explain=None, R=16,
                              rounds=2, warmup=1, ceilings=dict(CEIL), overheads=False,
                              plot=False, progress=False, log=lambda s: None)
    (c,) = res["cases"]
    assert c["status"] == "wrong" and c["correct"] is False
    assert c["rel_err"] > 1e-5
    for k in ("fastconv_us", "speedup_vs_lax_highest", "speedup_vs_lax_default",
              "speedup_vs_torch", "pct_roofline"):
        assert c[k] is None, k
    assert c["lax_highest_us"] is not None  # the peers are still measured
    assert res["summary"]["by_set"]["tiny"]["wrong"] == 1
    assert res["summary"]["by_set"]["tiny"]["geomean_speedup_vs_lax_highest"] is None
    assert "WRONG" in bench.format_table(res)
    validate_result(res)
    bad = json.loads(json.dumps(res))
    bad["cases"][0]["speedup_vs_lax_highest"] = 3.0
    with pytest.raises(ValueError, match="not correct"):
        validate_result(bad)


def test_validate_rejects_missing():
    with pytest.raises(ValueError):
        validate_result({"meta": {}, "cases": [{}]})


def test_memory_guard_skips():
    impls = dict(STANDIN)
    c = Case("big", 1, 1, 64, 64, 8, 3, 3)
    row = bench.run_case(c, impls=impls, ceilings=dict(CEIL), R=16, rounds=1, warmup=0,
                         mem_cap_bytes=1e3, max_bytes=1e4)
    assert row["status"] == "skipped" and row["fastconv_us"] is None and "max-gb" in row["note"]
    row = bench.run_case(c, impls=impls, ceilings=dict(CEIL), R=32, rounds=1, warmup=0,
                         mem_cap_bytes=c.spec().min_bytes * 20)
    assert row["R"] == 20 and "lowered" in row["note"]


def test_no_gpu_main(tmp_path, capsys, monkeypatch):
    import jax
    if any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("this machine has a GPU")
    impls, explain = _real_or_standin()
    monkeypatch.setattr(bench, "default_impls", lambda: (impls, explain))
    rc = bench.main(["--out", str(tmp_path), "--reps", "16", "--rounds", "2", "--warmup", "1",
                     "--no-progress", "--set", "paper-multi", "--quick"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "No GPU found" in out
    js = list(tmp_path.glob("*.json"))
    assert len(js) == 1
    d = json.loads(js[0].read_text())
    validate_result(d)
    assert d["meta"]["gpu_found"] is False
    assert {c["set"] for c in d["cases"]} == {"cpu-smoke"} and d["meta"]["quick"] is True
    assert d["meta"]["R"] == 16 and d["meta"]["R_mode"] == "fixed"
    assert d["meta"]["mem_cap_bytes"] == bench.CPU_MEM_CAP_GB * 1e9
    assert all(c["correct"] for c in d["cases"])
    try:
        import matplotlib  # noqa: F401  (the "bench" extra; CI installs only "test")
    except ImportError:
        assert not list(tmp_path.glob("*.png"))
        assert d["meta"]["plot_note"] == "matplotlib not installed: no PNG"
    else:
        pngs = list(tmp_path.glob("*.png"))
        assert pngs, "no PNG written"
        from PIL import Image
        with Image.open(pngs[0]) as im:  # written as a palette PNG (bench_report)
            assert im.mode == "P" and im.size[0] > 100 and im.size[1] > 100
    assert math.isfinite(d["meta"]["ceilings"]["gemm_flop_per_s"])


def test_register_cli():
    import argparse
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command", required=True)
    bench.register_cli(sub)
    a = p.parse_args(["bench", "--set", "resnet50", "--set", "vgg16", "--batch", "8",
                      "--layout", "both", "--quick", "--shape", "1,3,32,32,8,3,3,1,SAME"])
    assert a.func is bench.cli_main
    assert a.sets == ["resnet50", "vgg16"] and a.batch == [8] and a.quick
    cases = bench.select_cases(a, bench.load_sets(), on_gpu=True)
    assert {c.layout for c in cases} == {"NHWC", "NCHW"}
    assert {c.N for c in cases} == {8}
    assert any(c.set == "custom" for c in cases)
    assert a.reps is None and a.mem_cap_gb is None    # adaptive R
    assert a.device_time is False and a.no_stream_time is False     # stream span, no trace
    a = p.parse_args(["bench", "--reps", "48", "--device-time", "--no-stream-time",
                      "--mem-cap-gb", "4"])
    assert a.reps == 48 and a.device_time and a.no_stream_time and a.mem_cap_gb == 4.0


# -- adaptive R ---------------------------------------------------------------------------

def test_adaptive_reps_rule():
    # clamp(ceil(4000 / max(floor_us, 10)), 16, 64)
    assert bench.adaptive_reps(0.3) == 64          # tiny floors count as 10 us: 400 -> 64
    assert bench.adaptive_reps(10.0) == 64
    assert bench.adaptive_reps(62.5) == 64         # exactly 64
    assert bench.adaptive_reps(70.0) == 58         # ceil(57.1)
    assert bench.adaptive_reps(100.0) == 40
    assert bench.adaptive_reps(200.0) == 20
    assert bench.adaptive_reps(250.0) == 16
    assert bench.adaptive_reps(5000.0) == 16       # never below 16
    assert bench.adaptive_reps(float("nan")) == 64 and bench.adaptive_reps(0.0) == 64
    assert bench.adaptive_reps(1.0, target_us=200.0) == 20    # floors under 10 us count as 10
    assert (bench.MIN_R, bench.MAX_R, bench.TARGET_ROUND_US) == (16, 64, 4000.0)


@pytest.mark.parametrize("floor_us, want", [(0.3, 256), (10.0, 256), (15.625, 256), (20.0, 200),
                                            (62.5, 64), (250.0, 16), (5000.0, 16)])
def test_adaptive_reps_gpu_cap(floor_us, want):
    # on a GPU R goes up to 256: the jitted call's fixed cost (~0.9 ms on an H200) is then
    # ~3.5 us per conv instead of ~14 us at 64
    assert bench.GPU_MAX_R == 256
    assert bench.adaptive_reps(floor_us, r_max=bench.GPU_MAX_R) == want
    assert bench.choose_reps(floor_us, 1e6, mem_cap_bytes=1e12, r_max=256) == (want, None)
    assert "16, 256)" in bench.r_rule(256) and "16, 64)" in bench.R_RULE


def test_choose_reps_memory_cap():
    mb = 1e6
    assert bench.choose_reps(1.0, mb, mem_cap_bytes=1e12) == (64, None)      # adaptive
    assert bench.choose_reps(100.0, mb, mem_cap_bytes=1e12) == (40, None)
    assert bench.choose_reps(1.0, mb, R=32, mem_cap_bytes=1e12) == (32, None)  # --reps
    r, note = bench.choose_reps(1.0, mb, mem_cap_bytes=20 * mb)     # cap below adaptive R
    assert r == 20 and "lowered from 64 to 20" in note
    r, note = bench.choose_reps(100.0, mb, mem_cap_bytes=50 * mb)   # cap above adaptive R
    assert (r, note) == (40, None)
    r, note = bench.choose_reps(1.0, mb, mem_cap_bytes=3 * mb)      # never below 16
    assert r == 16 and "over the memory cap" in note
    r, note = bench.choose_reps(1.0, mb, R=48, mem_cap_bytes=30 * mb)
    assert r == 30 and "lowered from 48 to 30" in note


def test_run_case_adaptive_R_and_guard():
    impls = dict(STANDIN)
    c = Case("big", 1, 1, 64, 64, 8, 3, 3)   # floor well under 10 us at CEIL: R = 64
    per = c.spec().min_bytes
    row = bench.run_case(c, impls=impls, ceilings=dict(CEIL), rounds=1, warmup=0,
                         mem_cap_bytes=1e12, max_bytes=1.0)   # skipped: nothing compiled
    assert row["status"] == "skipped" and row["R"] == 64 and row["note"].endswith("(--max-gb)")
    row = bench.run_case(c, impls=impls, ceilings=dict(CEIL), rounds=1, warmup=0,
                         mem_cap_bytes=per * 24, max_bytes=1.0)
    assert row["R"] == 24
    slow = {"copy_bytes_per_s": 1e12, "gemm_flop_per_s": 1e12 * c.spec().flops / 1e12 / 200e-6}
    row = bench.run_case(c, impls=impls, ceilings=slow, rounds=1, warmup=0,
                         mem_cap_bytes=1e12, max_bytes=1.0)   # floor 200 us: R = 20
    assert row["floor_us"] == pytest.approx(200.0) and row["R"] == 20


# -- interleaved rounds -------------------------------------------------------------------

def _recording(calls):
    """make(name) -> an impl that appends its name to `calls` and returns its input."""
    def make(name):
        def f(x):
            calls.append(name)
            return x
        return f
    return make


def test_time_interleaved_order():
    calls = []
    make = _recording(calls)
    fns = {"fastconv": make("fastconv"), "lax_highest": make("lax_highest"),
           "lax_default": make("lax_default")}
    t = bench._time_interleaved(fns, (1,), 16, rounds=7, warmup=2, sync=lambda o: o)
    # warm-up: each once; timed rounds: each settled by an untimed call of itself, then timed
    assert calls == (["fastconv", "lax_highest", "lax_default"] * 2
                     + ["fastconv", "fastconv", "lax_highest", "lax_highest", "lax_default",
                        "lax_default"] * 7)
    assert list(t) == list(fns) and all(len(v) == 7 for v in t.values())
    calls.clear()
    bench._time_interleaved(fns, (1,), 16, rounds=2, warmup=0, sync=lambda o: o, settle=0)
    assert calls == ["fastconv", "lax_highest", "lax_default"] * 2
    assert all(v >= 0 for vs in t.values() for v in vs)
    assert len(bench._time_rounds(make("x"), (1,), 1, 3, 0)) == 3


# -- device span: parsing synthetic kernel events ------------------------------------------

def _call_events(t0_ns, kernels):
    """Kernel events of one call starting at t0: kernels = [(gap_before_ns, dur_ns, name)]."""
    out, t = [], t0_ns
    for gap, dur, name in kernels:
        t += gap
        out.append((t, dur, name))
        t += dur
    return out


def test_cluster_kernel_events():
    ev = (_call_events(0, [(0, 1000, "a"), (500, 2000, "b")])              # 0 .. 3500
          + _call_events(10e6, [(0, 4000, "c")])                           # 4 ms later
          + [(10e6 + 100, 1000, "d")])                                    # overlaps c
    cl = bench.cluster_kernel_events(list(reversed(ev)))                   # order of input
    assert len(cl) == 2
    assert cl[0]["span_ns"] == 3500 and cl[0]["busy_ns"] == 3000 and cl[0]["kernels"] == 2
    assert cl[0]["names"] == ["a", "b"]
    assert cl[1]["span_ns"] == 4000 and cl[1]["busy_ns"] == 5000 and cl[1]["kernels"] == 2
    # a gap of exactly 1.5 ms stays in the cluster, longer splits
    assert len(bench.cluster_kernel_events([(0, 10, "a"), (1.5e6 + 10, 10, "b")])) == 1
    assert len(bench.cluster_kernel_events([(0, 10, "a"), (1.5e6 + 11, 10, "b")])) == 2
    # gaps measured from the latest end so far, not from the previous kernel's end
    long_then_short = [(0, 5e6, "long"), (1e3, 10, "short"), (5e6 + 1e6, 10, "next")]
    assert len(bench.cluster_kernel_events(long_then_short)) == 1
    assert len(bench.cluster_kernel_events([(0, 10, "a"), (0, 10, "a")])) == 1   # duplicate
    assert bench.cluster_kernel_events([]) == []


def test_device_times_from_events():
    R = 16
    calls = ["fastconv", "lax_highest", "lax_default"] * 3
    spans = {"fastconv": 32e3, "lax_highest": 96e3, "lax_default": 64e3}   # ns per call
    ev, t = [], 0.0
    for i, name in enumerate(calls):
        extra = 1.0 + 0.5 * (i // 3 == 1)        # the second call of each impl is slower
        if name == "fastconv":
            ks = [(0, spans[name] * extra, "fastconv_kernel")]
        else:   # lax: transposes + conv with idle gaps in between
            d = spans[name] * extra
            ks = [(0, 0.1 * d, "transpose"), (0.1 * d, 0.6 * d, "cudnn_conv"),
                  (0.1 * d, 0.1 * d, "transpose")]
        ev += _call_events(t, ks)
        t += 5e6
    res = bench.device_times_from_events(ev, calls, R)
    assert res["note"] is None
    assert res["device_us"]["fastconv"] == pytest.approx(32.0 / R)
    assert res["device_us"]["lax_highest"] == pytest.approx(96.0 / R)
    assert res["device_us"]["lax_default"] == pytest.approx(64.0 / R)
    assert res["kernel_us"]["fastconv"] == pytest.approx(32.0 / R)
    assert res["kernel_us"]["lax_highest"] == pytest.approx(0.8 * 96.0 / R)
    assert len(res["device_samples_us"]["lax_highest"]) == 3
    assert res["kernels"]["lax_highest"]["per_conv"] == pytest.approx(3 / R)
    assert res["kernels"]["lax_highest"]["names"] == ["transpose", "cudnn_conv"]
    # a stray kernel: 10 clusters for 9 calls -> None and a note, never an exception
    bad = bench.device_times_from_events(ev + [(t + 5e6, 100, "stray")], calls, R)
    assert bad["device_us"] == {"fastconv": None, "lax_highest": None, "lax_default": None}
    assert bad["kernel_us"]["fastconv"] is None and "10 clusters" in bad["note"]
    # a host stall inside a call: its kernels split 2 ms apart (over the 1.5 ms gap) while
    # the calls are 20 ms apart (a sleep) -> merged back into that call, with a note
    st_calls, st_ev = ["fastconv", "lax_highest"] * 3, []
    for i, name in enumerate(st_calls):
        ks = ([(0, 1e4, "k"), (2e6, 1e4, "k")] if i == 1 else [(0, 1e4, "k"), (0, 1e4, "k")])
        st_ev += _call_events(20e6 * i, ks)
    st = bench.device_times_from_events(st_ev, st_calls, R)
    assert "7 clusters for 6 traced calls: merged across the 1 smallest" in st["note"]
    assert st["device_us"]["fastconv"] == pytest.approx(20.0 / R)
    assert st["device_samples_us"]["lax_highest"] == pytest.approx([2020.0 / R, 20 / R, 20 / R])
    assert st["kernel_us"]["lax_highest"] == pytest.approx(20.0 / R)
    # a gap that is not clearly smaller than the gaps between calls is never merged
    assert bench._merge_clusters(bench.cluster_kernel_events(
        [(0, 10, "a"), (4e6, 10, "b"), (9e6, 10, "c")]), 2)[1] is None
    empty = bench.device_times_from_events([], calls, R)
    assert empty["device_us"]["fastconv"] is None and "no GPU kernel events" in empty["note"]
    assert bench.device_times_from_events(ev, [], R)["note"] == "no calls were traced"


def test_measure_device_time_with_fake_tracer():
    calls = []
    make = _recording(calls)
    fns = {"fastconv": make("fastconv"), "lax_highest": make("lax_highest")}

    def tracer(body):
        body()   # one synthetic cluster per call made, span = 1 us x (1 + index of impl) x R
        return [(i * 5e6, 1e3 * 16 * (1 + list(fns).index(n)), n) for i, n in enumerate(calls)]
    res = bench.measure_device_time(fns, (0,), 16, sleep_s=0.0, tracer=tracer)
    assert calls == ["fastconv", "lax_highest"] * 3
    assert res["note"] is None
    assert res["device_us"] == {"fastconv": pytest.approx(1.0), "lax_highest": pytest.approx(2.0)}

    def broken(body):
        raise RuntimeError("no CUPTI")
    res = bench.measure_device_time(fns, (0,), 16, sleep_s=0.0, tracer=broken)
    assert res["device_us"] == {"fastconv": None, "lax_highest": None}
    assert "trace failed" in res["note"] and "no CUPTI" in res["note"]


def test_kernel_events_from_real_trace():
    """The jax.profiler plumbing on this jax (the CPU host plane stands in for the GPU's)."""
    import jax
    import jax.numpy as jnp
    f = jax.jit(lambda x: jnp.sin(x) * 2.0)
    x = jnp.ones((64, 64))
    f(x).block_until_ready()
    ev = bench._trace_kernel_events(lambda: f(x).block_until_ready(),
                                    plane_contains="/host:CPU", line_contains="")
    assert ev and all(isinstance(s, float) and isinstance(d, float) and isinstance(n, str)
                      for s, d, n in ev)
    assert bench._trace_kernel_events(lambda: f(x).block_until_ready()) == []  # no GPU plane


# Device span per conv (us) that _synthetic_trace's events give each impl at R = 16.
SYNTHETIC_DEVICE_US = {"fastconv": 2.0, "lax_highest": 6.0, "lax_default": 4.0}


def _synthetic_trace(monkeypatch):
    """Replace the CUPTI trace by one synthetic cluster per interleaved call (R = 16)."""
    def tracer(body):
        body()
        order = ["fastconv", "lax_highest", "lax_default"] * bench.DEVICE_CALLS
        return [(i * 5e6, SYNTHETIC_DEVICE_US[n] * 1e3 * 16, n) for i, n in enumerate(order)]
    monkeypatch.setattr(bench, "_trace_kernel_events", tracer)
    return SYNTHETIC_DEVICE_US


def test_run_case_device_time(monkeypatch):
    """run_case with device time on (as on a GPU), the trace replaced by synthetic events
    for its 3 x 3 interleaved calls: fastconv 2 us, lax HIGHEST 6 us, lax DEFAULT 4 us."""
    per = _synthetic_trace(monkeypatch)
    row = bench.run_case(TINY[0], impls=dict(STANDIN), ceilings=dict(CEIL), R=16, rounds=1,
                         warmup=0, device_time=True)
    assert row["status"] == "ok" and row["device_time_note"] is None
    assert row["device_us"] == {k: pytest.approx(v) for k, v in per.items()}
    assert row["speedup_device_vs_lax_highest"] == pytest.approx(3.0)
    assert row["speedup_device_vs_lax_default"] == pytest.approx(2.0)
    assert row["pct_roofline_device"] == pytest.approx(100 * row["floor_us"] / 2.0)
    assert row["speedup_vs_lax_highest"] is not None   # the wall columns are still there


def test_run_benchmark_device_plumbing(tmp_path, monkeypatch):
    """A run that takes the CPU for a GPU (device time on), the trace replaced by synthetic
    events: the device columns reach the JSON, the summary and the Markdown."""
    import jax
    per = _synthetic_trace(monkeypatch)
    monkeypatch.setattr(bench, "_gpu_devices", lambda: jax.devices()[:1])
    res = bench.run_benchmark(TINY[:1], out_dir=str(tmp_path), impls=dict(STANDIN),
                              explain=None, R=16, rounds=1, warmup=0, ceilings=dict(CEIL),
                              use_torch=False, overheads=False, plot=False, progress=False,
                              tag="d", log=lambda s: None, device_time=True)
    d = json.loads(next(tmp_path.glob("bench-d-*.json")).read_text())
    assert validate_result(d) and d["meta"]["device_time"]["measured"] is True
    assert d["meta"]["mem_cap_bytes"] == bench.DEFAULT_MEM_CAP_GB * 1e9
    (c,) = d["cases"]
    assert c["speedup_device_vs_lax_highest"] == pytest.approx(3.0)
    b = d["summary"]["by_set_batch"]["tiny/b1"]
    assert b["geomean_speedup_device_vs_lax_highest"] == pytest.approx(3.0)
    md = next(tmp_path.glob("bench-d-*.md")).read_text()
    assert "device span (CUPTI): vs lax HIGHEST" in md and "3.00x" in md
    assert "dev xlaxH" in bench.format_table(res)
    res2 = bench.run_benchmark(TINY[:1], out_dir=None, impls=dict(STANDIN), explain=None,
                               R=16, rounds=1, warmup=0, ceilings=dict(CEIL), use_torch=False,
                               device_time=False, overheads=False, plot=False,
                               progress=False, log=lambda s: None)
    assert res2["cases"][0]["device_us"] == {}
    assert res2["cases"][0]["device_time_note"] == "not measured (no --device-time)"


@pytest.mark.gpu
def test_device_time_on_gpu():
    """The real CUPTI path: a small case on the GPU gets a device span for every impl."""
    import jax
    if jax.default_backend() != "gpu":
        pytest.skip("needs a CUDA device")
    impls, explain = bench.default_impls()
    c = Case("gpu", 1, 8, 32, 32, 8, 3, 3, layout="NHWC")
    row = bench.run_case(c, impls=impls, ceilings=dict(CEIL), explain=explain, R=16,
                         rounds=2, warmup=1, device_time=True)
    assert row["status"] == "ok", row.get("error")
    assert row["device_time_note"] is None, row["device_time_note"]
    for k in ("fastconv", "lax_highest", "lax_default"):
        assert row["device_us"][k] > 0 and row["kernel_us"][k] > 0
    assert row["speedup_device_vs_lax_highest"] > 0 and row["pct_roofline_device"] > 0


# -- summary, markdown and schema with the device columns ----------------------------------

def _row(set_="a", batch=1, sp=2.0, sp_dev=None, status="ok", correct=True, dev=None):
    return dict(set=set_, batch=batch, layout="NHWC", status=status, correct=correct,
                speedup_vs_lax_highest=sp, speedup_vs_lax_default=sp, speedup_vs_torch=None,
                pct_roofline=10.0, speedup_device_vs_lax_highest=sp_dev,
                speedup_device_vs_lax_default=sp_dev,
                pct_roofline_device=None if sp_dev is None else 20.0 * sp_dev,
                device_us=dev if dev is not None else ({} if sp_dev is None else
                                                       {"fastconv": 1.0, "lax_highest": sp_dev}))


def _result(rows):
    meta = {"device": "Fake GPU", "platform": "gpu", "jax_version": "0", "date": "2026-01-01",
            "git_commit": None, "R": None, "rounds": 7, "round_order": "interleaved",
            "device_time": {"measured": True, "note": None}}
    return {"meta": meta, "cases": rows, "summary": summarize(rows)}


def test_summary_and_markdown_device_columns():
    rows = [_row(sp=1.0, sp_dev=4.0), _row(sp=4.0, sp_dev=9.0),
            _row(sp=2.0, sp_dev=None, dev={"fastconv": None, "lax_highest": None}),
            _row(batch=32, sp=0.5, sp_dev=None)]
    s = summarize(rows)
    b1 = s["by_set_batch"]["a/b1"]
    assert b1["geomean_speedup_vs_lax_highest"] == pytest.approx(2.0)      # 1, 4, 2
    assert b1["geomean_speedup_device_vs_lax_highest"] == pytest.approx(6.0)  # 4, 9 (None out)
    assert b1["n_device_vs_lax_highest"] == 2
    assert b1["geomean_pct_roofline_device"] == pytest.approx(120.0)
    b32 = s["by_set_batch"]["a/b32"]
    assert b32["geomean_speedup_device_vs_lax_highest"] is None
    assert b32["n_device_vs_lax_highest"] == 0
    md = markdown_summary(_result(rows))
    assert "wall/R (prescribed)" in md and "device span (CUPTI)" in md
    lines = md.splitlines()
    row1 = next(ln for ln in lines if ln.startswith("| a | 1 |"))
    assert "2.00x" in row1 and "6.00x" in row1 and "120.0%" in row1
    row32 = next(ln for ln in lines if ln.startswith("| a | 32 |"))
    assert row32.count("|") == lines[2].count("|") and row32.rstrip().endswith("- | - | - |")
    text = bench.format_table({"meta": _result(rows)["meta"], "cases": [], "summary": s})
    assert "dev xlaxH" not in text   # no case with a device span: no device columns


def test_markdown_without_device_time():
    rows = [_row(sp=2.0), _row(batch=32, sp=0.5)]
    res = _result(rows)
    res["meta"]["device_time"] = {"measured": False, "note": "not measured: no GPU"}
    md = markdown_summary(res)
    assert "device span (CUPTI): not measured: no GPU" in md
    assert "| set | batch | cases | vs lax HIGHEST |" in md      # the wall-only table
    assert "| a | 1 | 1 | 2.00x | 2.00x | - | 10.0% |" in md
    assert "R calls (R adaptive per case" in md


@pytest.mark.parametrize("r_max,commit,want_r,want_commit", [
    (None, None, "16 to 64,", "commit unknown."),                 # results before meta.R_max
    (256, "0123456789abcdef", "16 to 256,", "commit 0123456789."),
    (256, "db83d06,a4193df", "16 to 256,", "commit db83d06,a4193df."),  # merged pieces
])
def test_markdown_header_r_rule_and_commits(r_max, commit, want_r, want_commit):
    res = _result([_row(sp=2.0)])
    res["meta"]["git_commit"] = commit
    if r_max is not None:
        res["meta"]["R_max"] = r_max
    md = markdown_summary(res)
    assert want_r in md and want_commit in md


def test_validate_device_fields():
    rows = [dict(set="a", batch=1, N=1, C=1, H=8, W=8, M=4, KH=3, KW=3, stride=[1, 1],
                 padding="VALID", layout="NHWC", flops=1, min_bytes=1, floor_us=1.0,
                 fastconv_us=2.0, lax_highest_us=4.0, lax_default_us=3.0, torch_us=None,
                 speedup_vs_lax_highest=2.0, speedup_vs_lax_default=1.5, speedup_vs_torch=None,
                 pct_roofline=50.0, rel_err=1e-7, correct=True, method="x", status="ok", R=64,
                 device_us={"fastconv": 1.0, "lax_highest": None}, kernel_us={},
                 speedup_device_vs_lax_highest=None, speedup_device_vs_lax_default=None,
                 pct_roofline_device=100.0, device_time_note="2 clusters for 9 calls")]
    meta = {"schema_version": SCHEMA_VERSION, "device": "d", "platform": "gpu",
            "gpu_found": True, "jax_version": "0", "date": "2026", "git_commit": None,
            "R": None, "rounds": 7, "warmup": 2, "complete": True, "method": "m",
            "ceilings": dict(CEIL), "R_rule": bench.R_RULE, "R_mode": "adaptive",
            "device_time": {"measured": True}}
    res = {"meta": meta, "overheads": {}, "cases": rows, "summary": summarize(rows)}
    assert validate_result(res)
    for change, msg in [({"device_us": {"fastconv": -1.0}}, "positive"),
                        ({"pct_roofline_device": "50"}, "pct_roofline_device"),
                        ({"correct": False, "status": "wrong", "fastconv_us": None,
                          "speedup_vs_lax_highest": None, "speedup_vs_lax_default": None,
                          "pct_roofline": None, "pct_roofline_device": None},
                         "device_us.fastconv")]:
        bad = json.loads(json.dumps(res))
        bad["cases"][0].update(change)
        with pytest.raises(ValueError, match=msg):
            validate_result(bad)
    bad = json.loads(json.dumps(res))
    del bad["cases"][0]["device_us"]
    with pytest.raises(ValueError, match="device_us"):
        validate_result(bad)                       # required from schema 2 on
    bad["meta"]["schema_version"] = 1
    with pytest.raises(ValueError, match="meta.R"):
        validate_result(bad)                       # schema 1: R must be a number
    bad["meta"]["R"] = 16
    assert validate_result(bad)                    # schema 1 files: device fields optional


# -- roofline coverage (the paper sets' "X% of the roofline above a floor" count) -----------

def _cov_row(set_, floor, wall, dev, status="ok", path="fastconv-cuda", C=64):
    return dict(set=set_, batch=1, N=1, C=C, H=56, W=56, M=64, KH=3, KW=3, stride=[1, 1],
                padding="VALID", layout="NHWC", status=status, correct=status == "ok",
                floor_us=floor, pct_roofline=wall, pct_roofline_device=dev, path=path)


@pytest.mark.parametrize("set_,floor,counted", [
    ("paper-multi", 49.9, False), ("paper-multi", 50.0, True),
    ("paper-single", 7.9, False), ("paper-single", 8.0, True)])
def test_roofline_coverage_floor(set_, floor, counted):
    cv = bench_report.roofline_coverage([_cov_row(set_, floor, 60.0, 80.0)],
                                        bench_report.COVERAGE_FLOOR_US[set_])
    assert cv["cases"] == int(counted)
    assert (cv["wall"], cv["device"]) == ((0, 1) if counted else (0, 0))


def test_roofline_coverage_counts_and_misses():
    rows = [_cov_row("paper-multi", 100.0, 75.0, 80.0),            # both reach 70%
            _cov_row("paper-multi", 100.0, 65.0, 72.0, C=128),      # device only
            _cov_row("paper-multi", 100.0, 60.0, 69.6, C=256, path="lax"),   # neither
            _cov_row("paper-multi", 100.0, 50.0, None, C=512),      # no device span: wall %
            _cov_row("paper-multi", 100.0, 90.0, 95.0, status="wrong"),      # not counted
            _cov_row("other", 100.0, 10.0, 10.0)]                   # no floor for this set
    cv = bench_report.roofline_coverage(rows[:5], 50.0)
    assert (cv["cases"], cv["wall"], cv["device"], cv["with_device"]) == (4, 1, 2, 3)
    assert cv["below"] == ["N1 C256 56^2 M64 K3 V NHWC 69.6% (lax)",
                           "N1 C512 56^2 M64 K3 V NHWC 50.0%"]
    lines = bench_report.coverage_lines(rows)
    assert len(lines) == 1 and lines[0].startswith(
        "paper-multi: of the 4 cases with a floor >= 50 us, 1 reach 70% of the roofline in "
        "wall/R (prescribed), 2 of 3 in device span (CUPTI); below")
    # the device-only case (C = 128) is listed with wall % / device %; no times: no span line
    assert [w["label"] for w in cv["wall_only"]] == ["N1 C128 56^2 M64 K3 V NHWC"]
    assert ("below in wall/R only (wall % / device or stream %): N1 C128 56^2 M64 K3 V NHWC "
            "65.0% / 72.0%") \
        in lines[0] and "host cost" not in lines[0]


def test_roofline_coverage_wall_only_host_cost():
    # wall/R minus device span, per impl, over the cases below in wall/R only
    rows = [dict(_cov_row("paper-multi", 100.0, 65.0, 75.0), fastconv_us=115.0,
                 lax_highest_us=240.0, device_us={"fastconv": 99.0, "lax_highest": 226.0}),
            dict(_cov_row("paper-multi", 100.0, 68.0, 78.0, C=128), fastconv_us=107.5,
                 lax_highest_us=241.0, device_us={"fastconv": 93.5, "lax_highest": 228.0}),
            dict(_cov_row("paper-multi", 100.0, 80.0, 90.0, C=256), fastconv_us=60.0,
                 lax_highest_us=90.0, device_us={"fastconv": 10.0, "lax_highest": 10.0})]
    cv = bench_report.roofline_coverage(rows, 50.0)
    assert [w["host_us"] for w in cv["wall_only"]] == [
        {"fastconv": 16.0, "lax_highest": 14.0}, {"fastconv": 14.0, "lax_highest": 13.0}]
    line = bench_report.coverage_lines(rows)[0]
    assert line.endswith("there wall/R minus device (or stream) span per conv (the jitted "
                         "call's host cost): fastconv 14.0-16.0 us, lax HIGHEST (fp32) "
                         "13.0-14.0 us.")


def test_roofline_coverage_in_stream_span():
    """Cases with a stream span and no CUPTI span (a run without the trace): counted in the
    stream span, listed with their stream %, and the host cost read against it."""
    def row(wall, stream, C):
        return dict(_cov_row("paper-single", 10.0, wall, None, C=C), pct_roofline_stream=stream,
                    fastconv_us=20.0, lax_highest_us=50.0,
                    stream_us={"fastconv": 12.0, "lax_highest": 41.0})
    rows = [row(40.0, 75.0, 1), row(30.0, 55.0, 2), dict(_cov_row("paper-single", 10.0, 72.0,
                                                                  None, C=3))]
    cv = bench_report.roofline_coverage(rows, 8.0)
    assert (cv["cases"], cv["wall"], cv["device"], cv["with_device"]) == (3, 1, 0, 0)
    assert (cv["stream"], cv["with_stream"]) == (1, 2)
    assert cv["below"] == ["N1 C2 56^2 M64 K3 V NHWC 55.0%"]
    assert [(w["label"], w["device"], w["host_us"]) for w in cv["wall_only"]] == [
        ("N1 C1 56^2 M64 K3 V NHWC", 75.0, {"fastconv": 8.0, "lax_highest": 9.0})]
    line = bench_report.coverage_lines(rows)[0]
    assert ("1 reach 70% of the roofline in wall/R (prescribed), 1 of 2 in stream span "
            "(CUDA events); below (device %, else stream %, else wall %): N1 C2") in line


@pytest.mark.parametrize("path,measured,method,extra", [
    ("gemm", None, "patch-gemm", {}),
    ("gemm", "gemm", "patch-gemm-autotuned", {"gemm_us": 6.0, "lax_us": None}),
    ("fastconv-cuda", "gemm-kernel", "multi_channel", {"gemm_us": 9.0, "use_kernel": True}),
    ("lax", "lax", "lax-autotuned", {"lax_us": 12.0}),
    ("lax", None, "lax-fallback", {})])
def test_explain_case_names_the_path_and_keeps_the_timings(path, measured, method, extra):
    """Each benchmark row's method and autotune record: the GEMM (no kernel, or chosen by
    timing against the kernel, with both times), the kernel kept by timing, lax by timing or as
    the fallback."""
    from jax_fastconv import autotune
    choice = {None: None,
              "gemm": autotune.Choice(False, 9.0, None, 32, gemm_us=6.0),
              "gemm-kernel": autotune.Choice(True, 6.0, None, 32, gemm_us=9.0),
              "lax": autotune.Choice(False, 30.0, 12.0, 16)}[measured]
    plan = type("P", (), {"method": "multi_channel", "describe": lambda self: "a plan"})()
    e = type("E", (), {"path": path, "plan": plan, "reason": "why", "measured": choice})()
    case = bench.parse_shape("1,96,56,56,192,2,2,2")
    row = bench._explain_case(lambda *a, **k: e, case, case.spec())
    assert row["method"] == method and row["path"] == path and row["reason"] == "why"
    if choice is None:
        assert row["autotune"] is None
    else:
        for k, v in extra.items():
            assert row["autotune"][k] == v, (k, row["autotune"])
        assert ("gemm_us" in row["autotune"]) == (choice.gemm_us is not None)
