"""Stream stamps (the benchmark's stream span): the custom calls' placement in the lowered
program (checked for CUDA on this CPU machine), the harness's plumbing with a stand-in for the
stamps, and, on a GPU, the real events.

Never asserts a timing against another (tests never time); the GPU test checks only that an
event span lies inside the wall time of the same call, which holds whatever the machine."""
from __future__ import annotations

import json
import re

import jax
import jax.numpy as jnp
import pytest

from jax_fastconv import bench, stream_stamp
from jax_fastconv.bench import Case
from jax_fastconv.bench_report import summarize, validate_result
from _helpers import StreamStampStandIn
from test_bench import CEIL, STANDIN, TINY as TINY_CASES

TINY = TINY_CASES[0]
# Stream span per conv (us) the stand-in reports for each impl, in the order run_case times them.
FAKE_US = {"fastconv": 2.0, "lax_highest": 5.0, "lax_default": 4.0}


def fake_stamps(R, fail=False):
    """The stamps' stand-in with the FAKE_US times on the slots run_case gives the impls
    (slot 2i: the i-th impl of FAKE_US)."""
    return StreamStampStandIn({2 * i: us for i, us in enumerate(FAKE_US.values())}, R, fail)


@pytest.mark.parametrize("R,slot", [(1, 0), (3, 6), (5, 62)])
def test_stamped_lowers_two_stamps_around_the_work(R, slot):
    """CUDA lowering: one stamp (slot) with no operands whose token joins every input in an
    optimization barrier, the convolutions after it, then one stamp (slot + 1) taking all R
    outputs; both kept (side effects) and returned as tokens."""
    xs = tuple(jnp.ones((1, 6, 6, 1), jnp.float32) for _ in range(R))
    ws = tuple(jnp.ones((3, 3, 1, 2), jnp.float32) for _ in range(R))

    def convs(xs, ws):
        return tuple(jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                  dimension_numbers=("NHWC", "HWIO", "NHWC"))
                     for x, w in zip(xs, ws))
    g = jax.jit(stream_stamp.stamped(convs, slot))
    text = g.trace(xs, ws).lower(lowering_platforms=("cuda",)).as_text()
    lines = text.splitlines()
    stamps = [i for i, ln in enumerate(lines) if f"@{stream_stamp.TARGET}" in ln]
    assert len(stamps) == 2
    first, last = lines[stamps[0]], lines[stamps[1]]
    assert re.search(rf"slot = {slot} ", first) and re.search(rf"slot = {slot + 1} ", last)
    assert "()" in first.split("@")[1].split(")")[0] + ")"       # no operands
    assert len(re.findall(r"%\w+", last.split("(", 1)[1].split(")")[0])) == R
    barrier = next(i for i, ln in enumerate(lines) if "optimization_barrier" in ln)
    convs_at = [i for i, ln in enumerate(lines) if "convolution" in ln]
    assert len(convs_at) == R
    assert stamps[0] < barrier < min(convs_at) and max(convs_at) < stamps[1]
    assert "has_side_effect = true" in first and "has_side_effect = true" in last


def test_stamp_rejects_bad_slots():
    with pytest.raises(ValueError, match="slot"):
        stream_stamp.stamp(slot=stream_stamp.SLOTS)
    with pytest.raises(ValueError, match="slot"):
        stream_stamp.stamped(lambda xs, ws: (), stream_stamp.SLOTS - 1)
    with pytest.raises(ValueError, match="slot"):
        stream_stamp.stamped(lambda xs, ws: (), -1)


def test_not_available_on_cpu():
    assert jax.default_backend() != "gpu" and not stream_stamp.available()


def test_run_case_stream_time():
    fake = fake_stamps(16)
    row = bench.run_case(TINY, impls=dict(STANDIN), ceilings=dict(CEIL), R=16, rounds=3,
                         warmup=1, stream_time=True, stamps=fake)
    assert row["status"] == "ok" and row["stream_time_note"] is None
    assert fake.slots == [0, 2, 4]                     # one pair of slots per impl
    assert fake.reads == [0, 2, 4] * 3                 # interleaved, read in the 3 rounds
    assert row["stream_us"] == {k: pytest.approx(v) for k, v in FAKE_US.items()}
    assert row["stream_samples_us"]["lax_highest"] == [pytest.approx(5.0)] * 3
    assert row["speedup_stream_vs_lax_highest"] == pytest.approx(2.5)
    assert row["speedup_stream_vs_lax_default"] == pytest.approx(2.0)
    assert row["pct_roofline_stream"] == pytest.approx(100 * row["floor_us"] / 2.0)
    assert row["speedup_vs_lax_highest"] is not None   # wall/R still measured


@pytest.mark.parametrize("settle", [None, 0, 2])
def test_measure_stream_time_settles_like_the_wall_rounds(monkeypatch, settle):
    seen = []
    real = bench._time_interleaved

    def spy(*a, **k):
        seen.append(k["settle"])
        return real(*a, **k)
    monkeypatch.setattr(bench, "_time_interleaved", spy)
    fns = {n: (lambda xs, ws: tuple(x * w for x, w in zip(xs, ws))) for n in FAKE_US}
    args = (tuple(jnp.ones(2) for _ in range(16)), tuple(jnp.ones(2) for _ in range(16)))
    kw = {} if settle is None else {"settle": settle}
    res = bench.measure_stream_time(fns, args, 16, 2, 1, stamps=fake_stamps(16), **kw)
    assert seen == [bench.SETTLE if settle is None else settle] and res["note"] is None
    assert res["stream_us"] == {k: pytest.approx(v) for k, v in FAKE_US.items()}


def test_run_case_stream_time_failure_is_a_note():
    row = bench.run_case(TINY, impls=dict(STANDIN), ceilings=dict(CEIL), R=16, rounds=1,
                         warmup=0, stream_time=True, stamps=fake_stamps(16, fail=True))
    assert row["status"] == "ok"
    assert row["stream_us"] == {k: None for k in FAKE_US}
    assert "stream stamps failed" in row["stream_time_note"]
    assert row["speedup_stream_vs_lax_highest"] is None and row["pct_roofline_stream"] is None
    off = bench.run_case(TINY, impls=dict(STANDIN), ceilings=dict(CEIL), R=16, rounds=1,
                         warmup=0)
    assert off["stream_us"] == {} and off["stream_time_note"] == "not measured"


def test_run_benchmark_stream_plumbing(tmp_path, monkeypatch):
    """The CPU taken for a GPU, the CUPTI trace failing and the stamps a stand-in: the stream
    columns reach the JSON, the summary, the text table and the Markdown."""
    monkeypatch.setattr(bench, "_gpu_devices", lambda: jax.devices()[:1])
    monkeypatch.setattr(bench, "_stream_stamp", fake_stamps(16))

    def no_trace(body):
        raise RuntimeError("no CUPTI here")
    monkeypatch.setattr(bench, "_trace_kernel_events", no_trace)
    res = bench.run_benchmark([TINY], out_dir=str(tmp_path), impls=dict(STANDIN), explain=None,
                              R=16, rounds=1, warmup=0, ceilings=dict(CEIL), use_torch=False,
                              overheads=False, plot=False, progress=False, tag="s",
                              log=lambda s: None)
    d = json.loads(next(tmp_path.glob("bench-s-*.json")).read_text())
    assert validate_result(d) and d["meta"]["stream_time"]["measured"] is True
    (c,) = d["cases"]
    assert c["speedup_stream_vs_lax_highest"] == pytest.approx(2.5)
    assert c["speedup_device_vs_lax_highest"] is None          # the trace failed
    b = d["summary"]["by_set_batch"]["tiny/b1"]
    assert b["geomean_speedup_stream_vs_lax_highest"] == pytest.approx(2.5)
    assert b["n_stream_vs_lax_highest"] == 1
    md = next(tmp_path.glob("bench-s-*.md")).read_text()
    assert "stream span (CUDA events): vs lax HIGHEST" in md and "2.50x" in md
    table = bench.format_table(res)
    assert "str xlaxH" in table and "2.50" in table
    assert summarize(d["cases"])["all"]["geomean_speedup_stream_vs_lax_default"] == \
        pytest.approx(2.0)


@pytest.mark.gpu
def test_stream_stamps_on_gpu():
    """The real events: every impl of a small case gets a stream span, at most its call's
    wall time; a slot never stamped is a RuntimeError naming it."""
    if not stream_stamp.available():
        pytest.skip("needs a CUDA device and the CUDA module")
    impls, explain = bench.default_impls()
    c = Case("gpu", 1, 1, 64, 64, 16, 3, 3, layout="NCHW")
    row = bench.run_case(c, impls=impls, ceilings=dict(CEIL), explain=explain, R=16,
                         rounds=3, warmup=1, stream_time=True)
    assert row["status"] == "ok", row.get("error")
    assert row["stream_time_note"] is None, row["stream_time_note"]
    for k in ("fastconv", "lax_highest", "lax_default"):
        assert 0 < row["stream_us"][k]
        # the events lie inside the call: per round, stream span <= wall time
        assert min(row["stream_samples_us"][k]) <= max(row["samples_us"][k])
    with pytest.raises(RuntimeError, match="slot 60"):
        stream_stamp._ffi.cuda_module.stamp_elapsed_us(60, 61, 0)
