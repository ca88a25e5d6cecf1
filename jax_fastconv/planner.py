"""The trace-time planner: the paper's model (sections 2.2, 3.1, 3.2) as a pure function.

``make_plan(spec, hw)`` returns a frozen, hashable `Plan`: the method, the reason for it,
every derived quantity under the paper's name, and ``kernel_attrs`` (8 int64, the layout of
``ConvParams::plan`` in cuda/conv_params.h). ``plan_cached`` memoises it per (spec, hardware).

Symbols (paper -> here): N_sm = hw.sm_count, N_cores = hw.cores_per_sm, S_shared = shared
memory per block (see "blocks per SM" below), W_x/W_y = the map, K = KH/KW, M = filters.

Departures from the paper (each one deliberate; the paper mixes bytes and elements in places):

1. N_FMA = latency x N_cores x fma_per_core_per_clock x 2. The paper's factor 2 is Table 1's
   "Flops/clock cycle/core"; every core retires 1 FMA (= 2 flops) per clock on Pascal and
   Hopper, so the 2 is kept as the paper's margin on every GPU (66,048 on the GTX 1080Ti).
2. bytes_per_clock = floor(bandwidth / clock) (the paper's "roughly 327"); V_s is rounded up to
   whole warps per SM: ceil(bytes_per_clock x latency / 4) threads -> whole warps -> whole warps
   per SM -> x 4 B x N_sm (reproduces 768 threads, 24 warps, 3,072 B, 86,016 B). Where the
   threads per SM needed exceed the SM's thread limit (Hopper: ~2,100 > 2,048), each thread
   must keep several 4-byte loads in flight: recorded as loads_in_flight_per_thread.
3. Single channel, blocks per SM: the paper's implementation (section 4) launches
   N_block = 2 x N_sm blocks of 512 threads, so the per-SM quantities of section 3.1 are taken
   per block: N_sm -> N_block in eqs. (4)-(8), S_shared -> the per-block share of the SM
   (min(opt-in, shared_per_SM / 2 - reserved)), N_FMA -> ceil(N_FMA / 2) (two resident blocks
   share the SM's FMA units). On the GTX 1080Ti that is 48 KB per block (96 KB per SM).
   The paper says 512 threads leave 128 registers per thread; 65,536 / (2 x 512) = 64, which is
   the budget used here.
4. Single channel, geometry: the map is divided along the OUTPUT rows (OH) and a piece holds
   ceil(OH / P) + KH - 1 input lines of OW + KW - 1 pixels (padding included), so D and Th
   count exactly what a block holds and computes (Th = FMAs: KH*KW*filters*rows*OW). For a
   VALID convolution the D formulas are the paper's with W_y -> OH.
5. Single channel, registers: the next piece is staged through registers while the current
   one is computed (prefetch), so a piece needs ceil(piece words / threads) registers per
   thread on top of 32 + KH*KW; this is the paper's unstated "register requirement" and gives
   a second lower bound on P and Q. When no division fits at the paper's 512 threads, 256
   and then 128 threads are tried (more registers per thread: 128 at 256 threads).
6. Single channel, no feasible P (or Q): the paper sets it to 1, which may overflow shared
   memory; here P = the smallest P that fits (volume mode when Th < N_FMA there), and a
   division that fits for no P is infeasible. Choice between the divisions: divisions with
   Th >= N_FMA (prefetch, section 2.2 step 3) first, then (step 4) those whose data in flight
   over all blocks reaches V_s, then the smaller of D1 and D2 (section 3.1 step 4). P and Q
   are normalised so that no piece is empty (P = ceil(OH / ceil(OH / P))).
7. Multi channel, the real kernel: the plan is chosen from the menu of tiles that
   cuda/multi_channel.cu instantiates (MC_CONFIGS: W'x x M' in 128x64, 64x64, 32x64,
   128x128; S = 32 or 64 B, i.e. S_e = BK = 8 or 16 channels; threads, STAGES and the ptxas
   registers of each), and the plan determines the launch (kernel_attrs = [2, S_e, M', W'x,
   W'y, c_split, threads, 0]). Departures: (a) the paper has one block per SM; here
   b = min(by registers, by shared memory, by threads) blocks are resident and the FMA
   requirement is per SM over all of them: b x M' x S/4 x min(W'x, P) >= N_FMA, with P =
   N x OH x OW because the kernel's tiles run over flattened (n, oh, ow) pixels (a tile spans
   lines and images); (b) one stage = one tap (kh, kw) of an S_e-channel segment: W'x pixels
   x S_e channels + S_e x M' filter values (padded rows: 4 (W'x (S_e + 4) + S_e (M' + 4))
   bytes), so W'y is just KH (the lines a segment's K x K stages read per output line; the
   paper's ceil(S / (4K)) mixes bytes and taps); (c) the paper's double buffer is a STAGES-deep
   ring: STAGES x stage <= the block's share of shared memory (the paper: stage <= S_shared
   / 2); (d) among the tiles that meet the requirement the paper's order (smallest M', then
   largest W'x) holds, but S = 64 B comes before 32 B: on the menu M' does not grow at the
   smaller S, and 64 B halves the stages (barriers): measured 8-10% faster (notes, v4).
   On the H100/H200 presets this gives the paper's best, M' = 64, W'x = 128 (b = 3).
8. Beyond the paper, the grid (the same rule as the kernel's auto_config): a cost model picks
   the tile W'x in {128, 64, 32} (M' = 64) and the ch split c_split in {1, 2, 4, 8, 16}:
     cost = c_tile x ceil(tiles x c_split / N_sm) x (ceil(steps / c_split) + s0 [c_split > 1])
            x W'x / 128 x f(min(ceil(tiles x c_split / N_sm), b)),
   i.e. the blocks one SM runs, each for its share of the reduction plus a split rank's fixed
   cost s0 = MC_SPLIT_STEPS[W'x] of its steps (prologue, park, sum through distributed shared
   memory), in steps of a 128-pixel tile; c_tile (MC_TILE_COST: smaller tiles do fewer FMAs
   per shared-memory read) and f (MC_FEW_BLOCKS_COST: one or two blocks on an SM hide less
   latency than three) are fitted to a sweep of every tile x split 1..8 (and 12, 16 for 32x64) on 43 paper layers
   on an H200 (benchmarks/notes/multi_channel.md, round 9). Splits of 3, 5, 6, 7 are left out:
   their times jumped by up to 40% between neighbouring sizes (cluster placement on the
   GPCs), the powers of two did not. Splits need sm_90 (thread-block clusters: <= 8, 16 for
   32x64, non-portable) and each rank keeps >= 1 step. When the model's choice is the paper's
   tile unsplit, the paper's plan stands. Layers that will run on the tensor cores (>= 9
   taps, see MC_TENSOR_CORES) use a second set of the same constants, *_TC, fitted to a sweep
   of the 3xTF32 instances (34 layers, session 11): their 64x64 and 32x64 tiles cost
   relatively less than the FFMA ones (the 128x64 instance runs 3 blocks per SM at 168
   registers). The split reduction (thread-block cluster,
   distributed shared memory, fixed order) is what the paper rejected on Pascal (section 2.3).
   Tensor-core layers may instead split through global memory (MC_SPLIT_GLOBAL: ranks without
   a cluster, any count in MC_GLOBAL_SPLITS, partial tiles in the workspace summed by a second
   kernel in rank order), costed by the same form with MC_GLOBAL_SPLIT_STEPS_TC and
   MC_GLOBAL_SPLIT_COST_TC and taken only MC_GLOBAL_SPLIT_MARGIN below the best cluster plan.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import sys
from typing import Any

try:  # package import; fall back to a plain module import (tests load files directly)
    from .hardware import Hardware, resolve_hardware, run_calibration, PRESETS
    from .spec import ConvSpec, spec_from_logical
except ImportError:  # pragma: no cover
    from hardware import Hardware, resolve_hardware, run_calibration, PRESETS  # type: ignore
    from spec import ConvSpec, spec_from_logical  # type: ignore

__all__ = ["Plan", "make_plan", "plan_cached", "latency_model", "division_ranges",
           "register_cli", "METHOD_IDS", "FLOPS_PER_FMA", "QUANTITY_NOTES"]

METHOD_IDS = {"direct": 0, "single_channel": 1, "multi_channel": 2}  # cuda/conv_params.h
FLOPS_PER_FMA = 2        # the paper's Table 1 "Flops/clock cycle/core = 2"
ELEM_BYTES = 4           # single precision
WARP = 32
# Multi channel: the kernel's real menu (cuda/multi_channel.cu, kernel_for / Cfg), one row per
# instantiation: (W'x = BM pixels, M' = BN filters, S_e = BK channels per segment, threads,
# STAGES, registers per thread). Registers come from `nvcc -std=c++17 -O3 -gencode
# arch=compute_90a,code=sm_90a -Xptxas -v -c cuda/multi_channel.cu` (the maximum over the
# loader variants of that tile: 16-byte NHWC / 4-byte channel-fast / 4-byte pixel-fast with the
# channel-major A tile of NCHW input, v5: 64x64/S64 128 regs from that one; the 128x64
# instances with that A tile and the 16-byte filter loader are capped at 128 to run 4 blocks
# per SM, measured faster (kernel min_blocks), the rest of the tile stays at 168); keep
# them in sync with the kernel whenever it changes. They are sm_90 numbers, applied to every
# preset (the planner models the kernel that runs, not a hypothetical Pascal build).
MC_CONFIGS = (
    # W'x  M'  S_e threads STAGES regs
    (128, 64, 8, 128, 3, 168),
    (128, 64, 16, 128, 3, 168),
    (64, 64, 8, 128, 4, 110),
    (64, 64, 16, 128, 4, 128),
    (32, 64, 8, 128, 4, 92),
    (32, 64, 16, 128, 4, 118),
    (128, 128, 8, 256, 3, 128),
)
MC_MAX_EXTENT = 16384          # kernel: (oh, ow) packed in 16 bits each
MC_MIN_CHANNELS = 8            # one 32-byte segment of channels; fewer -> not this kernel
MC_MAX_BLOCKS_PER_SM = 32       # hardware limit of resident blocks per SM (sm_50..sm_90)
MC_GRID_TILES = (128, 64, 32)   # W'x of the M' = 64 tiles the grid model compares, largest first
# The grid model's constants (docstring item 8); cuda/grid_model.h holds the same for the
# kernel's fallback (tests/test_grid_model.py checks that both choose alike).
MC_SPLITS = (1, 2, 4, 8, 16)    # c_split values the grid model compares (docstring item 8)
MC_TILE_COST = {128: 1.0, 64: 1.24, 32: 1.48}   # per pixel-step, relative to 128x64 (fitted)
MC_SPLIT_STEPS = {128: 4.7, 64: 2.9, 32: 2.2}   # a split rank's fixed cost in its steps (fitted)
MC_FEW_BLOCKS_COST = {1: 1.38, 2: 1.12}         # 1 or 2 blocks on an SM vs >= 3 (fitted)
# The same for the 3xTF32 tensor-core instances (benchmarks/results/sweeps/grid-sweep-tc-*.txt):
# picks within 2.4% of the best measured variant on average (worst 13.5%) where the FFMA
# constants were 3.9% (worst 44%: batch-32 7x7x512 K3, 128x64 139 us vs 64x64 97 us).
MC_TILE_COST_TC = {128: 1.0, 64: 1.07, 32: 1.38}
MC_SPLIT_STEPS_TC = {128: 4.1, 64: 3.0, 32: 3.0}
MC_FEW_BLOCKS_COST_TC = {1: 1.50, 2: 1.07}
MC_MAX_SPLIT = 8                # portable cluster size
# Split through global memory (plan[7] bit 8, cuda/multi_channel.cu kSplitGlobal): the ranks run
# without a cluster (any count, no co-scheduling on one GPC), park their partial tiles in the
# call's workspace, and a second kernel sums them in rank order. Offered to the tensor-core
# layers only (where it was measured): cost = the grid model's with a rank's fixed cost
# MC_GLOBAL_SPLIT_STEPS_TC (partial tile out, the sum pass) and x MC_GLOBAL_SPLIT_COST_TC (no
# cluster placement), fitted to a sweep of 14 layers x 30 (tile, split) variants on an H200
# (benchmarks/fit_split_global.py on benchmarks/results/sweeps/split-global-sweep-nvidia-h200-
# 20261121.txt: picks within 0.06% of the best measured variant on average, worst 0.8%).
MC_SPLIT_GLOBAL = 8
MC_GLOBAL_SPLITS = (4, 6, 8, 10, 12, 16, 20, 24, 32, 48)
# ... and, per tile, the rank count that fills exactly one wave (floor(b x N_sm / tiles)): a
# listed count one over a wave boundary runs a second, partial wave (b32 7x7x512 K5: 16 ranks =
# 1.21 waves, 13 = one). Bench on an H200 (benchmarks/results/sweeps/onewave-*-20261122): the 6
# plans it changes on paper-multi/ResNet-50/VGG-16 ran 2.6-7.9% faster (device time).
MC_GLOBAL_ONE_WAVE = True
MC_GLOBAL_SPLIT_STEPS_TC = {128: 8.0, 64: 10.0, 32: 8.0}
MC_GLOBAL_SPLIT_COST_TC = 0.95
# ... taken only where its cost is below this fraction of the cluster plan's: the sweep does not
# order plans closer than that (b32 14x14x256 K5 NHWC, 128x64 x 6 ranks, modelled 0.965 of the
# cluster plan, measured 1.20x; b32 14x14x512 K3 at 0.999 measured 0.93x).
MC_GLOBAL_SPLIT_MARGIN = 0.95
MC_MAX_SPLIT_SM90_SMALL = 16    # non-portable cluster of 16 on sm_90, 32x64 tile only
# Filter staging (plan[7] bit 2, cuda/filter_staging.cuh): copy dense OIHW filters to HWIO in
# the call's workspace so the kernel's filter loads are 16-byte and filter-contiguous. Per stage
# the kernel reads S channels of M' filters at one tap, KH*KW floats apart in OIHW: a 4-byte
# gather, one 32-byte sector per word, repeated by every pixel tile. Measured on an H200 (batch
# 1, NCHW, kernel us native -> staged): 28x28x128 K5 53.6 -> 34.9, 14x14x256 K5 51.8 -> 38.8,
# 28x28x256 K3 58.5 -> 48.8, 14x14x512 K3 61.3 -> 56.1; losses (the copy then, 4-byte, ~2.5 us at least):
# 7x7x512 K3 (one pixel tile) 19.6 -> 29.0, 14x14x256 K3 16.9 -> 19.1, 64-channel maps K3
# +0.5 to +2.1. The rule: stage when at least 2 pixel tiles re-read the filters and
# KH*KW x pixel tiles x filter bytes >= MC_STAGE_FILTER_MIN (an estimate of the gather's extra
# traffic; 7 of the 8 measured gains and all but 2 of the 11 small losses fall on the right side).
# K = 1 (OIHW rows are then channel-contiguous, the gather 4-byte but not strided by taps):
# pixel tiles x filter bytes >= MC_STAGE_FILTER_MIN_K1. Measured on an H200 (driver, NCHW/OIHW,
# kernel us in place -> staged): batch 32 224x224x64 456.8 -> 413.1, 112x112x64 119.5 -> 110.8,
# 56x56x128 104.2 -> 99.1, 28x28x256 94.9 -> 90.8, 14x14x512 89.1 -> 86.0, 7x7x512 38.4 ->
# 36.0, batch 1 512x512x64 81.3 -> 77.0 (scores 33.5e6 to 205e6); losses at 12.8e6 and below
# (b32 56x56x64 33.4 -> 34.4, 28x28x128 28.6 -> 30.4, b1 224x224x64 18.1 -> 21.3); b32
# 14x14x256 (25.7e6) even.
# Staging also wherever it lets the tensor cores run (the 3xTF32 path reads HWIO filters only):
# H200, driver, NCHW/OIHW, batch 1, as planned (FFMA, in place) -> staged + tensor cores, with the
# 16-byte transpose (26 MB of filters in 15 us, 2.1 us for small ones; session 11): 28x28x256
# K3 37.5 -> 30.3 us, 56x56x128 K3 37.8 -> 30.9, 112x112x64 K3 38.2 -> 33.1, 14x14x256 K3 17.2
# -> 15.1, 28x28x128 K3 15.9 -> 13.7, 56x56x64 K3 15.4 -> 14.1, 7x7x512 K5 69.2 -> 43.5,
# 7x7x512 K3 19.7 -> 19.9; batch 32 14x14x256 K1 30.0 -> 27.8.
MC_STAGE_FILTERS = 2
MC_STAGE_FILTER_MIN = 300e6
MC_STAGE_FILTER_MIN_K1 = 30e6
# Tensor cores (plan[7] bit 4, cuda/mma_3xtf32.cuh): the M' = 64 tiles' FFMAs done as 3xTF32
# mma.sync (float32 accuracy: 2.2e-7 worst relative L2 error on paper-multi vs FFMA's 8.1e-7),
# with the 16-byte filter loader (HWIO filters, or OIHW ones staged to HWIO) and either input
# loader that keeps a whole tile row in 16-byte or pixel-contiguous copies: channel-contiguous
# input (NHWC, C % 4 == 0) or pixel-contiguous input (NCHW, channel-major A tile).  Measured on
# an H200 (driver, the grid model's FFMA plans, time vs FFMA, session 9): NCHW 128x64 / 64x64 /
# 32x64 K3/K5 0.83-0.97, NHWC 32x64 K3/K5 0.80-0.96; NHWC 128x64 / 64x64 0.87-0.96 of session
# 8's tensor-core time, which was 0.86-0.97 of FFMA (the split in 4 instructions made the
# difference; before it NCHW and 32x64 were not faster); not taken: K = 1
# (1.15-1.37 with the older split: the output loses the direct register stores).  Registers:
# 128x64 168 (3 blocks per SM; the NCHW FFMA instance runs 4), 64x64 <= 128, 32x64 <= 89; tile
# and split stay the grid model's FFMA choice (the measurements are with those plans).  sm_90 only.
MC_TENSOR_CORES = 4
MC_TENSOR_CORE_TILES = (128, 64, 32)   # W'x of the M' = 64 tiles
MC_TENSOR_CORE_MIN_TAPS = 9            # KH * KW (3x3 and 5x5 measured)
MC_TENSOR_CORE_MIN_CC = (9, 0)
# K = 1 (fewer taps) only on a full, unsplit grid: batch-32 1x1 layers, driver, TC / FFMA time.
# Where the output goes straight from the fragments to global memory (the kernel's direct
# stores: filter-contiguous output, or pixel-contiguous output of pixel-contiguous input with
# OH*OW % 4 == 0; session 12): C = 64 0.90-1.00, C = 128 0.86-0.88, C >= 256 0.82-0.97 (both
# layouts, NCHW staged).  Through the shared-memory park (session 9): C >= 256 0.86-0.96, C = 128
# 1.00-1.07, C = 64 1.20-1.29.  Grids of fewer tiles than SMs or with a split (batch 1) not
# measured.
MC_TENSOR_CORE_MIN_C_1X1 = 256          # output through the park
MC_TENSOR_CORE_MIN_C_1X1_DIRECT = 64    # output stored straight from the fragments
# ... and, where the OIHW filters must be staged for them, pixel tiles x filter bytes >= this
# (the copy is a launch of ~2 us; driver, NCHW/OIHW 1x1, FFMA in place -> staged + TC, us:
# b32 56x56x64 (12.8e6) 33.8 -> 31.2, b32 28x28x128 (12.8e6) 28.3 -> 25.7; b1 224x224x64
# (6.4e6) 18.0 -> 18.2, b1 112x112x64 (6.4e6) 7.9 -> 10.2, b1 56x56x128 (6.4e6) 9.5 -> 10.4)
MC_TENSOR_CORE_STAGE_MIN_1X1 = 10e6
# The OIHW order (plan[7] bit 32, cuda/multi_channel.cu AM = 3): the tensor cores read dense OIHW
# filters in place, the reduction in the filters' own order r = c*KH*KW + tap (each filter's stage
# one 16-byte run of S consecutive r), instead of staging the HWIO copy.  Its input gather (one
# 4-byte copy per (r, pixel), offsets per r) costs ~5% of a large layer, so it replaces the copy
# where the copy's estimate, max(MC_STAGE_COPY_MIN_US, 2 x filter bytes / MC_STAGE_COPY_BYTES_PER_S),
# is at least MC_OIHW_ORDER_MIN_SHARE of the layer's, FLOP / MC_OIHW_ORDER_FLOP_RATE.  H200,
# driver, NCHW/OIHW as planned, staged -> OIHW order, us: b1 7x7x512 K5 35.3 -> 24.5, K3 19.7 ->
# 15.8, 14x14x512 K5 61.1 -> 52.7, 14x14x256 K3 14.9 -> 12.6, 112x112x64 K3 32.5 -> 30.8, b32
# 7x7x512 K5 121.9 -> 119.3, K3 106.2 -> 105.5 (share 5.8%), 28x28x128 K1 25.7 -> 23.8 (24 of 44
# tensor-core layers 0.69-0.99); b32 K3/K5 layers >= 5 GFLOP 1.03-1.07 (14x14x512 K3 499.2 ->
# 531.5), b1 512x512x64 K3 1.05.  The rule keeps staging on all of those losses.
MC_OIHW_ORDER = 32
MC_OIHW_ORDER_MAX_TAPS = 64             # the kernel's per-tap table
MC_OIHW_ORDER_MIN_SHARE = 0.05
MC_OIHW_ORDER_FLOP_RATE = 40e12         # FLOP/s, a tensor-core layer's (estimate)
MC_STAGE_COPY_MIN_US = 2.1              # the 16-byte transpose: a launch, small filters
MC_STAGE_COPY_BYTES_PER_S = 3.4e12      # ... and 26 MB in 15.2 us
# The streamed 1x1 kernel (plan[7] bit 16, cuda/multi_channel_pointwise.cu): C = 32 or 64, the
# block's 64 filters held for the launch, a persistent grid of 128-pixel tiles, 3xTF32.  Driver,
# H200, general kernel -> streamed, us: b32 112x112x64 NHWC 97.1 -> 72.9, NCHW 99.9 -> 81.2;
# b32 224x224x64 351 -> 242 / 360 -> 279; b32 112x112 C 64 -> M 256 390 -> 233 / 459 -> 273;
# b32 112x112x32 -> 64 70.4 -> 53.7; b32 56x56x64 31.3 -> 25.0 / 31.0 -> 29.0; b1 512x512x64
# 67.8 -> 52.3 / 71.0 -> 56.9; slower with few tiles: b1 224x224x64 16.2 -> 18.9 / 17.9 -> 18.5.
MC_POINTWISE = 16
MC_POINTWISE_CHANNELS = (32, 64)
MC_POINTWISE_MIN_PIXELS = 65536         # N * OH * OW (b32 56x56 gains, b1 224x224 loses)
REG_BASE = 32            # addressing, loop counters, accumulators of the inner loop

QUANTITY_NOTES = {
    "latency_cycles": "global-memory latency (Table 1)",
    "N_cores": "FP32 cores per SM",
    "N_sm": "SMs",
    "N_FMA": "FMAs per SM to hide the latency = latency x N_cores x 2 (sec 2.2)",
    "bytes_per_clock": "bandwidth / clock, floor (Table 1 transmission rate)",
    "data_requirement": "bytes_per_clock x latency (Table 1)",
    "threads_required": "data_requirement / 4 B, whole warps (sec 2.2)",
    "threads_per_SM": "threads per SM, whole warps (Table 1)",
    "warps_per_SM": "warps per SM (Table 1)",
    "bytes_per_SM": "threads_per_SM x 4 B (Table 1)",
    "V_s": "bytes in flight to hide the latency = bytes_per_SM x N_sm (sec 2.2)",
    "loads_in_flight_per_thread": "4-byte loads each thread keeps in flight for V_s",
    "blocks_per_SM": "resident blocks per SM",
    "N_block": "blocks = blocks_per_SM x N_sm",
    "N_FMA_block": "FMAs per block to hide the latency = N_FMA / blocks_per_SM",
    "S_shared": "shared memory per block, bytes",
    "threads_per_block": "threads per block",
    "reg_budget": "registers per thread the occupancy allows",
    "P_lower": "smallest P with D1 <= S_shared and registers (sec 3.1 step 2)",
    "P_upper": "largest P with Th1 >= N_FMA (sec 3.1 step 1)",
    "Q_lower": "smallest Q with D2 <= S_shared and registers (sec 3.1 step 2)",
    "Q_upper": "largest Q with Th2 >= N_FMA (sec 3.1 step 1)",
    "P": "pieces of the map rows per block (division 1)",
    "Q": "pieces of the filters per block (division 2)",
    "D1": "bytes per block, division 1, eq. (5)",
    "D2": "bytes per block, division 2, eq. (7)",
    "Th1": "FMAs per block per piece, division 1, eq. (6)",
    "Th2": "FMAs per block per piece, division 2, eq. (8)",
    "division": "1: filters across blocks, 2: map rows across blocks (sec 3.1), 3: pointwise 1x1, "
                "4: strided (C = 1, stride > 1), 5: tensor cores (3xTF32)",
    "mode": "prefetch (Th >= N_FMA) or volume (>= V_s in flight) (sec 2.2), pointwise, strided "
            "or tensor cores",
    "filters_per_block": "filters a block applies",
    "rows_per_block": "output rows a block produces",
    "rows_per_piece": "output rows per piece",
    "filters_per_piece": "filters per piece",
    "blocks_used": "blocks launched (x N images)",
    "bytes_in_flight": "data of one round over all blocks (compare V_s)",
    "regs_per_thread": "estimated registers per thread",
    "shared_bytes_per_block": "shared memory a block holds",
    "work_items": "thread work items of the launch (strided kernel: filters_per_thread filters "
                  "x 4 columns each; blocks take contiguous runs of 256-item turns, in one wave or "
                  "in waves of 4-turn blocks, as the launcher decides)",
    "filter_slabs": "slabs of filters_per_block filters, one per grid row (strided kernel)",
    "filters_per_thread": "filters of a thread's register tile (strided kernel: 4 where the "
                          "output's filters are its fastest axis, else 8)",
    "FMA_per_item": "FMAs of one work item: filters_per_thread x 4 columns x KH x KW "
                    "(strided kernel)",
    "S": "segment bytes along ch (sec 3.2)",
    "S_elems": "segment elements = S / 4",
    "W'x": "tile pixels along x, a multiple of 128 B (sec 3.2)",
    "W'y": "map lines one segment needs (sec 3.2): KH, one filter tap per stage",
    "M'": "filters per block: the kernel's smallest M' meeting Th_SM >= N_FMA (sec 3.2)",
    "M'_lower": "N_FMA x 4 / (b x S x min(W'x, P)), rounded up (b resident blocks per SM)",
    "M'_upper": "largest M' the stage and the registers allow (<= M)",
    "Th_stage": "FMAs per block per stage = M' x S/4 x min(W'x, P), P = N x OH x OW",
    "Th_SM": "FMAs per SM per stage over its b resident blocks (compare N_FMA)",
    "STAGES": "depth of the cp.async ring (2 = the paper's double buffer)",
    "stage_bytes": "one stage as the kernel lays it out (padded rows); STAGES x stage <= S_shared",
    "output_tiles": "ceil(N x OH x OW / W'x) x ceil(M / M') (tiles of flattened pixels)",
    "reduction_steps": "segments x taps: ceil(C / S_elems) x KH x KW",
    "steps_per_rank": "reduction steps each split rank sums",
    "c_split": "channel split (beyond the paper; 1 = none)",
    "channels_per_split": "channels per split",
    "grid_cost": "the grid model's cost of this tile x split, in 128x64 tile-steps per SM",
    "filter_staging": "plan[7]: 2 = the OIHW filters are copied to HWIO first, 0 = read in place",
    "split_global": "plan[7]: 8 = the c_split ranks run without a cluster, partials summed in a "
                    "second pass (workspace), 0 = cluster or no split",
    "pointwise": "plan[7]: 16 = the streamed 1x1 kernel (C = 32/64, filters held per block), "
                 "0 = the general kernel",
    "oihw_order": "plan[7]: 32 = tensor cores on the OIHW filters without a copy (the reduction "
                  "in their order c, kh, kw); 0 = not",
}


@dataclasses.dataclass(frozen=True)
class Plan:
    """What the kernels run. Frozen and hashable: a static primitive parameter."""

    method: str                                  # single_channel | multi_channel | direct
    reason: str
    hardware: str
    quantities: tuple[tuple[str, Any], ...] = ()
    kernel_attrs: tuple[int, ...] = (0,) * 8

    def __post_init__(self):
        if self.method not in METHOD_IDS:
            raise ValueError(f"unknown method {self.method!r}")
        if len(self.kernel_attrs) != 8 or self.kernel_attrs[0] != METHOD_IDS[self.method]:
            raise ValueError(f"kernel_attrs must be 8 ints starting with the method id, "
                             f"got {self.kernel_attrs}")

    def get(self, name: str, default=None):
        for k, v in self.quantities:
            if k == name:
                return v
        return default

    def __getitem__(self, name: str):
        for k, v in self.quantities:
            if k == name:
                return v
        raise KeyError(name)

    def describe(self) -> str:
        lines = [f"method: {self.method}", f"reason: {self.reason}",
                 f"hardware: {self.hardware}", f"kernel_attrs: {list(self.kernel_attrs)}"]
        if self.quantities:
            width = max(len(f"{k} = {_fmt(v)}") for k, v in self.quantities)
            lines.append("quantities (paper names):")
            for k, v in self.quantities:
                text = f"{k} = {_fmt(v)}"
                note = QUANTITY_NOTES.get(k)
                lines.append(f"  {text:<{width}}   # {note}" if note else f"  {text}")
        return "\n".join(lines)


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ------------------------------------------------------------------ section 2.2
def latency_model(hw: Hardware) -> dict:
    """N_FMA, bytes per clock and V_s, exactly as section 2.2 / Table 1."""
    L = hw.latency_cycles
    n_fma = math.ceil(L * hw.cores_per_sm * hw.fma_per_core_per_clock * FLOPS_PER_FMA - 1e-9)
    bpc = int(hw.bandwidth_bytes_per_s // hw.clock_hz)
    data_req = math.ceil(bpc * L - 1e-9)                        # 327 x 258 = 84,366
    warps_total = _cdiv(_cdiv(data_req, ELEM_BYTES), WARP)       # 21,092 threads -> 660 warps
    warps_per_sm = _cdiv(warps_total, hw.sm_count)               # 24
    threads_per_sm = warps_per_sm * WARP                         # 768
    bytes_per_sm = threads_per_sm * ELEM_BYTES                   # 3,072
    return {
        "latency_cycles": L if L != int(L) else int(L),
        "N_cores": hw.cores_per_sm,
        "N_sm": hw.sm_count,
        "N_FMA": n_fma,
        "bytes_per_clock": bpc,
        "data_requirement": data_req,
        "threads_required": warps_total * WARP,
        "threads_per_SM": threads_per_sm,
        "warps_per_SM": warps_per_sm,
        "bytes_per_SM": bytes_per_sm,
        "V_s": bytes_per_sm * hw.sm_count,
        "loads_in_flight_per_thread": _cdiv(threads_per_sm, hw.max_threads_per_sm),
    }


def _reserved_shared(hw: Hardware) -> int:
    # sm_80 and later reserve 1 KB of shared memory per resident block for the system.
    return 1024 if hw.compute_capability >= (8, 0) else 0


def _reg_budget(hw: Hardware, blocks_per_sm: int, threads: int) -> int:
    per = hw.regs_per_sm // (blocks_per_sm * threads)
    return min(hw.max_regs_per_thread, per // 8 * 8)


# ------------------------------------------------------------------ section 3.1: plan_single_channel.py
def _mc_shared_bytes(Wx: int, Mp: int, Se: int, stages: int) -> tuple[int, int]:
    """(one stage, whole block) in bytes, as cuda/multi_channel.cu's Cfg lays them out: the
    A tile pixel-major W'x x (S_e + 4), the B tile S_e x (M' + 4), STAGES deep; the output
    tile W'x x (M' + 1) reuses the ring; 16 B per pixel of output/input offsets."""
    stage = ELEM_BYTES * (Wx * (Se + 4) + Se * (Mp + 4))
    region = max(stages * stage // ELEM_BYTES, Wx * (Mp + 1))
    region = (region + 3) // 4 * 4
    return stage, ELEM_BYTES * region + 16 * Wx


def _mc_blocks_per_sm(hw: Hardware, threads: int, regs: int, shared: int) -> dict:
    alloc = _cdiv(regs, 8) * 8                       # registers are allocated 8 per thread
    by_regs = hw.regs_per_sm // (alloc * threads)
    by_shared = (hw.shared_per_sm // (shared + _reserved_shared(hw))
                 if shared <= hw.shared_per_block_optin else 0)
    by_threads = hw.max_threads_per_sm // threads
    return dict(by_regs=by_regs, by_shared=by_shared, by_threads=by_threads,
                b=min(by_regs, by_shared, by_threads, MC_MAX_BLOCKS_PER_SM))


def _mc_max_split(hw: Hardware, Wx: int) -> int:
    if hw.compute_capability < (9, 0):
        return 1                                     # thread-block clusters need sm_90
    return MC_MAX_SPLIT_SM90_SMALL if Wx == 32 else MC_MAX_SPLIT


def _mc_grid_cost(tiles: int, steps: int, Wx: int, c_split: int, b: int, n_sm: int,
                  tile_cost=None, split_steps=None, few_cost=None, tc: bool = False) -> float:
    """The grid model (docstring item 8): time in steps of a 128x64 tile at >= 3 blocks per SM.
    The constants default to the fitted MC_* ones, MC_*_TC for the tensor-core instances (tc);
    benchmarks/fit_grid_model.py passes its own."""
    fitted = ((MC_TILE_COST_TC, MC_SPLIT_STEPS_TC, MC_FEW_BLOCKS_COST_TC) if tc
              else (MC_TILE_COST, MC_SPLIT_STEPS, MC_FEW_BLOCKS_COST))
    tile_cost, split_steps, few_cost = (given if given is not None else default for given, default
                                        in zip((tile_cost, split_steps, few_cost), fitted))
    per_sm = _cdiv(tiles * c_split, n_sm)               # blocks one SM runs
    rank = _cdiv(steps, c_split) + (split_steps[Wx] if c_split > 1 else 0.0)
    return tile_cost[Wx] * per_sm * rank * Wx / 128 * few_cost.get(min(per_sm, b), 1.0)


def mc_global_split_counts(tiles: int, b: int, n_sm: int) -> tuple[int, ...]:
    """The rank counts offered to the split through global memory: MC_GLOBAL_SPLITS and (with
    MC_GLOBAL_ONE_WAVE) the count whose tiles x ranks blocks fill one wave of b per SM, where it
    lies inside the listed range (the model was fitted up to 48 ranks; the kernel takes <= 64)."""
    one_wave = (b * n_sm) // tiles if MC_GLOBAL_ONE_WAVE else 0
    extra = {one_wave} if 1 < one_wave <= max(MC_GLOBAL_SPLITS) else set()
    return tuple(sorted(set(MC_GLOBAL_SPLITS) | extra))


def _mc_global_split_cost(tiles: int, steps: int, Wx: int, c_split: int, b: int,
                          n_sm: int) -> float:
    """The grid model for a tensor-core tile split through global memory (MC_SPLIT_GLOBAL)."""
    return MC_GLOBAL_SPLIT_COST_TC * _mc_grid_cost(
        tiles, steps, Wx, c_split, b, n_sm, split_steps=MC_GLOBAL_SPLIT_STEPS_TC, tc=True)


def _dense_oihw_filters(spec: ConvSpec) -> bool:
    d = spec.dims
    kk = d["KH"] * d["KW"]
    return tuple(spec.rhs_strides) == (d["C"] * kk, kk, d["KW"], 1) and d["M"] % 4 == 0


def _mc_staging_score(spec: ConvSpec, Wx: int) -> tuple[int, int, int]:
    """(pixel tiles, filter bytes, KH*KW x tiles x filter bytes): what staging saves, roughly."""
    d = spec.dims
    kk = d["KH"] * d["KW"]
    tiles = _cdiv(d["N"] * d["OH"] * d["OW"], Wx)
    w_bytes = ELEM_BYTES * d["M"] * d["C"] * kk
    return tiles, w_bytes, kk * tiles * w_bytes


def _mc_filter_staging(spec: ConvSpec, Wx: int) -> tuple[int, str]:
    """plan[7] for a multi-channel plan with W'x-pixel tiles: MC_STAGE_FILTERS or 0, and why."""
    kk = spec.dims["KH"] * spec.dims["KW"]
    if not _dense_oihw_filters(spec):
        return 0, ""
    tiles, w_bytes, score = _mc_staging_score(spec, Wx)
    if tiles < 2 or score < (MC_STAGE_FILTER_MIN_K1 if kk == 1 else MC_STAGE_FILTER_MIN):
        return 0, ""
    return MC_STAGE_FILTERS, (f"the OIHW filters are copied to HWIO first ({tiles} pixel tiles "
                              f"x {kk} taps re-read {w_bytes} B of filters: the 4-byte OIHW gather "
                              f"costs more than the copy)")


def _mc_tensor_cores(hw: Hardware, spec: ConvSpec, Wx: int, Mp: int, staged: bool,
                     tiles: int, c_split: int) -> tuple[int, str]:
    """plan[7]'s tensor-core bit for a W'x x M' tile: MC_TENSOR_CORES or 0, and why."""
    d = spec.dims
    taps = d["KH"] * d["KW"]
    min_c = (MC_TENSOR_CORE_MIN_C_1X1_DIRECT if _mc_direct_store(spec, Wx)
             else MC_TENSOR_CORE_MIN_C_1X1)
    long_1x1 = taps == 1 and d["C"] >= min_c and c_split == 1 and tiles >= hw.sm_count
    if (hw.compute_capability < MC_TENSOR_CORE_MIN_CC or Mp != 64 or Wx not in MC_TENSOR_CORE_TILES
            or (taps < MC_TENSOR_CORE_MIN_TAPS and not long_1x1)):
        return 0, ""
    # the kernel's input loaders (cuda/multi_channel.cu loader_modes): 16-byte copies of
    # channel-contiguous input, or the channel-major tile of pixel-contiguous input; the
    # 16-byte filter loader
    xn, xc, xh, xw = spec.lhs_strides
    wo, wi, wh, ww = spec.rhs_strides
    x_vec = xc == 1 and all(v % 4 == 0 for v in (d["C"], xn, xh, xw))
    x_pixel_major = abs(xc) > abs(xw)
    hwio_vec = wo == 1 and all(v % 4 == 0 for v in (d["M"], wi, wh, ww))
    if not ((x_vec or x_pixel_major) and (staged or hwio_vec)):
        return 0, ""
    if taps == 1 and not hwio_vec and _mc_staging_score(spec, Wx)[2] < MC_TENSOR_CORE_STAGE_MIN_1X1:
        return 0, ""  # a small 1x1 layer: the staging copy costs more than the tensor cores save
    why = (f"1x1 kernels with >= {min_c} channels on a full unsplit grid; C = {d['C']} here"
           if taps == 1 else f"3x3 and larger kernels; {taps} taps here")
    return MC_TENSOR_CORES, ("3xTF32 on the tensor cores (mma.sync, float32 accuracy) instead "
                             f"of FFMA (measured faster for {why})")


def _mc_oihw_order(spec: ConvSpec, stage: int, tc: int) -> str:
    """Why the tensor cores read the OIHW filters in place (plan[7] & MC_OIHW_ORDER) instead of
    the staged HWIO copy, or "" (the kernel's conditions: cuda/multi_channel.cu oihw_order)."""
    d = spec.dims
    kk = d["KH"] * d["KW"]
    _, xc, _, xw = spec.lhs_strides
    if not (tc and stage and _dense_oihw_filters(spec) and abs(xc) > abs(xw)
            and (d["C"] * kk) % 4 == 0 and kk <= MC_OIHW_ORDER_MAX_TAPS):
        return ""
    w_bytes = ELEM_BYTES * d["M"] * d["C"] * kk
    copy_us = max(MC_STAGE_COPY_MIN_US, 2 * w_bytes / MC_STAGE_COPY_BYTES_PER_S * 1e6)
    layer_us = spec.flops / MC_OIHW_ORDER_FLOP_RATE * 1e6
    if copy_us < MC_OIHW_ORDER_MIN_SHARE * layer_us:
        return ""
    return (f"the tensor cores read the OIHW filters in place, the reduction in their own order "
            f"(c, kh, kw): a copy to HWIO (~{copy_us:.1f} us) would be {copy_us / layer_us:.0%} "
            f"of the layer (~{layer_us:.0f} us)")


def _mc_direct_store(spec: ConvSpec, Wx: int) -> bool:
    """Whether an unsplit tensor-core launch of the W'x x 64 tile stores its output straight
    from registers (cuda/multi_channel.cu, launch_native's y_vec; XLA's buffers are 16-byte
    aligned; the 32x64 instance for pixel-contiguous input keeps the park)."""
    d = spec.dims
    yn, yc, yh, yw = spec.out_strides
    xc, xw = spec.lhs_strides[1], spec.lhs_strides[3]
    x_pixel_major = abs(xc) > abs(xw)             # the channel-major A tile (NCHW input)
    if Wx == 32 and x_pixel_major:
        return False
    filter_contiguous = spec.out_filters_in_fours
    pixel_runs = (x_pixel_major and yw == 1 and yh == d["OW"]
                  and (d["OH"] * d["OW"]) % 4 == 0 and yc % 4 == 0 and yn % 4 == 0)
    return filter_contiguous or pixel_runs


def _mc_pointwise(hw: Hardware, spec: ConvSpec) -> str:
    """Why the streamed 1x1 kernel (plan[7] & 16) runs this layer, or "" where it does not
    (its conditions: cuda/multi_channel_pointwise.cu, mc_pointwise_supported)."""
    d = spec.dims
    N, C, H, W, M = d["N"], d["C"], d["H"], d["W"], d["M"]
    if (hw.compute_capability < MC_TENSOR_CORE_MIN_CC or (d["KH"], d["KW"]) != (1, 1)
            or tuple(spec.window_strides) != (1, 1)
            or any(v != (0, 0) for v in spec.padding) or C not in MC_POINTWISE_CHANNELS
            or M % 8 or N * H * W < MC_POINTWISE_MIN_PIXELS):
        return ""
    xn, xc, xh, xw = spec.lhs_strides
    yn, yc, yh, yw = spec.out_strides
    channels_last = ((xn, xc, xh, xw) == (H * W * C, 1, W * C, C)
                     and (yn, yc, yh, yw) == (H * W * M, 1, W * M, M))
    channels_first = ((xn, xc, xh, xw) == (C * H * W, H * W, W, 1)
                      and (yn, yc, yh, yw) == (M * H * W, H * W, W, 1) and (H * W) % 4 == 0)
    if not (channels_last or channels_first):
        return ""
    return (f"1x1 with C = {C} and {N * H * W} output pixels: the streamed 1x1 kernel (the "
            f"block's 64 filters held for the launch, a persistent grid walking 128-pixel "
            f"tiles through a double-buffered ring, 3xTF32 tensor-core MMAs; measured "
            f"1.2-1.7x the general kernel on such layers)")


def workspace_elems(spec: ConvSpec, plan: "Plan") -> int:
    """float32 elements of the CUDA call's workspace result (cuda/multi_channel.cu
    multi_channel_workspace_elems): the HWIO copy of the filters when plan[7] asks for it
    (filter_staging.cuh staged_filter_elems), then, for a split through global memory, one
    partial output per rank; 0 when neither."""
    if plan.method != "multi_channel":
        return 0
    d = spec.dims
    a = plan.kernel_attrs
    staged = (-(-(d["M"] * d["C"] * d["KH"] * d["KW"]) // 4) * 4
              if a[7] & MC_STAGE_FILTERS and _dense_oihw_filters(spec) else 0)
    split = a[5] if a[7] & MC_SPLIT_GLOBAL and a[5] > 1 else 0
    return staged + split * d["N"] * d["OH"] * d["OW"] * d["M"]


def _mc_size_limit(spec: ConvSpec) -> str | None:
    """Sizes the kernel's 32-bit offsets and 16-bit packed (oh, ow) cannot address (it returns
    cudaErrorInvalidValue there: cuda/multi_channel.cu, launch_multi_channel); None if fine."""
    d = spec.dims
    (pt, _), (pl, _) = spec.padding
    sh, sw = spec.window_strides
    if max(d["H"], d["W"], d["OH"], d["OW"]) > MC_MAX_EXTENT or not (
            -MC_MAX_EXTENT <= min(pt, pl) and max(pt, pl) < MC_MAX_EXTENT) or max(
            (d["OH"] - 1) * sh, (d["OW"] - 1) * sw) >= MC_MAX_EXTENT:
        return (f"maps, padding and stride x output size up to {MC_MAX_EXTENT} pixels per side "
                f"(the kernel packs input coordinates in 16 bits each)")
    wo, wi, wh, ww = spec.rhs_strides
    if ((d["M"] - 1) * wo + (d["C"] - 1 + 16) * wi + (d["KH"] - 1) * wh
            + (d["KW"] - 1) * ww) >= 2 ** 31:
        return "filters must be addressable with 32-bit offsets (fewer than 2^31 elements)"
    _, xc, xh, xw = spec.lhs_strides
    if (d["C"] - 1) * xc + (d["H"] - 1) * xh + (d["W"] - 1) * xw + 1 >= 2 ** 31:
        return "one image must have fewer than 2^31 elements (32-bit offsets)"
    return None


def _multi_channel(spec: ConvSpec, hw: Hardware, lat: dict) -> Plan:
    d = spec.dims
    N, C, M, KH, KW, OH, OW = d["N"], d["C"], d["M"], d["KH"], d["KW"], d["OH"], d["OW"]
    n_fma, n_sm = lat["N_FMA"], hw.sm_count
    P = N * OH * OW                                  # flattened output pixels (tiles span lines)
    too_big = _mc_size_limit(spec)
    if too_big:
        return _direct(hw, f"multi channel: {too_big}", lat)

    # Every instantiation on the menu, with its residency on this hardware.
    cfgs = []
    for Wx, Mp, Se, T, stages, regs in MC_CONFIGS:
        if T > hw.max_threads_per_block:
            continue
        stage, shared = _mc_shared_bytes(Wx, Mp, Se, stages)
        occ = _mc_blocks_per_sm(hw, T, regs, shared)
        b = occ["b"]
        if b < 1:
            continue
        S_sh = min(hw.shared_per_block_optin, hw.shared_per_sm // b - _reserved_shared(hw))
        if stages * stage > S_sh:                    # the ring must fit the block's share
            continue
        Wx_eff = min(Wx, P)
        cfgs.append(dict(Wx=Wx, Mp=Mp, Se=Se, S=Se * ELEM_BYTES, T=T, stages=stages, regs=regs,
                         stage=stage, shared=shared, S_sh=S_sh, b=b, occ=occ,
                         th_stage=Mp * Se * Wx_eff, th_sm=b * Mp * Se * Wx_eff,
                         m_lo=_cdiv(n_fma, b * Se * Wx_eff),
                         tiles=_cdiv(P, Wx) * _cdiv(M, Mp),
                         steps=_cdiv(C, Se) * KH * KW))
    if not cfgs:
        return _direct(hw, f"multi channel: no tile of the kernel fits {hw.shared_per_sm} B of "
                           f"shared memory and {hw.regs_per_sm} registers per SM", lat)

    # Section 3.2 per SM: b x M' x S/4 x min(W'x, P) >= N_FMA; the paper's preference among
    # those that meet it: smallest M', then largest W'x; then S = 64 B before 32 B (departure:
    # the paper takes 32 B first because it leaves room for a larger M'; on the menu M' is
    # fixed by the tile, and a 64 B segment halves the stages, i.e. the barriers and the ring
    # bookkeeping: 128x64 S64 ran 8-10% faster than S32 on every large layer, H200, notes v4).
    meets = [c for c in cfgs if c["th_sm"] >= n_fma]
    if meets:
        paper = min(meets, key=lambda c: (c["Mp"], -c["Wx"], -c["S"]))
        why = (f"{paper['Wx']}x{paper['Mp']}/S{paper['S']}: the smallest M' = {paper['Mp']} "
               f"(then the largest W'x, then S = 64 B: half the stages and barriers, measured "
               f"~10% faster) with b x M' x S/4 x min(W'x, P) = "
               f"{paper['b']} x {paper['Mp']} x {paper['Se']} x {min(paper['Wx'], P)} = "
               f"{paper['th_sm']} >= N_FMA = {n_fma} ({paper['b']} resident blocks per SM)")
    else:
        paper = max(cfgs, key=lambda c: (c["th_sm"], -c["Mp"], c["Wx"], -c["S"]))
        why = (f"no tile reaches N_FMA = {n_fma} per SM (P = {P} pixels); "
               f"{paper['Wx']}x{paper['Mp']}/S{paper['S']} computes the most, "
               f"{paper['th_sm']} FMAs per SM per stage: prefetch hides the latency only partly")

    # Beyond the paper, the grid: the cost model over tile x split (docstring item 8; the
    # kernel's auto_config applies the same model to plans without a split).
    def pick(Wx, Se_pref):
        cands = [c for c in cfgs if c["Wx"] == Wx and c["Mp"] == 64]
        if not cands:
            return None
        same = [c for c in cands if c["Se"] == Se_pref]
        return same[0] if same else cands[0]

    # S for the grid's tiles: 64 B where the segments are whole (C >= 32, C % 16 == 0)
    Se_pref = 16 if (C >= 32 and C % 16 == 0) else 8
    # the grid's M' = 64 tiles run on the tensor cores (>= 9 taps; OIHW filters then staged)
    tc_grid = KH * KW >= MC_TENSOR_CORE_MIN_TAPS and bool(
        _mc_tensor_cores(hw, spec, 64, 64, _dense_oihw_filters(spec), 0, 1)[0])
    grid, glob = [], []   # (cost, tile, split): cluster splits, splits through global memory
    for Wx in MC_GRID_TILES:
        c = pick(Wx, Se_pref)
        if c is None:
            continue
        for cs in MC_SPLITS:
            if cs <= min(_mc_max_split(hw, Wx), c["steps"]):
                grid.append((_mc_grid_cost(c["tiles"], c["steps"], Wx, cs, c["b"], n_sm,
                                           tc=tc_grid), c, cs))
        # through global memory (tensor-core layers only): any rank count, their own constants
        for cs in mc_global_split_counts(c["tiles"], c["b"], n_sm) if tc_grid else ():
            if cs <= c["steps"]:
                glob.append((_mc_global_split_cost(c["tiles"], c["steps"], Wx, cs, c["b"], n_sm),
                             c, cs))
    chosen, c_split, grid_cost, split_global = paper, 1, 0.0, False
    if grid:
        cost, best, cs = min(grid, key=lambda g: g[0])   # ties: the larger tile, the smaller split
        unsplit = [g[0] for g in grid if g[1]["Wx"] == paper["Wx"] and g[2] == 1]
        grid_cost = unsplit[0] if unsplit else 0.0
        if cs > 1 or best["Wx"] != paper["Wx"] or paper["Mp"] != 64:
            chosen, c_split, grid_cost = best, cs, cost
            per_sm = _cdiv(best["tiles"] * cs, n_sm)
            why += (f"; grid model (tile x split{', tensor-core constants' if tc_grid else ''}): "
                    f"{best['Wx']}x{best['Mp']}/S{best['S']}, "
                    f"{best['tiles']} tiles x split {cs} = {per_sm} blocks per SM of "
                    f"{_cdiv(best['steps'], cs)} steps, cost {cost:.0f}"
                    + (f" vs {unsplit[0]:.0f} for {paper['Wx']}x{paper['Mp']} unsplit"
                       if unsplit else ""))
            if c_split > 1:
                why += (" (beyond the paper: the ch reduction is split over a thread-block "
                        "cluster and summed through distributed shared memory)")
        if glob:
            gcost, gbest, gcs = min(glob, key=lambda g: g[0])
            if gcost < MC_GLOBAL_SPLIT_MARGIN * cost:   # cost: the best cluster (or unsplit) plan's
                why += (f"; split through global memory instead: {gbest['Wx']}x{gbest['Mp']}/"
                        f"S{gbest['S']}, {gbest['tiles']} tiles x {gcs} ranks, cost {gcost:.0f} "
                        f"(ranks without a cluster park partial tiles in the workspace, a second "
                        f"pass sums them in rank order)")
                chosen, c_split, grid_cost, split_global = gbest, gcs, gcost, True
    c = chosen
    lat_q = list(lat.items())
    q = lat_q + [
        ("blocks_per_SM", c["b"]), ("blocks_by_regs", c["occ"]["by_regs"]),
        ("blocks_by_shared", c["occ"]["by_shared"]), ("blocks_by_threads", c["occ"]["by_threads"]),
        ("S_shared", c["S_sh"]), ("threads_per_block", c["T"]),
        ("reg_budget", _reg_budget(hw, c["b"], c["T"])), ("regs_per_thread", c["regs"]),
        ("S", c["S"]), ("S_elems", c["Se"]), ("W'x", c["Wx"]), ("W'y", KH),
        ("M'_lower", c["m_lo"]), ("M'", c["Mp"]), ("Th_stage", c["th_stage"]),
        ("Th_SM", c["th_sm"]), ("STAGES", c["stages"]), ("stage_bytes", c["stage"]),
        ("shared_bytes_per_block", c["shared"]), ("output_tiles", c["tiles"]),
        ("reduction_steps", c["steps"]), ("c_split", c_split),
        ("steps_per_rank", c["steps"] // c_split),
        ("channels_per_split", _cdiv(C, c_split)),
        ("grid_cost", round(grid_cost, 1))]
    stage, stage_why = _mc_filter_staging(spec, c["Wx"])
    stageable = _dense_oihw_filters(spec)
    tc, tc_why = _mc_tensor_cores(hw, spec, c["Wx"], c["Mp"], bool(stage) or stageable,
                                  c["tiles"], c_split)
    if tc and not stage and stageable:
        # staged filters let the tensor cores run where OIHW ones keep FFMA (MC_STAGE_FILTERS)
        stage, stage_why = MC_STAGE_FILTERS, ("the OIHW filters are copied to HWIO first "
                                              "(the tensor cores' 16-byte filter loads)")
    pointwise_why = _mc_pointwise(hw, spec)
    oihw_why = "" if pointwise_why else _mc_oihw_order(spec, stage, tc)
    if oihw_why:
        stage, stage_why = 0, oihw_why
    if pointwise_why:
        # the general plan stays in the attributes (the launcher runs it where the streamed
        # kernel's alignment conditions fail), without the filter copy the streamed one skips
        why = f"{pointwise_why}; else the general kernel: {why}"
        stage, stage_why = 0, ""
    if stage_why:
        why += f"; {stage_why}"
    q.append(("filter_staging", stage))
    if tc_why:
        why += f"; {tc_why}"
    q.append(("tensor_cores", int(bool(tc))))
    if split_global and not tc:  # (cannot happen for >= 9 taps: tc_grid is this tile's answer)
        raise AssertionError("split through global memory planned off the tensor cores")
    q.append(("split_global", int(split_global)))
    q.append(("pointwise", int(bool(pointwise_why))))
    q.append(("oihw_order", int(bool(oihw_why))))
    attrs = (METHOD_IDS["multi_channel"], c["Se"], c["Mp"], c["Wx"], KH, c_split, c["T"],
             stage | tc | (MC_SPLIT_GLOBAL if split_global else 0)
             | (MC_POINTWISE if pointwise_why else 0) | (MC_OIHW_ORDER if oihw_why else 0))
    stride = ("" if tuple(spec.window_strides) == (1, 1) else
              f", stride {tuple(spec.window_strides)} (beyond the paper: each output pixel's "
              f"window starts at stride x its coordinates in the loaders)")
    return Plan("multi_channel", f"C > 1{stride}: stride-fixed block (sec 3.2): {why}",
                hw.name, tuple(q), tuple(int(a) for a in attrs))


def _direct(hw: Hardware | None, reason: str, lat: dict | None = None, extra=()) -> Plan:
    q = tuple((lat or {}).items()) + tuple(extra)
    return Plan("direct", reason, hw.name if hw is not None else "none (CPU)", q,
                (METHOD_IDS["direct"],) + (0,) * 7)


# ------------------------------------------------------------------ entry points
def make_plan(spec: ConvSpec, hw: Hardware | None) -> Plan:
    """The plan for `spec` on `hw` (None: no GPU). Pure."""
    if hw is None:
        return _direct(None, "no CUDA device: the CPU runs the direct convolution")
    if spec.ndim_spatial != 2:
        return _direct(hw, f"{spec.ndim_spatial} spatial dimensions: the paper's kernels are 2-D")
    if spec.dtype != "float32" or spec.rhs_dtype != "float32" or spec.out_dtype != "float32":
        return _direct(hw, f"dtype {spec.dtype}->{spec.out_dtype}: the paper's kernels are "
                           f"single precision (float32)")
    if spec.feature_group_count != 1 or spec.batch_group_count != 1:
        return _direct(hw, "grouped convolution (feature/batch_group_count > 1)")
    if any(v != 1 for v in spec.lhs_dilation + spec.rhs_dilation):
        return _direct(hw, f"dilation (lhs {spec.lhs_dilation}, rhs {spec.rhs_dilation})")
    d = spec.dims
    if min(d.values()) <= 0:
        return _direct(hw, "empty operand or output")
    lat = latency_model(hw)
    if d["C"] < MC_MIN_CHANNELS:
        from . import plan_single_channel  # section 3.1 (and its few-channel S8) lives there
        return plan_single_channel.plan_for(spec, hw, lat)
    return _multi_channel(spec, hw, lat)


@functools.lru_cache(maxsize=4096)
def plan_cached(spec: ConvSpec, hw: Hardware | None) -> Plan:
    return make_plan(spec, hw)


def division_ranges(spec: ConvSpec, plan: Plan) -> dict[str, tuple[tuple[int, int], ...]]:
    """The plan's division of the output as a product of per-axis ranges (n, m, oh, ow, c):
    every output element lies in exactly one (n, m, oh, ow) box, and the c ranges partition
    the channels summed into it. Blocks and the pieces a block sweeps both appear here."""
    d = spec.dims
    def split(extent, size):
        return tuple((lo, min(lo + size, extent)) for lo in range(0, extent, size))
    out = {"n": split(d["N"], 1), "m": ((0, d["M"]),), "oh": ((0, d["OH"]),),
           "ow": ((0, d["OW"]),), "c": ((0, d["C"]),)}
    a = plan.kernel_attrs
    if plan.method == "single_channel":
        from . import plan_single_channel
        return plan_single_channel.tile_ranges(spec, plan)
    elif plan.method == "multi_channel":
        Mp, Wx, c_split = a[2], a[3], a[5]
        out["m"] = split(d["M"], Mp)
        out["oh"] = split(d["OH"], 1)
        out["ow"] = split(d["OW"], Wx)
        out["c"] = split(d["C"], _cdiv(d["C"], c_split))
    return out


# ------------------------------------------------------------------ CLI
def _ints(text: str, n: int, what: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(v) for v in text.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}: expected {n} integers, got {text!r}")
    if len(vals) != n or min(vals) <= 0:
        raise argparse.ArgumentTypeError(f"{what}: expected {n} positive integers, got {text!r}")
    return vals


def _cmd_plan(args) -> int:
    N, C, H, W = _ints(args.input, 4, "--input N,C,H,W")
    M, C2, KH, KW = _ints(args.filters, 4, "--filters M,C,KH,KW")
    if C != C2:
        print(f"error: --input has C = {C} but --filters has C = {C2}", file=sys.stderr)
        return 2
    stride = _ints(args.stride, 2, "--stride")
    spec = spec_from_logical(N, C, H, W, M, KH, KW, stride=stride, padding=args.padding,
                             layout=args.layout)
    hw = resolve_hardware(args.hardware)
    print(f"convolution: {spec.describe()}")
    print(f"device: {hw.summary() if hw is not None else 'none (no CUDA device)'}")
    plan = make_plan(spec, hw)
    print(plan.describe())
    if hw is not None:   # what the GPU then runs (api._decide)
        from . import patch_gemm
        if plan.method == "direct":
            print("runs: " + ("the patch GEMM (patchify layer: jax_fastconv/patch_gemm.py)"
                              if patch_gemm.replaces(plan, spec)
                              else "lax (the direct kernel only with JAX_FASTCONV_FORCE_DIRECT=1)"))
        elif patch_gemm.rivals(plan, spec):
            print("runs: this kernel, or the patch GEMM where the first trace on the device "
                  "times it faster (patchify layer; JAX_FASTCONV_AUTOTUNE=0 keeps the kernel)")
    return 0


def _cmd_calibrate(args) -> int:
    try:
        hw, result, path = run_calibration(args.device)
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"device {args.device}: {hw.name}")
    print(f"  latency        = {result['latency_cycles']:.1f} cycles (pointer chase)")
    print(f"  copy bandwidth = {result['copy_bytes_per_s'] / 1e9:.1f} GB/s (read + write)")
    print(f"  FP32 FMA rate  = {result['fma_per_s'] / 1e12:.2f} TFMA/s")
    print(f"  clock          = {result['clock_hz'] / 1e6:.0f} MHz")
    print(f"cached in {path}; the planner now uses: {hw.summary()}")
    return 0


def register_cli(subparsers) -> None:
    """Add `plan` and `calibrate` to an argparse subparsers object."""
    p = subparsers.add_parser("plan", help="print the paper's model and the plan for a shape")
    p.add_argument("--hardware", default=None,
                   help=f"{'|'.join(PRESETS)}|current or a JSON file of Hardware fields "
                        f"(default: $JAX_FASTCONV_HARDWARE, else the current device)")
    p.add_argument("--input", required=True, help="N,C,H,W")
    p.add_argument("--filters", required=True, help="M,C,KH,KW")
    p.add_argument("--padding", default="VALID", choices=["VALID", "SAME", "SAME_LOWER"])
    p.add_argument("--stride", default="1,1", help="SH,SW")
    p.add_argument("--layout", default="NCHW", choices=["NCHW", "NHWC"])
    p.set_defaults(func=_cmd_plan)
    c = subparsers.add_parser("calibrate", help="measure latency, bandwidth and FMA rate on "
                                                "the GPU and cache them for the planner")
    c.add_argument("--device", type=int, default=0, help="CUDA device ordinal")
    c.set_defaults(func=_cmd_calibrate)
