"""benchmarks/merge_results.py: joining result files of one set run in pieces (CPU, stand-in
impls): later cases win, --shape cases take the name of the set they belong to, the summary is
recomputed and every source is listed."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from jax_fastconv import bench
from jax_fastconv.bench import Case
from jax_fastconv.bench_report import validate_result

import test_bench   # the stand-in impls and ceilings of the harness tests

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "merge_results.py"
_spec = importlib.util.spec_from_file_location("merge_results", _PATH)
merge_results = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(merge_results)

# A paper-single layer given as a --shape ("custom"), and a case of no named set.
PAPER = Case("custom", 1, 1, 28, 28, 512, 1, 1, layout="NHWC")
OTHER = test_bench.TINY[0]


def _run(tmp_path, tag, cases):
    bench.run_benchmark(cases, out_dir=str(tmp_path), impls=dict(test_bench.STANDIN),
                        explain=None, R=16, rounds=1, warmup=0, ceilings=dict(test_bench.CEIL),
                        use_torch=False, overheads=False, plot=False, progress=False, tag=tag,
                        log=lambda s: None)
    return str(next(tmp_path.glob(f"bench-{tag}-*.json")))


def test_merge(tmp_path):
    first = _run(tmp_path, "a", [PAPER, OTHER])
    second = _run(tmp_path, "b", [PAPER])
    out = merge_results.merge([first, second])
    assert validate_result(out)
    by_set = {c["set"]: c for c in out["cases"]}
    assert set(by_set) == {"paper-single", "tiny"}
    assert by_set["paper-single"]["source"] == Path(second).name     # the later file wins
    assert by_set["tiny"]["source"] == Path(first).name
    assert "paper-single/b1" in out["summary"]["by_set_batch"]
    assert [m["file"] for m in out["meta"]["merged_from"]] == [Path(first).name,
                                                               Path(second).name]
    assert out["meta"]["complete"] is True


def test_main_writes_files(tmp_path):
    first = _run(tmp_path, "a", [PAPER])
    base = tmp_path / "merged"
    assert merge_results.main([str(base), first]) == 0
    d = json.loads(Path(f"{base}.json").read_text())
    assert validate_result(d) and d["cases"][0]["set"] == "paper-single"
    assert "paper-single" in Path(f"{base}.md").read_text()
    assert merge_results.main([]) == 2
