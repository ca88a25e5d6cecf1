# k51_run.sh [ENV_B]: the wgmma kernel's launches on the layers of notes/plans-k51-h200.txt
# (5x5 and 5x1, both layouts), two alternating passes of one driver build: A as it is and, where
# ENV_B is given, B with that environment (SC_W_KW0=1: filters zero at every tap but kw = 0).
# A 5x1 layer has OW == the band's line, so its NCHW store runs are in whole 32-byte sectors; a
# 5x5 layer's line is OW + 4, so every other row's runs start mid-sector. CASES= to choose the
# layers; CLOCK=1: also the SM clock beside each launch (driver SC_CLOCK=1; notes round 41).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drvA > $OUT/bA.log 2>&1
C=${CASES:-N1_512_M32_K5,N1_508,N32_28_M512_K5,N32_56_M256_K5}
pat="variant \[6"; [ -n "${CLOCK:-}" ] && pat="clock|$pat"
for pass in 1 2; do
  echo "== pass $pass build A"
  env ${CLOCK:+SC_CLOCK=1} SC_TZ=2 SC_CASES=$C /tmp/drvA --time --plans benchmarks/notes/plans-k51-h200.txt 2>&1 | grep -E "$pat"
  [ -z "${1:-}" ] && continue
  echo "== pass $pass build B"
  env "$1" ${CLOCK:+SC_CLOCK=1} SC_TZ=2 SC_CASES=$C /tmp/drvA --time --plans benchmarks/notes/plans-k51-h200.txt 2>&1 | grep -E "$pat"
done > $OUT/ab.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/ab.log
[ -n "${CLOCK:-}" ] && awk '/\[clock\]/{c=$3} /variant/{print $1, $3, $4, c" MHz"}' $OUT/ab.log
