# setup44_run.sh (round 44): the setup probes of notes/sc-wgmma-setup44.patch, whole and setup only
# (TZ_PHASE=4), both patches applied (probes44 first). Carry .devbuild/plans-h200.txt.
set -x
export CASES=NCHW_N1_512_M32_K5,NCHW_N1_1024_M32_K5,NCHW_N1_224_M64_K5,NCHW_N32_28_M512_K5,NHWC_N1_512_M32_K5,NCHW_N32_56_M256_K5
bash benchmarks/notes/flags_run.sh "-DTZ_FCOAL" "-DTZ_PADFLAT" "-DTZ_FCOAL -DTZ_PADFLAT" "-DTZ_PHASE=4" "-DTZ_PHASE=4 -DTZ_FCOAL" "-DTZ_PHASE=4 -DTZ_PADFLAT" "-DTZ_PHASE=4 -DTZ_FCOAL -DTZ_PADFLAT" 2>&1 | tail -9
grep -E ",(8|9|11|16|31|32|21),(3|7|11),256" $OUT/ab-per-launch.txt | sort
