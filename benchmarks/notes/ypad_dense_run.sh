# ypad_dense_run.sh (round 42): with dense segments a warp's NCHW run is 256 bytes of its plane
# from a multiple of 256 bytes of the plane's start; b1 512^2 / 1024^2 K5 planes (OW 508 / 1020)
# start only 64-byte aligned. The wgmma launches with the planes as they are and with plane
# strides padded to 64 floats (SC_YPAD_EXTRA=48: every run 256-byte aligned) or 256 floats
# (240); the 5x1 control (plans-k51-h200.txt, OW 512 / 1024) beside them. Best per layer and
# launch over two passes. Carry .devbuild/plans-h200.txt.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drv > $OUT/bdrv.log 2>&1
C=NCHW_N1_512_M32_K5,NCHW_N1_1024_M32_K5,NHWC_N1_512_M32_K5
for pass in 1 2; do
  echo "== pass $pass build plain"
  SC_TZ=2 SC_CASES=$C /tmp/drv --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
  for e in 48 240; do
    echo "== pass $pass build pad$e"
    SC_YPAD=1 SC_YPAD_EXTRA=$e SC_TZ=2 SC_CASES=$C /tmp/drv --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \[6"
  done
  echo "== pass $pass build k51"
  SC_TZ=2 SC_CASES=$C /tmp/drv --time --plans benchmarks/notes/plans-k51-h200.txt 2>&1 | grep -E "variant \[6"
done > $OUT/ab.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/ab.log
python3 benchmarks/notes/best_by_build.py $OUT/ab.log --per-launch | grep -E ",(11|7|3)," 
