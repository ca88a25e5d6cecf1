# ncu_dense_run.sh (prepared in round 42, not yet run): b1 512^2 NCHW's 5x1 control with flat and
# with dense segments has identical store addresses, yet ran 11.41 against 11.84 us in the driver
# (round 42, C); the 5x5 layer dense against the aligned line beside them. ncu's full set with
# source counters for each launch (the driver's --one: launched twice, the second profiled), to
# find what the dense placement costs. Carry nothing (the plans file is tracked).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drv -lineinfo > $OUT/bdrv.log 2>&1
for c in paper_NCHW_N1_512_M32_K51 paper_NCHW_N1_512_M32_K51D paper_NCHW_N1_512_M32_K5D paper_NCHW_N1_512_M32_K5A; do
  ncu --launch-skip 1 --launch-count 1 --set full --import-source yes -f -o $OUT/$c \
    /tmp/drv --plans benchmarks/notes/plans-dense-ncu-h200.txt --one $c > $OUT/$c.log 2>&1
  ncu --import $OUT/$c.ncu-rep --page details > $OUT/$c.txt 2>&1
  grep -E "Duration|Elapsed Cycles|Executed Instructions|Warp Cycles Per Issued|Stall" $OUT/$c.txt | head -20
done
