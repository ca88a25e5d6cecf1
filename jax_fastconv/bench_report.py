"""The benchmark's arithmetic and its outputs: roofline floor, geometric means, the JSON
schema check, the text table, the Markdown summary and the PNG plot.

Pure Python (matplotlib only for the plot, imported lazily with the Agg backend), so all of
it is testable on a machine without a GPU. The measuring lives in ``bench.py``.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

SCHEMA_VERSION = 2   # 2: adaptive R (meta.R None), interleaved rounds, device span columns

# Peers, in the order of the columns. "lax_default" is TF32 on Hopper: not the same
# arithmetic as ours (fp32 FMA), so its column is labelled that way everywhere.
PEERS = ("lax_highest", "lax_default", "torch")
PEER_LABELS = {
    "lax_highest": "lax HIGHEST (fp32)",
    "lax_default": "lax DEFAULT (TF32 on Hopper)",
    "torch": "torch/cuDNN fp32",
}
# Peers with a device span (CUPTI trace of the jitted calls); torch keeps its CUDA-event time.
DEVICE_PEERS = ("lax_highest", "lax_default")
WALL_LABEL = "wall/R (prescribed)"
DEVICE_LABEL = "device span (CUPTI)"
STREAM_LABEL = "stream span (CUDA events)"

META_KEYS = {
    "schema_version": int, "device": str, "platform": str, "gpu_found": bool,
    "jax_version": str, "date": str, "git_commit": (str, type(None)), "R": (int, type(None)),
    "rounds": int, "warmup": int, "ceilings": dict, "complete": bool, "method": str,
}
META_KEYS_V2 = {"R_rule": str, "R_mode": str, "device_time": dict}
CEILING_KEYS = ("copy_bytes_per_s", "gemm_flop_per_s")
_NUM = (int, float)
_OPT_NUM = (int, float, type(None))
CASE_KEYS = {
    "set": str, "batch": int, "N": int, "C": int, "H": int, "W": int, "M": int, "KH": int,
    "KW": int, "stride": list, "padding": str, "layout": str, "flops": int, "min_bytes": int,
    "floor_us": _NUM, "fastconv_us": _OPT_NUM, "lax_highest_us": _OPT_NUM,
    "lax_default_us": _OPT_NUM, "torch_us": _OPT_NUM, "speedup_vs_lax_highest": _OPT_NUM,
    "speedup_vs_lax_default": _OPT_NUM, "speedup_vs_torch": _OPT_NUM,
    "pct_roofline": _OPT_NUM, "rel_err": _OPT_NUM, "correct": bool,
    "method": (str, type(None)), "status": str, "R": int,
}
CASE_KEYS_V2 = {
    "device_us": dict, "kernel_us": dict, "speedup_device_vs_lax_highest": _OPT_NUM,
    "speedup_device_vs_lax_default": _OPT_NUM, "pct_roofline_device": _OPT_NUM,
    "device_time_note": (str, type(None)),
}
STATUSES = ("ok", "wrong", "skipped", "error")
# Roofline coverage: per set, the cases whose floor is at least this many us (big enough to be
# bound by the hardware, not by fixed costs) and how many of them reach COVERAGE_PCT of the
# roofline. The floors are the project's targets for the paper sets (the issues' criteria).
COVERAGE_FLOOR_US = {"paper-single": 8.0, "paper-multi": 50.0}
COVERAGE_PCT = 70.0


# -- arithmetic -------------------------------------------------------------------------

def roofline_floor_s(flops: float, min_bytes: float, gemm_flop_per_s: float,
                     copy_bytes_per_s: float) -> float:
    """The time no kernel can beat: max(FLOP / GEMM rate, minimal bytes / copy bandwidth)."""
    if gemm_flop_per_s <= 0 or copy_bytes_per_s <= 0:
        raise ValueError("ceilings must be positive")
    return max(flops / gemm_flop_per_s, min_bytes / copy_bytes_per_s)


def pct_of_roofline(floor_s: float, measured_s: float | None) -> float | None:
    if measured_s is None or measured_s <= 0:
        return None
    return 100.0 * floor_s / measured_s


def speedup(peer_us: float | None, ours_us: float | None) -> float | None:
    """peer time / our time (> 1: we are faster). None when either is missing."""
    if peer_us is None or ours_us is None or ours_us <= 0 or peer_us <= 0:
        return None
    return peer_us / ours_us


def geomean(values: Iterable[float | None]) -> float | None:
    """Geometric mean of the positive finite values; None when there are none."""
    vals = [float(v) for v in values if v is not None and math.isfinite(v) and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def summarize(cases: Sequence[dict]) -> dict:
    """Geometric means of the speedups and of % of roofline, per set, per set x batch and
    per set x batch x layout (this last only when a set ran in more than one layout): wall/R
    (``geomean_speedup_vs_*``, ``geomean_pct_roofline``), device span
    (``geomean_speedup_device_vs_*``, ``geomean_pct_roofline_device``) and stream span
    (``geomean_speedup_stream_vs_*``, ``geomean_pct_roofline_stream``; None where no case
    has one)."""
    def block(rows):
        ok = [r for r in rows if r.get("status") == "ok" and r.get("correct")]
        out = {"cases": len(rows), "timed": len(ok),
               "wrong": sum(1 for r in rows if r.get("status") == "wrong"),
               "skipped": sum(1 for r in rows if r.get("status") == "skipped"),
               "errors": sum(1 for r in rows if r.get("status") == "error")}
        for p in PEERS:
            vals = [r.get(f"speedup_vs_{p}") for r in ok]
            out[f"geomean_speedup_vs_{p}"] = geomean(vals)
            out[f"n_vs_{p}"] = sum(1 for v in vals if v is not None)
        out["geomean_pct_roofline"] = geomean(r.get("pct_roofline") for r in ok)
        for clock in ("device", "stream"):
            for p in DEVICE_PEERS:
                vals = [r.get(f"speedup_{clock}_vs_{p}") for r in ok]
                out[f"geomean_speedup_{clock}_vs_{p}"] = geomean(vals)
                out[f"n_{clock}_vs_{p}"] = sum(1 for v in vals if v is not None)
            out[f"geomean_pct_roofline_{clock}"] = geomean(
                r.get(f"pct_roofline_{clock}") for r in ok)
        out["wins_vs_lax_highest"] = sum(1 for r in ok if (r.get("speedup_vs_lax_highest") or 0) > 1)
        return out

    by_set, by_set_batch, by_set_batch_layout = {}, {}, {}
    sets = list(dict.fromkeys(r["set"] for r in cases))
    for s in sets:
        rows = [r for r in cases if r["set"] == s]
        by_set[s] = block(rows)
        layouts = list(dict.fromkeys(r["layout"] for r in rows))
        for b in sorted({r["batch"] for r in rows}):
            rb = [r for r in rows if r["batch"] == b]
            by_set_batch[f"{s}/b{b}"] = block(rb)
            if len(layouts) > 1:
                for lay in layouts:
                    by_set_batch_layout[f"{s}/b{b}/{lay}"] = block(
                        [r for r in rb if r["layout"] == lay])
    out = {"all": block(list(cases)), "by_set": by_set, "by_set_batch": by_set_batch}
    if by_set_batch_layout:
        out["by_set_batch_layout"] = by_set_batch_layout
    return out


def _device_clock(c: dict) -> str | None:
    """The device clock a case's coverage is read in: "device" (CUPTI span) where it has one,
    else "stream" (stream span), else None (wall/R only)."""
    for clock in ("device", "stream"):
        if c.get(f"pct_roofline_{clock}") is not None:
            return clock
    return None


def roofline_coverage(cases: Sequence[dict], floor_min_us: float,
                      pct: float = COVERAGE_PCT) -> dict:
    """Of the correct cases with floor_us >= floor_min_us: how many reach `pct` % of the
    roofline in wall/R, in device span and in stream span, and the labels (with their device
    %, else stream %, else wall %) of those that do not in their device clock (``_device_clock``;
    in wall/R where a case has neither span)."""
    big = [c for c in cases if c.get("status") == "ok" and c.get("correct")
           and c["floor_us"] >= floor_min_us]
    wall = sum(1 for c in big if (c.get("pct_roofline") or 0.0) >= pct)
    dev = [c for c in big if c.get("pct_roofline_device") is not None]
    stream = [c for c in big if c.get("pct_roofline_stream") is not None]
    below = []
    for c in big:
        clock = _device_clock(c)
        p = c.get(f"pct_roofline_{clock}" if clock else "pct_roofline")
        if (p or 0.0) < pct:
            below.append(f"{case_label(c)} {_f(p, '{:.1f}')}%"
                         + (" (lax)" if c.get("path") == "lax" else ""))
    # below in wall/R only: what wall/R adds to the device clock there, for us and for lax
    # HIGHEST (the jitted call's host-side cost, shared by both when it is the cause)
    wall_only = []
    for c in big:
        clock = _device_clock(c)
        if clock and c[f"pct_roofline_{clock}"] >= pct and (c.get("pct_roofline") or 0.0) < pct:
            wall_only.append({"label": case_label(c), "wall": c.get("pct_roofline"),
                              "device": c[f"pct_roofline_{clock}"],
                              "host_us": {k: _wall_minus_device(c, k)
                                          for k in ("fastconv", "lax_highest")}})
    return {"floor_min_us": floor_min_us, "pct": pct, "cases": len(big), "wall": wall,
            "device": sum(1 for c in dev if c["pct_roofline_device"] >= pct),
            "with_device": len(dev),
            "stream": sum(1 for c in stream if c["pct_roofline_stream"] >= pct),
            "with_stream": len(stream), "below": below, "wall_only": wall_only}


def _wall_minus_device(c: dict, impl: str) -> float | None:
    """wall/R minus the device clock (``_device_clock``) of one impl in a case, us per conv
    (None if either is missing)."""
    wall = c.get(f"{impl}_us")
    clock = _device_clock(c)
    dev = (c.get(f"{clock}_us") or {}).get(impl) if clock else None
    return None if wall is None or dev is None else wall - dev


def coverage_lines(cases: Sequence[dict]) -> list[str]:
    """One Markdown line per set that has a coverage floor (COVERAGE_FLOOR_US)."""
    lines = []
    for s in dict.fromkeys(c["set"] for c in cases):
        if s not in COVERAGE_FLOOR_US:
            continue
        cv = roofline_coverage([c for c in cases if c["set"] == s], COVERAGE_FLOOR_US[s])
        if not cv["cases"]:
            continue
        dev = (f", {cv['device']} of {cv['with_device']} in {DEVICE_LABEL}"
               if cv["with_device"] else "")
        dev += (f", {cv['stream']} of {cv['with_stream']} in {STREAM_LABEL}"
                if cv["with_stream"] else "")
        text = (f"{s}: of the {cv['cases']} cases with a floor >= {cv['floor_min_us']:g} us, "
                f"{cv['wall']} reach {cv['pct']:g}% of the roofline in {WALL_LABEL}{dev}")
        if cv["below"]:
            text += ("; below (device %, else stream %, else wall %): "
                     + "; ".join(cv["below"]))
        if cv["wall_only"]:
            text += ("; below in wall/R only (wall % / device or stream %): "
                     + "; ".join(f"{w['label']} {_f(w['wall'], '{:.1f}')}% / "
                                 f"{w['device']:.1f}%" for w in cv["wall_only"]))
            spans = []
            for impl in cv["wall_only"][0]["host_us"]:
                v = [w["host_us"][impl] for w in cv["wall_only"] if w["host_us"][impl] is not None]
                if v:
                    spans.append(f"{PEER_LABELS.get(impl, impl)} {min(v):.1f}-{max(v):.1f} us")
            if spans:
                text += ("; there wall/R minus device (or stream) span per conv (the jitted "
                         "call's host cost): " + ", ".join(spans))
        lines.append(text + ".")
    return lines


# -- schema -----------------------------------------------------------------------------

def validate_result(d: dict) -> bool:
    """Check a result dict (or its JSON) against the schema; raise ValueError listing every
    problem, return True when it conforms."""
    problems: list[str] = []

    def need(obj, key, typ, where):
        if not isinstance(obj, dict) or key not in obj:
            problems.append(f"{where}: missing {key!r}")
            return
        v = obj[key]
        if typ in (int, _NUM, _OPT_NUM) and isinstance(v, bool):
            problems.append(f"{where}.{key}: bool where a number was expected")
        elif not isinstance(v, typ):
            problems.append(f"{where}.{key}: {type(v).__name__} is not {typ}")

    if not isinstance(d, dict):
        raise ValueError("result must be a dict")
    for k in ("meta", "overheads", "cases", "summary"):
        if k not in d:
            problems.append(f"missing top-level {k!r}")
    meta = d.get("meta", {})
    for k, t in META_KEYS.items():
        need(meta, k, t, "meta")
    version = meta.get("schema_version") if isinstance(meta, dict) else None
    v2 = isinstance(version, int) and version >= 2
    if v2:
        for k, t in META_KEYS_V2.items():
            need(meta, k, t, "meta")
    elif isinstance(meta, dict) and meta.get("R", 0) is None:
        problems.append("meta.R: null needs schema_version >= 2")
    ceil = meta.get("ceilings", {}) if isinstance(meta, dict) else {}
    for k in CEILING_KEYS:
        need(ceil, k, _NUM, "meta.ceilings")
        if isinstance(ceil, dict) and isinstance(ceil.get(k), _NUM) and not ceil[k] > 0:
            problems.append(f"meta.ceilings.{k} must be > 0")
    if not isinstance(d.get("overheads", {}), dict):
        problems.append("overheads must be a dict")
    cases = d.get("cases", [])
    if not isinstance(cases, list):
        problems.append("cases must be a list")
        cases = []
    for i, c in enumerate(cases):
        where = f"cases[{i}]"
        for k, t in CASE_KEYS.items():
            need(c, k, t, where)
        if not isinstance(c, dict):
            continue
        for k, t in CASE_KEYS_V2.items():   # optional before schema 2
            if v2 or k in c:
                need(c, k, t, where)
        for k in ("device_us", "kernel_us"):
            for impl, v in (c.get(k) or {}).items() if isinstance(c.get(k), dict) else ():
                if v is not None and (isinstance(v, bool) or not isinstance(v, _NUM) or v <= 0):
                    problems.append(f"{where}.{k}.{impl}: {v!r} is not a positive number or null")
        st = c.get("status")
        if st not in STATUSES:
            problems.append(f"{where}.status {st!r} not in {STATUSES}")
        if st == "ok" and not c.get("correct"):
            problems.append(f"{where}: status ok but not correct")
        if not c.get("correct"):
            for k in ("speedup_vs_lax_highest", "speedup_vs_lax_default", "speedup_vs_torch",
                      "pct_roofline", "fastconv_us", "speedup_device_vs_lax_highest",
                      "speedup_device_vs_lax_default", "pct_roofline_device"):
                if c.get(k) is not None:
                    problems.append(f"{where}: not correct, yet {k} = {c.get(k)}")
            dev = c.get("device_us")
            if isinstance(dev, dict) and dev.get("fastconv") is not None:
                problems.append(f"{where}: not correct, yet device_us.fastconv = "
                                f"{dev['fastconv']}")
        if c.get("correct") and c.get("rel_err") is None:
            problems.append(f"{where}: correct without a rel_err")
        if st == "ok":
            for k in ("fastconv_us", "lax_highest_us", "speedup_vs_lax_highest",
                      "pct_roofline"):
                if c.get(k) is None:
                    problems.append(f"{where}: status ok but {k} is null")
        if isinstance(c.get("R"), int) and c.get("status") in ("ok", "wrong") and c["R"] < 16:
            problems.append(f"{where}: R = {c['R']} < 16")
    summ = d.get("summary", {})
    if not isinstance(summ, dict) or "by_set" not in summ or "by_set_batch" not in summ:
        problems.append("summary needs 'by_set' and 'by_set_batch'")
    if problems:
        raise ValueError("result does not match the schema:\n  " + "\n  ".join(problems))
    return True


# -- text -------------------------------------------------------------------------------

def _f(v, fmt="{:.1f}", none="-"):
    return none if v is None else fmt.format(v)


def case_label(c: dict) -> str:
    s = c["stride"]
    st = "" if list(s) == [1, 1] else f"/s{s[0]}" if s[0] == s[1] else f"/s{s[0]}x{s[1]}"
    k = f"{c['KH']}" if c["KH"] == c["KW"] else f"{c['KH']}x{c['KW']}"
    hw = f"{c['H']}^2" if c["H"] == c["W"] else f"{c['H']}x{c['W']}"
    return f"N{c['N']} C{c['C']} {hw} M{c['M']} K{k}{st} {c['padding'][0]} {c['layout']}"


def has_device_time(result: dict, clock: str = "device") -> bool:
    """Whether any case of the result has a device span (``clock="stream"``: a stream span),
    a number, not None."""
    return any(v is not None for c in result.get("cases", [])
               for v in (c.get(f"{clock}_us") or {}).values())


def format_table(result: dict) -> str:
    """The end-of-run table: one line per case, grouped by set, then the geomeans. The
    device-span columns ("dev ...") appear when any case has one."""
    dev = has_device_time(result)
    cols = ["case", "R", "ours us", "laxH us", "laxD us", "torch us", "xlaxH", "xlaxD(TF32)",
            "xtorch", "%roof"]
    if dev:
        cols += ["dev us", "dev xlaxH", "dev xlaxD", "dev %roof"]
    stream = has_device_time(result, "stream")
    if stream:
        cols += ["str us", "str xlaxH", "str %roof"]
    cols += ["rel_err", "method"]
    rows = []
    for c in result["cases"]:
        if c["status"] == "skipped":
            rows.append((c["set"], [case_label(c), "skipped: " + (c.get("note") or "")]))
            continue
        if c["status"] == "error":
            rows.append((c["set"], [case_label(c), "ERROR: " + (c.get("error") or "")[:80]]))
            continue
        ours = _f(c["fastconv_us"]) if c["correct"] else "WRONG"
        cells = [
            case_label(c), str(c.get("R", "-")), ours, _f(c["lax_highest_us"]),
            _f(c["lax_default_us"]), _f(c["torch_us"]),
            _f(c["speedup_vs_lax_highest"], "{:.2f}"),
            _f(c["speedup_vs_lax_default"], "{:.2f}"), _f(c["speedup_vs_torch"], "{:.2f}"),
            _f(c["pct_roofline"], "{:.1f}")]
        if dev:
            cells += [_f((c.get("device_us") or {}).get("fastconv")),
                      _f(c.get("speedup_device_vs_lax_highest"), "{:.2f}"),
                      _f(c.get("speedup_device_vs_lax_default"), "{:.2f}"),
                      _f(c.get("pct_roofline_device"), "{:.1f}")]
        if stream:
            cells += [_f((c.get("stream_us") or {}).get("fastconv")),
                      _f(c.get("speedup_stream_vs_lax_highest"), "{:.2f}"),
                      _f(c.get("pct_roofline_stream"), "{:.1f}")]
        cells += [_f(c["rel_err"], "{:.1e}"), c.get("method") or "-"]
        rows.append((c["set"], cells))
    full = [r for _, r in rows if len(r) == len(cols)]
    widths = [max([len(cols[i])] + [len(r[i]) for r in full]) for i in range(len(cols))]

    def line(cells):
        if len(cells) != len(cols):
            return "  ".join(cells)
        return "  ".join(c.ljust(widths[i]) if i in (0, len(cols) - 1) else c.rjust(widths[i])
                         for i, c in enumerate(cells))

    out = []
    cur = None
    for s, r in rows:
        if s != cur:
            cur = s
            out.append("")
            out.append(f"== {s} ==")
            out.append(line(cols))
        out.append(line(r))
    out.append("")
    legend = [f"{k} = {label} per conv" for k, label, on in (
        ("dev", DEVICE_LABEL, dev), ("str", STREAM_LABEL, stream)) if on]
    if legend:
        out.append(f"us = {WALL_LABEL} per conv; " + "; ".join(legend) + ".")
    out.append(format_summary(result))
    return "\n".join(out)


def format_summary(result: dict) -> str:
    summ = result.get("summary") or summarize(result["cases"])
    dev = has_device_time(result)
    head = ["set/batch", "timed", "wrong", "skip", "geo xlaxH", "geo xlaxD(TF32)", "geo xtorch",
            "geo %roof"]
    if dev:
        head += ["dev xlaxH", "dev xlaxD(TF32)", "dev %roof"]
    stream = has_device_time(result, "stream")
    if stream:
        head += ["str xlaxH", "str xlaxD(TF32)", "str %roof"]
    items = list(summ["by_set"].items()) + list(summ["by_set_batch"].items())
    kw = max([len(head[0])] + [len(k) for k, _ in items])
    head[0] = head[0].ljust(kw)
    clocks = [(c, t) for c, t, on in (("device", f"dev = {DEVICE_LABEL}", dev),
                                       ("stream", f"str = {STREAM_LABEL}", stream)) if on]
    lines = ["Geometric means over correct, timed cases (x > 1: fastconv faster"
             + (f"; geo = {WALL_LABEL}, " + ", ".join(t for _, t in clocks) if clocks else "")
             + "):",
             "  ".join(head)]
    for key, b in items:
        cells = [
            key.ljust(kw), str(b["timed"]).rjust(5), str(b["wrong"]).rjust(5),
            str(b["skipped"]).rjust(4),
            _f(b["geomean_speedup_vs_lax_highest"], "{:.2f}").rjust(len(head[4])),
            _f(b["geomean_speedup_vs_lax_default"], "{:.2f}").rjust(len(head[5])),
            _f(b["geomean_speedup_vs_torch"], "{:.2f}").rjust(len(head[6])),
            _f(b["geomean_pct_roofline"], "{:.1f}").rjust(len(head[7]))]
        for c, _ in clocks:   # each cell right-aligned under its own heading
            for k, fmt in ((f"speedup_{c}_vs_lax_highest", "{:.2f}"),
                           (f"speedup_{c}_vs_lax_default", "{:.2f}"),
                           (f"pct_roofline_{c}", "{:.1f}")):
                cells.append(_f(b.get(f"geomean_{k}"), fmt).rjust(len(head[len(cells)])))
        lines.append("  ".join(cells))
    return "\n".join(lines)


def _r_text(m: dict, cases: Sequence[dict]) -> str:
    """"R = 16 calls" or "R calls (R adaptive per case, here 16-64 ...)"."""
    rs = sorted({c["R"] for c in cases if isinstance(c.get("R"), int)
                 and c.get("status") in ("ok", "wrong")})
    here = "" if not rs else f", here {rs[0]}" if len(rs) == 1 else f", here {rs[0]}-{rs[-1]}"
    if m.get("R") is None:
        target_ms = (m.get("R_target_round_us") or 4000.0) / 1e3
        return (f"R calls (R adaptive per case{here}: about {target_ms:g} ms of roofline work "
                f"per call, {m.get('R_min') or 16} to {m.get('R_max') or 64}, lowered by the memory "
                "cap)")
    if rs and rs != [m["R"]]:
        return f"R = {m['R']} calls (the memory cap lowered it on some cases{here})"
    return f"R = {m['R']} calls"


def markdown_summary(result: dict) -> str:
    """A Markdown table of the geomeans per set x batch, for the README: the wall/R speedups
    and, when any case has one, the device-span and stream-span speedups next to them."""
    m = result["meta"]
    summ = result.get("summary") or summarize(result["cases"])
    dev = has_device_time(result)
    stream = has_device_time(result, "stream")
    dt = m.get("device_time") or {}
    if dev:
        dev_text = (f" {DEVICE_LABEL}: GPU kernel span of each jitted call from a CUPTI trace, "
                    "/ R, median of 3 calls; it leaves out the call's host-side fixed cost "
                    "(no torch column: torch keeps its CUDA-event time).")
    elif dt.get("note"):
        dev_text = f" {DEVICE_LABEL}: {dt['note']}."
    elif "device_time" in m:
        dev_text = f" {DEVICE_LABEL}: no case got one (see device_time_note per case)."
    else:
        dev_text = ""
    if stream:
        dev_text += (f" {STREAM_LABEL}: CUDA events recorded on XLA's stream before and after "
                     "the R convolutions of each call, / R, median of the rounds: device time "
                     "as XLA runs the call (CUDA graphs, gaps between kernels), without its "
                     "host-side argument and result handling and without a profiler.")
    lines = [
        f"Device: {m['device']} ({m['platform']}), jax {m['jax_version']}, {m['date'][:10]}, "
        f"commit {','.join(c[:10] for c in (m.get('git_commit') or 'unknown').split(','))}. "
        f"Each case checked against lax "
        f"HIGHEST (rel. err <= 1e-5) before timing; {_r_text(m, result.get('cases', []))} "
        f"on distinct inputs per jit; {WALL_LABEL}: wall time of the call / R, median of "
        f"{m['rounds']} rounds"
        + (" interleaved across impls" if "round_order" in m else "")
        + (f", each timed call after {m['settle']} untimed call(s) of the same impl"
           if m.get("settle") else "")
        + f".{dev_text} Speedup = peer time / fastconv time "
        "(geometric mean over the set's correct cases); lax DEFAULT is TF32 on Hopper, "
        "not the same arithmetic.",
        "",
    ]
    clocks = [(label, c) for label, c, on in ((DEVICE_LABEL, "device", dev),
                                               (STREAM_LABEL, "stream", stream)) if on]
    wall_head = f"{WALL_LABEL}: vs lax HIGHEST" if clocks else "vs lax HIGHEST"
    head = (f"| set | batch | cases | {wall_head} | vs lax DEFAULT (TF32) | vs torch/cuDNN fp32 "
            "| % of roofline |")
    for label, _ in clocks:
        head += f" {label}: vs lax HIGHEST | vs lax DEFAULT (TF32) | % of roofline |"
    lines += [head, "|---|---:|---:|---:|---:|---:|---:|" + "---:|" * (3 * len(clocks))]
    for key, b in summ["by_set_batch"].items():
        s, bb = key.rsplit("/b", 1)
        row = (
            f"| {s} | {bb} | {b['timed']}"
            + (f" ({b['wrong']} wrong)" if b["wrong"] else "")
            + f" | {_f(b['geomean_speedup_vs_lax_highest'], '{:.2f}x')}"
            f" | {_f(b['geomean_speedup_vs_lax_default'], '{:.2f}x')}"
            f" | {_f(b['geomean_speedup_vs_torch'], '{:.2f}x')}"
            f" | {_f(b['geomean_pct_roofline'], '{:.1f}%')} |")
        for _, c in clocks:
            row += (f" {_f(b.get(f'geomean_speedup_{c}_vs_lax_highest'), '{:.2f}x')}"
                    f" | {_f(b.get(f'geomean_speedup_{c}_vs_lax_default'), '{:.2f}x')}"
                    f" | {_f(b.get(f'geomean_pct_roofline_{c}'), '{:.1f}%')} |")
        lines.append(row)
    cover = coverage_lines(result.get("cases", []))
    if cover:
        lines += [""] + cover
    return "\n".join(lines) + "\n"


# -- plot -------------------------------------------------------------------------------

def plot_result(result: dict, path: str) -> str | None:
    """Speedup vs lax per case (grouped by set and batch) and % of roofline, to a PNG.
    Returns the path, or None when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except Exception:  # noqa: BLE001 - the plot is optional on the GPU machine
        return None
    cases = [c for c in result["cases"] if c["status"] in ("ok", "wrong")]
    n = max(len(cases), 1)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(8.0, 0.22 * n + 3), 8.5), sharex=True)
    groups = list(dict.fromkeys((c["set"], c["batch"]) for c in cases))
    cmap = plt.get_cmap("tab10")
    colors = {g: cmap(i % 10) for i, g in enumerate(groups)}
    xs = list(range(len(cases)))
    for i, c in enumerate(cases):
        col = colors[(c["set"], c["batch"])]
        if not c["correct"]:
            ax1.plot([i], [1.0], marker="x", color="red", ms=9, mew=2)
            ax2.plot([i], [0.5], marker="x", color="red", ms=9, mew=2)
            continue
        if c["speedup_vs_lax_highest"]:
            sp = c["speedup_vs_lax_highest"]  # bars grow from 1 (up: faster, down: slower)
            ax1.bar(i, sp - 1.0, bottom=1.0, color=col, width=0.8)
        if c["speedup_vs_lax_default"]:
            ax1.plot([i], [c["speedup_vs_lax_default"]], "v", color="k", ms=4)
        if c["speedup_vs_torch"]:
            ax1.plot([i], [c["speedup_vs_torch"]], "o", color="dimgray", mfc="none", ms=4)
        if c.get("speedup_device_vs_lax_highest"):
            ax1.plot([i], [c["speedup_device_vs_lax_highest"]], "D", color="k", mfc="none",
                     ms=3.5)
        if c.get("speedup_stream_vs_lax_highest"):
            ax1.plot([i], [c["speedup_stream_vs_lax_highest"]], "^", color="tab:green",
                     mfc="none", ms=3.5)
        if c["pct_roofline"]:
            ax2.bar(i, c["pct_roofline"], color=col, width=0.8)
        lh = (c.get("pct_roofline_by_impl") or {}).get("lax_highest")
        if lh:
            ax2.plot([i], [lh], "_", color="k", ms=6, mew=1.5)
    ax1.axhline(1.0, color="k", lw=0.8)
    ax1.set_yscale("log")
    ax1.set_ylabel("speedup (peer time / fastconv time)")
    fig.suptitle(f"jax_fastconv on {result['meta']['device']} ({result['meta']['date'][:10]})",
                 fontsize=10)
    ax1.set_title("speedup (wall/R): bars vs lax HIGHEST, v vs lax DEFAULT (TF32), o vs "
                  "torch/cuDNN fp32; diamond: device span (CUPTI), triangle: stream span (CUDA "
                  "events) vs lax HIGHEST; red x = "
                  "wrong (not timed)", fontsize=8)
    ax2.set_yscale("log")
    ax2.set_ylabel("% of roofline (floor / time)")
    ax2.set_title("% of roofline (max(FLOP/GEMM rate, bytes/copy bandwidth) / time): bars "
                  "fastconv, - lax HIGHEST", fontsize=8)
    from matplotlib.ticker import FuncFormatter
    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    for ax in (ax1, ax2):
        ax.yaxis.set_major_formatter(fmt)
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    # group separators and labels
    start = 0
    for g in groups:
        cnt = sum(1 for c in cases if (c["set"], c["batch"]) == g)
        for ax in (ax1, ax2):
            ax.axvline(start - 0.5, color="gray", lw=0.5, ls=":")
        ax1.text(start + cnt / 2 - 0.5, 0.98, f"{g[0]} b{g[1]}", transform=ax1.get_xaxis_transform(),
                 ha="center", va="top", fontsize=7, color=colors[g], fontweight="bold")
        start += cnt
    ax2.set_xticks(xs)
    ax2.set_xticklabels([case_label(c) for c in cases], rotation=90, fontsize=5)
    fig.tight_layout()
    _save_palette_png(fig, path, dpi=130)
    plt.close(fig)
    return path


def _save_palette_png(fig, path, dpi: int) -> None:
    """The figure as a 256-colour palette PNG: the plots hold a few hundred colours (mostly
    antialiasing shades), and the palette file is ~a third of the RGBA one, which matters for a
    repository that commits every plot it quotes."""
    import io

    from PIL import Image  # a dependency of matplotlib itself

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    buf.seek(0)
    with Image.open(buf) as im:
        im.convert("RGB").quantize(256).save(path, format="PNG", optimize=True)
