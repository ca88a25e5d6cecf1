#!/usr/bin/env bash
# build_driver.sh OUTBIN [extra nvcc flags...]: the single-channel driver, one TU per process
# (SC_DRIVER_MAIN: another main translation unit, e.g. a probe: mma_t_run.sh)
set -e
out=$1; shift
d=$(mktemp -d)
srcs="${SC_DRIVER_MAIN:-tests/cuda/single_channel_driver.cu} cuda/single_channel.cu cuda/single_channel_pointwise.cu cuda/single_channel_strided.cu cuda/single_channel_mma.cu cuda/single_channel_wgmma.cu cuda/direct_conv.cu"
for s in $srcs; do
  nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -DFASTCONV_HAVE_WGMMA -Icuda "$@" -c -o $d/$(basename $s .cu).o $s &
done
wait
nvcc -gencode arch=compute_90a,code=sm_90a -o $out $d/*.o
