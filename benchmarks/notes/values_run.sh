# values_run.sh: the wgmma kernel on b1 512^2 5x5 and 5x1 layers (notes/plans-k51-h200.txt) with
# random filters (A) and with every tap but kw = 0 zeroed (B, driver SC_W_KW0=1): the same
# instructions and addresses, other values. Two alternating passes, one build.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drvA > $OUT/bA.log 2>&1
C=${CASES:-N1_512_M32_K5,N1_508}
for pass in 1 2; do
  echo "== pass $pass build A"
  SC_TZ=2 SC_CASES=$C /tmp/drvA --time --plans benchmarks/notes/plans-k51-h200.txt 2>&1 | grep -E "variant \[6"
  echo "== pass $pass build B"
  SC_W_KW0=1 SC_TZ=2 SC_CASES=$C /tmp/drvA --time --plans benchmarks/notes/plans-k51-h200.txt 2>&1 | grep -E "variant \[6"
done > $OUT/ab.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/ab.log
