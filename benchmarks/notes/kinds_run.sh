# kinds_run.sh (rounds 41, 42): the wgmma kernel's launches by kind, the plain line, the aligned
# line (plan[6] & 4) and dense segments (plan[6] & 8), as the driver's SC_TZ variants: best per
# layer and kind over two passes; then the checks of final_checks_run.sh's driver half (--check,
# memcheck and racecheck on --small). Carry .devbuild/plans-h200.txt.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drv > $OUT/bdrv.log 2>&1
C=${CASES:-NCHW_N1_512_M32_K5,NCHW_N32_28_M512_K5,NCHW_N32_56_M256_K5,NCHW_N1_1024_M32_K5,NCHW_N32_112_M128_K5,NCHW_N1_224_M64_K5,NCHW_N32_224_M64_K5,NHWC_N1_512_M32_K5,NHWC_N32_28_M512_K5,NHWC_N32_56_M256_K5,NHWC_N32_112_M128_K5,NHWC_N1_1024_M32_K5,NHWC_N32_28_M512_K3}
for pass in 1 2; do
  echo "== pass $pass build A"
  SC_TZ=2 SC_CASES=$C /tmp/drv --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
done > $OUT/ab.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/ab.log --per-launch > $OUT/ab-per-launch.txt
python3 - $OUT/ab-per-launch.txt <<'PY'
import collections, sys
best = collections.defaultdict(dict)
for line in open(sys.argv[1]).readlines()[1:]:
    name, launch, us = line.split()[0], line.split()[1], float(line.split()[2])
    bits = int(launch.split(",")[5])
    kind = "dense" if bits & 8 else "aligned" if bits & 4 else "plain"
    if us < best[name].get(kind, (1e9,))[0]:
        best[name][kind] = (us, launch)
kinds = ("plain", "aligned", "dense")
print(f"{'layer':24s}", *(f"{k:>8s}" for k in kinds), " dense/best other  launches")
for name, b in sorted(best.items()):
    t = [b.get(k, (float("nan"), ""))[0] for k in kinds]
    other = min(v for v in t[:2] if v == v)
    print(f"{name:24s}", *(f"{v:8.2f}" for v in t), f" {t[2] / other:.3f}",
          *(b.get(k, (0, "-"))[1] for k in kinds))
PY
/tmp/drv --check --plans .devbuild/plans-h200.txt > $OUT/check.log 2>&1; tail -1 $OUT/check.log
grep -i "dense" $OUT/check.log | grep -ci fail
for tool in memcheck racecheck; do
  compute-sanitizer --tool $tool /tmp/drv --small > $OUT/sanitizer-$tool.log 2>&1; tail -2 $OUT/sanitizer-$tool.log
done
