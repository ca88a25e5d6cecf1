# ncu_dense_run.sh (prepared in round 42, run in round 43): ncu's full set with source counters
# (clocks not locked) for each launch of notes/plans-dense-ncu-h200.txt (or CASES=a,b,..), each
# run by the driver's --one (launched twice, the second profiled): b1 512^2 NCHW's 5x1 control
# flat / dense (identical store addresses; 11.41 against 11.84 us in round 42's driver), the 5x5
# layer dense / aligned and NHWC flat; b32 28^2 K5 dense NCHW / NHWC. Writes the reports, their
# details pages and raw CSVs ($OUT/ncu-pages.tgz), and prints a summary table. Carry nothing (the plans file is tracked).
set -x
P=benchmarks/notes/plans-dense-ncu-h200.txt
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drv -lineinfo > $OUT/bdrv.log 2>&1
mkdir -p /tmp/ncu
cases=${CASES:-$(grep -v '^#' $P | awk '{print $1}' | paste -sd,)}
for c in ${cases//,/ }; do
  ncu --clock-control none -k regex:wgmma --launch-skip 1 --launch-count 1 --set full --import-source yes -f \
    -o /tmp/$c /tmp/drv --plans $P --one $c > /tmp/ncu/$c.log 2>&1
  ncu --import /tmp/$c.ncu-rep --page details > /tmp/ncu/$c.txt 2>&1
  ncu --import /tmp/$c.ncu-rep --page raw --csv > /tmp/ncu/$c.csv 2>&1
done
set +x
tar czf $OUT/ncu-pages.tgz -C /tmp/ncu .
python3 - /tmp/ncu ${cases//,/ } <<'PY'
import csv, sys
out, cases = sys.argv[1], sys.argv[2:]
keys = ["gpu__time_duration.sum", "dram__cycles_active.avg.pct_of_peak_sustained_elapsed",
        "dram__bytes_write.sum", "dram__bytes_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
        "lts__t_requests_srcunit_tex_op_write.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
        "sm__inst_executed.sum.per_cycle_active", "smsp__issue_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "smsp__cycles_active.avg"]
keys += [f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio" for s in (
    "lg_throttle", "drain", "barrier", "gmma", "wait", "long_scoreboard", "short_scoreboard",
    "math_pipe_throttle", "mio_throttle", "membar", "dispatch_stall", "no_instruction",
    "branch_resolving", "selected", "not_selected", "imc_miss", "misc")]
vals = {}
for c in cases:
    try:
        rows = list(csv.reader(open(f"{out}/{c}.csv")))
        i = next(k for k, r in enumerate(rows) if "gpu__time_duration.sum" in r)
        head, units, data = rows[i], rows[i + 1], rows[i + 2]
        vals[c] = {h: (d, u) for h, u, d in zip(head, units, data)}
    except Exception as e:
        print(c, "no csv:", e)
print("metric".ljust(72), *(c.replace("paper_", "")[:20].rjust(20) for c in vals))
for k in keys:
    print(k[:72].ljust(72), *(str(vals[c].get(k, ("-", ""))[0])[:20].rjust(20) for c in vals))
PY
