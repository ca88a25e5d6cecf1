#!/usr/bin/env bash
# mma_t_run.sh OUTBIN [nvcc flags...]: benchmarks/notes/sc_mma_t_probe.cu built with the package's
# single-channel kernels (its baseline launches), as build_driver.sh builds the driver.
SC_DRIVER_MAIN=benchmarks/notes/sc_mma_t_probe.cu exec bash "$(dirname "$0")/build_driver.sh" "$@"
