"""The benchmark's arithmetic and its outputs: roofline floor, geometric means, the JSON
schema check, the text table, the Markdown summary and the PNG plot.

Pure Python (matplotlib only for the plot, imported lazily with the Agg backend), so all of
it is testable on a machine without a GPU. The measuring lives in ``bench.py``.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

SCHEMA_VERSION = 1

# Peers, in the order of the columns. "lax_default" is TF32 on Hopper: not the same
# arithmetic as ours (fp32 FMA), so its column is labelled that way everywhere.
PEERS = ("lax_highest", "lax_default", "torch")
PEER_LABELS = {
    "lax_highest": "lax HIGHEST (fp32)",
    "lax_default": "lax DEFAULT (TF32 on Hopper)",
    "torch": "torch/cuDNN fp32",
}

META_KEYS = {
    "schema_version": int, "device": str, "platform": str, "gpu_found": bool,
    "jax_version": str, "date": str, "git_commit": (str, type(None)), "R": int,
    "rounds": int, "warmup": int, "ceilings": dict, "complete": bool, "method": str,
}
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
STATUSES = ("ok", "wrong", "skipped", "error")


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
    per set x batch x layout (this last only when a set ran in more than one layout)."""
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
        st = c.get("status")
        if st not in STATUSES:
            problems.append(f"{where}.status {st!r} not in {STATUSES}")
        if st == "ok" and not c.get("correct"):
            problems.append(f"{where}: status ok but not correct")
        if not c.get("correct"):
            for k in ("speedup_vs_lax_highest", "speedup_vs_lax_default", "speedup_vs_torch",
                      "pct_roofline", "fastconv_us"):
                if c.get(k) is not None:
                    problems.append(f"{where}: not correct, yet {k} = {c.get(k)}")
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


def format_table(result: dict) -> str:
    """The end-of-run table: one line per case, grouped by set, then the geomeans."""
    cols = ["case", "ours us", "laxH us", "laxD us", "torch us", "xlaxH", "xlaxD(TF32)",
            "xtorch", "%roof", "rel_err", "method"]
    rows = []
    for c in result["cases"]:
        if c["status"] == "skipped":
            rows.append((c["set"], [case_label(c), "skipped: " + (c.get("note") or "")]))
            continue
        if c["status"] == "error":
            rows.append((c["set"], [case_label(c), "ERROR: " + (c.get("error") or "")[:80]]))
            continue
        ours = _f(c["fastconv_us"]) if c["correct"] else "WRONG"
        rows.append((c["set"], [
            case_label(c), ours, _f(c["lax_highest_us"]), _f(c["lax_default_us"]),
            _f(c["torch_us"]), _f(c["speedup_vs_lax_highest"], "{:.2f}"),
            _f(c["speedup_vs_lax_default"], "{:.2f}"), _f(c["speedup_vs_torch"], "{:.2f}"),
            _f(c["pct_roofline"], "{:.1f}"), _f(c["rel_err"], "{:.1e}"),
            c.get("method") or "-"]))
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
    out.append(format_summary(result))
    return "\n".join(out)


def format_summary(result: dict) -> str:
    summ = result.get("summary") or summarize(result["cases"])
    head = ["set/batch", "timed", "wrong", "skip", "geo xlaxH", "geo xlaxD(TF32)", "geo xtorch",
            "geo %roof"]
    items = list(summ["by_set"].items()) + list(summ["by_set_batch"].items())
    kw = max([len(head[0])] + [len(k) for k, _ in items])
    head[0] = head[0].ljust(kw)
    lines = ["Geometric means over correct, timed cases (x > 1: fastconv faster):",
             "  ".join(head)]
    for key, b in items:
        lines.append("  ".join([
            key.ljust(kw), str(b["timed"]).rjust(5), str(b["wrong"]).rjust(5),
            str(b["skipped"]).rjust(4),
            _f(b["geomean_speedup_vs_lax_highest"], "{:.2f}").rjust(len(head[4])),
            _f(b["geomean_speedup_vs_lax_default"], "{:.2f}").rjust(len(head[5])),
            _f(b["geomean_speedup_vs_torch"], "{:.2f}").rjust(len(head[6])),
            _f(b["geomean_pct_roofline"], "{:.1f}").rjust(len(head[7]))]))
    return "\n".join(lines)


def markdown_summary(result: dict) -> str:
    """A Markdown table of the geomeans per set x batch, for the README."""
    m = result["meta"]
    summ = result.get("summary") or summarize(result["cases"])
    lines = [
        f"Device: {m['device']} ({m['platform']}), jax {m['jax_version']}, {m['date'][:10]}, "
        f"commit {(m.get('git_commit') or 'unknown')[:10]}. Each case checked against lax "
        f"HIGHEST (rel. err <= 1e-5) before timing; R = {m['R']} calls on distinct inputs per "
        f"jit, median of {m['rounds']} rounds. Speedup = peer time / fastconv time "
        "(geometric mean over the set's correct cases); lax DEFAULT is TF32 on Hopper, "
        "not the same arithmetic.",
        "",
        "| set | batch | cases | vs lax HIGHEST | vs lax DEFAULT (TF32) | vs torch/cuDNN fp32 "
        "| % of roofline |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for key, b in summ["by_set_batch"].items():
        s, bb = key.rsplit("/b", 1)
        lines.append(
            f"| {s} | {bb} | {b['timed']}"
            + (f" ({b['wrong']} wrong)" if b["wrong"] else "")
            + f" | {_f(b['geomean_speedup_vs_lax_highest'], '{:.2f}x')}"
            f" | {_f(b['geomean_speedup_vs_lax_default'], '{:.2f}x')}"
            f" | {_f(b['geomean_speedup_vs_torch'], '{:.2f}x')}"
            f" | {_f(b['geomean_pct_roofline'], '{:.1f}%')} |")
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
    ax1.set_title("speedup: bars vs lax HIGHEST, v vs lax DEFAULT (TF32), o vs torch/cuDNN "
                  "fp32; red x = wrong (not timed)", fontsize=8)
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
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
