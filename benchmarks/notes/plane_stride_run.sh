# Round 38, prepared (not run). Two questions, one driver build, timing only; carry
# .devbuild/plans-h200.txt (python -m jax_fastconv.plan_single_channel --export
# .devbuild/plans-h200.txt --hardware h200). ~60 s of wall time.
# A: are the NCHW stores slow because of the planes' power-of-two stride (b1 512^2: 1 MiB, so
#    the 32 planes' same offsets may share DRAM channels)? The same launches with each plane
#    e floats longer (SC_YPAD_EXTRA; e = 0 is the dense layout, 512^2 is already a multiple of
#    8). If 64 / 1024 are much faster than 0, the store order across planes is the lever.
# B: the segments per CTA of b32 28^2 K5 NHWC again, now that its warpgroups take turns every
#    round (1ccdfb1): SPT 4..8, 3 launches each; and of b1 512^2 K5 (both layouts) at SPT 6..10: its CTAs
#    start 8 KB apart in every plane at SPT 8, so if DRAM channels repeat every 8 KB, all CTAs
#    write the same channels at once (SPT 7 / 9 would not).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/notes/build_driver.sh /tmp/drv > $OUT/b.log 2>&1
A=NCHW_N1_512_M32_K5,NCHW_N1_1024_M32_K5,NCHW_N32_28_M512_K5,NCHW_N32_56_M256_K5
for pass in 1 2; do
  for e in 0 64 1024; do
    echo "== pass $pass build pad$e"
    SC_YPAD=1 SC_YPAD_EXTRA=$e SC_TZ=1 SC_CASES=$A /tmp/drv --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant|planned"
  done
done > $OUT/pad.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/pad.log
python3 benchmarks/notes/best_by_build.py $OUT/pad.log --per-launch > $OUT/pad-per-launch.txt
for pass in 1 2; do
  echo "== pass $pass build spt"
  SC_TZ=2 SC_TZ_SPT=4,5,6,7,8 SC_CASES=NHWC_N32_28_M512_K5 /tmp/drv --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \\[6"
  SC_TZ=2 SC_TZ_SPT=6,7,8,9,10 SC_CASES=NCHW_N1_512_M32_K5,NHWC_N1_512_M32_K5 /tmp/drv --time --plans .devbuild/plans-h200.txt 2>&1 | grep -E "variant \\[6"
done > $OUT/spt.log 2>&1
python3 benchmarks/notes/best_by_build.py $OUT/spt.log --per-launch
