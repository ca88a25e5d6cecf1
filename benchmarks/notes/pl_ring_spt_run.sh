# Ran at eac1086 with the flag; since 8772cdd the flag is gone and its behaviour is the default.
# Round 40: with one plane per store instruction, (1) NCHW warpgroups in turn every round
# (-DTZ_PL_RING, build B; A = the tree; --check on B) and (2) the SPT sweep of A on the NCHW K5
# layers (SC_TZ_SPT). Carry .devbuild/plans-h200.txt.
CASES=${CASES:-NCHW_N1_512_M32_K5,NCHW_N32_28_M512_K5,NCHW_N32_56_M256_K5,NCHW_N1_1024_M32_K5,NCHW_N32_112_M128_K5,NCHW_N1_224_M64_K5} \
  CHECK=B bash benchmarks/notes/flags_run.sh -DTZ_PL_RING
for pass in 1 2; do
  echo "== pass $pass build S"
  SC_TZ=2 SC_TZ_SPT=${SPTS:-4,6,8,10,12,16,20,24} SC_CASES=NCHW_N32_28_M512_K5,NCHW_N1_512_M32_K5,NCHW_N32_56_M256_K5 /tmp/drvA --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
done > $OUT/spt.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/spt.log --per-launch | sort -k1,1 -k3n | tee $OUT/spt-per-launch.txt | awk '{print $1, $2, $3}' | sort -k1,1 -k3n | awk '!seen[$1]++ || ++n[$1] <= 3'
