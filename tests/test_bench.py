"""The benchmark harness on CPU: layer sets, roofline arithmetic, geomeans, the JSON schema on
a tiny real run, the no-GPU CLI path, and a wrong implementation caught before timing.

Never asserts a timing (design.md: tests never time). Uses lax as the stand-in for fastconv
wherever the package's own conv is not importable.
"""
from __future__ import annotations

import json
import math

import pytest

from jax import lax

from jax_fastconv import bench
from jax_fastconv.bench import Case
from jax_fastconv.bench_report import (geomean, pct_of_roofline, roofline_floor_s, summarize,
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


def test_tiny_run_schema(tmp_path):
    impls, explain = _real_or_standin()
    res = bench.run_benchmark(TINY, out_dir=str(tmp_path), impls=impls, explain=explain, R=16,
                              rounds=2, warmup=1, ceilings=dict(CEIL), overheads=True,
                              plot=False, progress=False, tag="t", log=lambda s: None)
    assert validate_result(res)
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
                     "--no-progress", "--set", "paper-multi"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "No GPU found" in out
    js = list(tmp_path.glob("*.json"))
    assert len(js) == 1
    d = json.loads(js[0].read_text())
    validate_result(d)
    assert d["meta"]["gpu_found"] is False
    assert {c["set"] for c in d["cases"]} == {"cpu-smoke"}
    assert all(c["correct"] for c in d["cases"])
    try:
        import matplotlib  # noqa: F401  (the "bench" extra; CI installs only "test")
    except ImportError:
        assert not list(tmp_path.glob("*.png"))
        assert d["meta"]["plot_note"] == "matplotlib not installed: no PNG"
    else:
        assert list(tmp_path.glob("*.png")), "no PNG written"
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
