# k51_run.sh: the wgmma kernel's launches on 5x5 and 5x1 layers in both layouts
# (notes/plans-k51-h200.txt). A 5x1 layer has OW == the band's line, so its NCHW store runs are
# in whole 32-byte sectors; a 5x5 layer's line is OW + 4, so every other row's runs start
# mid-sector. The NCHW / NHWC ratio of each tells what the split sectors cost.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drvA > $OUT/bA.log 2>&1
for pass in 1 2; do
  echo "== pass $pass build A"
  SC_TZ=2 /tmp/drvA --time --plans benchmarks/notes/plans-k51-h200.txt 2>&1 | grep -E "variant \[6"
done > $OUT/ab.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/ab.log
