"""Best driver graph time per (layer, build) from a log of "== pass P build B" sections of
`--time` lines (round 36's probe scripts), as one row per layer; the last column is the last
build over the first.

    python3 benchmarks/notes/best_by_build.py LOG [--per-launch]

--per-launch: a row per (layer, launch) instead of the best launch per layer.
"""
import collections
import re
import sys

per_launch = "--per-launch" in sys.argv[2:]
best = collections.defaultdict(lambda: float("inf"))
builds, cur = [], None
for line in open(sys.argv[1]):
    m = re.match(r"== pass \d+ build (\S+)", line)
    if m:
        cur = m.group(1)
        builds += [cur] if cur not in builds else []
        continue
    m = re.match(r"\s+paper_(\S+)\s+(?:planned|variant) (\S+)\s+([\d.]+) us", line)
    if m and cur is not None:
        key = m.group(1) + (" " + m.group(2) if per_launch else ""), cur
        best[key] = min(best[key], float(m.group(3)))
width = 48 if per_launch else 24
print(f"{'layer':{width}s}", *(f"{b:>8s}" for b in builds), "  ratio")
for layer in sorted({k[0] for k in best}):
    t = [best[layer, b] for b in builds]
    print(f"{layer:{width}s}", *(f"{v:8.2f}" for v in t), f"  {t[-1] / t[0]:.3f}" if len(t) > 1 else "")
