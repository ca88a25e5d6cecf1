"""Merge several `jax-fastconv bench` result files of one device into one report.

A full paper set does not fit one 10-minute device call, so it is run in pieces (by layout,
by batch, or as `--shape` lists). This joins the pieces: cases are matched by
(N, C, H, W, M, KH, KW, stride, padding, layout); a later file's case replaces an earlier
one's; `--shape` cases ("custom") that are members of a named set take that set's name.
Every case keeps its own numbers; the summary is recomputed; `meta.merged_from` lists each
source file with its date, commit, R mode and ceilings, so nothing is hidden.

    python3 benchmarks/merge_results.py OUT_BASE FILE.json [FILE.json ...]

Inputs may be gzipped (FILE.json.gz: the committed results except the newest are stored so).
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import sys
from pathlib import Path

from jax_fastconv import bench, bench_report


def _key(c: dict) -> tuple:
    return (c["N"], c["C"], c["H"], c["W"], c["M"], c["KH"], c["KW"], tuple(c["stride"]),
            c["padding"], c["layout"])


def _set_members() -> dict:
    """key -> set name, for every case of every named set at batches 1 and 32, both layouts."""
    sets = bench.load_sets()
    members = {}
    for name in sets["sets"]:
        for layout in ("NHWC", "NCHW"):
            for case in bench.expand_set(sets, name, batches=(1, 32), layouts=(layout,)):
                members.setdefault(_key(dict(dataclasses.asdict(case), stride=list(case.stride))), name)
    return members


def merge(paths: list[str]) -> dict:
    results = [json.loads(gzip.decompress(Path(p).read_bytes()) if str(p).endswith(".gz")
                          else Path(p).read_text()) for p in paths]
    members = _set_members()
    cases: dict[tuple, dict] = {}
    for path, r in zip(paths, results):
        for c in r["cases"]:
            c = dict(c, source=Path(path).name)
            if c["set"] == "custom":
                c["set"] = members.get(_key(c), "custom")
            cases[_key(c)] = c
    # Order: set, batch, layout, then as the sets file lists them.
    order = {k: i for i, k in enumerate(members)}
    merged_cases = sorted(cases.values(), key=lambda c: (c["set"], c["batch"], c["layout"],
                                                         order.get(_key(c), 1 << 30)))
    first = results[0]
    meta = dict(first["meta"])
    meta["merged_from"] = [
        {"file": Path(p).name, "date": r["meta"]["date"], "git_commit": r["meta"]["git_commit"],
         "R_mode": r["meta"].get("R_mode"), "R": r["meta"].get("R"),
         "cases": len(r["cases"]), "complete": r["meta"].get("complete"),
         "ceilings": {k: r["meta"]["ceilings"].get(k) for k in
                      ("copy_bytes_per_s", "gemm_flop_per_s")}}
        for p, r in zip(paths, results)]
    meta["complete"] = True
    meta["git_commit"] = ",".join(dict.fromkeys(r["meta"]["git_commit"] or "?" for r in results))
    meta.pop("files", None)
    out = {"meta": meta, "overheads": first.get("overheads", {}), "cases": merged_cases,
           "summary": bench_report.summarize(merged_cases)}
    bench_report.validate_result(out)
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    base, paths = Path(argv[0]), argv[1:]
    out = merge(paths)
    base.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{base}.json").write_text(json.dumps(out, indent=1))
    Path(f"{base}.md").write_text(bench_report.markdown_summary(out))
    png = bench_report.plot_result(out, f"{base}.png")
    print(bench_report.format_summary(out))
    print(f"wrote {base}.json, {base}.md" + (f", {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
