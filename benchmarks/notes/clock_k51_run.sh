# clock_k51_run.sh: the SM clock (driver SC_CLOCK=1, a sampler on another stream) while the
# wgmma kernel runs the 5x5 and 5x1 layers of notes/plans-k51-h200.txt in both layouts
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drvA > $OUT/bA.log 2>&1
C=${CASES:-N1_512_M32_K5,N1_508}
for pass in 1 2; do
  echo "== pass $pass build A"
  SC_CLOCK=1 SC_TZ=2 SC_CASES=$C /tmp/drvA --time --plans benchmarks/notes/plans-k51-h200.txt 2>&1 | grep -E "clock|variant \[6,1,1,32,8,3"
done > $OUT/clock.log 2>&1
cat $OUT/clock.log
