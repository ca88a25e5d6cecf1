#!/usr/bin/env bash
# mma_t_run.sh OUTBIN: build benchmarks/notes/sc_mma_t_probe.cu with the package's single-channel
# kernels (the baseline launches), one TU per process, as build_driver.sh does.
set -e
out=$1; shift
d=$(mktemp -d)
srcs="benchmarks/notes/sc_mma_t_probe.cu cuda/single_channel.cu cuda/single_channel_pointwise.cu cuda/single_channel_strided.cu cuda/single_channel_mma.cu cuda/single_channel_wgmma.cu cuda/direct_conv.cu"
for s in $srcs; do
  nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -DFASTCONV_HAVE_WGMMA -Icuda "$@" -c -o $d/$(basename $s .cu).o $s &
done
wait
nvcc -gencode arch=compute_90a,code=sm_90a -o $out $d/*.o
