"""Single-channel plan (C = 1, stride 1): paper section 3.1 on the kernel that really runs.

``single_channel_plan(spec, hw, lat)`` replaces ``planner._single_channel`` (same signature,
returns a `planner.Plan`). The plan's ``kernel_attrs`` are exactly the launch of
cuda/single_channel.cu (its header comment: "Mapping of plan[1..7]"):

    [1, division, P, Q, MB, RB, prefetch, threads]
    MB = filters per tile (multiple of 8 in [8, 128]), RB = output rows per tile
    ([1, min(OH, 64)]); division 1: P = ceil(OH / RB), Q = 1; division 2: P = 1,
    Q = ceil(M / MB); prefetch 1 = persistent grid of min(tiles, 2 N_sm) blocks sweeping
    contiguous tile ranges (double buffered), 0 = volume method, one block per tile;
    threads a multiple of 32 in [64, 256]. The column tile CB follows from RB (`column_tile`).
    Division 3 (1x1 kernels only): exactly [1, 3, 1, 1, 0, 0, 0, 256], the pointwise kernel of
    cuda/single_channel_pointwise.cu (S6). Division 4 (strides > 1 only): exactly
    [1, 4, 1, 1, 0, 0, 0, 256], the strided kernel of cuda/single_channel_strided.cu (S7).
    Division 5 (2 to 64 taps, sm_80+): [1, 5, 1, 1, MB, RB, 0, 256], the 3xTF32 tensor-core
    kernel of cuda/single_channel_mma.cu with tiles of MB in {16, 32, 64, 128} filters x RB
    output rows (S9). Divisions 1 and 2 with prefetch + 2 (5x5 kernels only): the same tiles
    with row-Winograd F(4, 5) products (S10).

The kernel runs a valid plan as given (no re-choice, no clamping); `launch_of(spec, plan)`
recomputes that launch in Python and `tile_ranges(spec, plan)` the output boxes it writes.

Departures from the paper (section 3.1; each deliberate, the reason beside it):

S1. Blocks per SM and threads: the paper launches N_block = 2 x N_sm blocks of 512 threads.
    The kernel is compiled with __launch_bounds__(256, 2): at most 256 threads per block, two
    blocks per SM (a block's register tile is 8 filters x 4 columns, 32 accumulators, so
    512 threads would not fit 2 blocks' registers). So T <= 256, N_block = 2 x N_sm, and the
    per-SM quantities are taken per block: S_shared -> the per-block share of the SM
    (min(opt-in, shared_per_SM / 2 - 1 KB reserved on sm_80+)), N_FMA -> ceil(N_FMA / 2)
    (on Hopper, N_FMA per block with 2 blocks/SM). Registers are not estimated: they come
    from ptxas (`KERNEL_REGS`) and must fit regs_per_SM / (2 x T). T is one thread per work
    item of a tile, up to 256, counted in the register tile the kernel runs on the layer
    (`register_tile`: 4 filters a thread on NHWC-like 5x5 and small 3x3 layers, so twice the
    items of the planned 8 x 4 unit; 28x28 K5 NHWC at batch 1 0.94x the time with 192 threads
    instead of 96, H100; benchmarks/notes/single_channel.md round 23).
S2. Geometry = what the kernel holds. The map is divided along the OUTPUT rows (OH); a piece
    holds RB + KH - 1 input lines of SW floats, SW = roundup4(CB + KW - 1 + 8) (the padded
    shared line: float4 reads run up to 8 floats past the patch), CB = OW (whole lines, the
    paper's W_x) unless RB + KH - 1 whole lines exceed the kernel's 48 KB input buffer, in
    which case the kernel's column tiles cut the line (`column_tile`; "the kernel's column
    tiles"). Filters per piece are rounded up to a multiple of 8 (the register tile) and at
    most 128. So D = 4 (KH KW MB + (RB + KH - 1) SW) bytes and Th = KH KW MB RB CB FMAs
    (issued FMAs, padding filters included).
S3. The batch: the paper plans one image. Here the division covers N images: tiles =
    N x ceil(OH / RB) x ceil(OW / CB) x ceil(M / MB). Division 1 gives a block
    ceil(M / N_block) filters (eq. 5, rounded to 8) and P pieces of each image's rows;
    division 2 gives a block ceil(N OH / N_block) rows (eq. 7 with W_y -> N OH; a piece
    never spans two images, so at most OH, and at most the rows whose whole lines fit the
    input buffer) and Q pieces of the filters.
S4. Prefetch double-buffers (the next piece lands while this one is computed), so a
    prefetching division must fit 2 D <= S_shared; the lower bounds P_lower and Q_lower use
    that. When no P (Q) reaches Th >= N_FMA with 2 D <= S_shared, the division is planned
    for the volume method: the smallest P (Q) with D <= S_shared (the paper sets it to 1,
    which may overflow shared memory). The choice between divisions is the paper's: those
    able to prefetch first (sec 2.2 step 3), then (step 4) those whose data in flight over
    the resident blocks reaches V_s, then the smaller D (sec 3.1 step 4).
S5. Measured on Hopper (H200, benchmarks/notes/single_channel.md), the paper's choice is
    overridden where measurement contradicts it (compute capability >= 9.0 only; the
    GTX 1080Ti preset keeps the paper's plan): the volume method with division 2 (rows
    across blocks, consecutive blocks sharing one input band through L2) beat the persistent
    prefetch sweep (the hardware block scheduler overlaps one block's load with the other
    resident block's compute); tiles of at most 2048 work items (8 per thread) and at most
    32 filters beat the paper's large pieces; rows per tile are maximised within that as long
    as >= N_sm / 2 tiles remain. Round 1's hint ">= 3 tiles per SM first" measured 5-30 %
    slower at batch 1 (fewer, larger tiles win when everything is resident at once). See
    `_hopper_rule` and the reason string of each plan.
S6. 1x1 layers on Hopper (beyond the paper): with KH = KW = 1 every output is one product and
    nothing is reused across taps, so staging an input band and the filters in shared memory
    only delays the first store. The pointwise kernel (division 3) reads each thread's input
    and weights from global memory and streams 16-byte stores: on an H100 0.72-0.82x the
    staged kernel's time on the paper's batch-1 1x1 layers up to 112x112 NCHW and 0.79-0.87x
    up to 56x56 NHWC (1.00x at 112x112), 0.89x / 1.02x at 224x224 and 0.91-1.05x on the larger
    ones, 1.02-1.05x at batch 1 (driver, benchmarks/notes/single_channel.md round 12). It is planned below
    POINTWISE_MAX_OUT outputs, where the staged plans are its measured alternatives
    (candidate_plans); above, the staged kernel is planned and the pointwise one measured
    beside it (with the earlier wall-clock timer a bench picked it on four layers that then ran
    1.01-1.12x slower; with the device-time plan timer it measured 1.00-1.11x on an H100 and
    was picked nowhere, bench at 96e9855; the H200 driver had it at 0.90-0.96x on some).
S7. Strides (beyond the paper, whose section 3.1 is stride 1): the staged kernel reads a
    tap's inputs as consecutive floats of a shared line, which a stride breaks. A layer with
    a stride > 1 runs the strided kernel (division 4): the filters of a slab of MB filters in
    shared memory (MB the smallest power of two >= M, at most 128, halved until the slab's
    weights fit 48 KB: `strided_filters`), each thread 4 (NHWC-like outputs) or 8 (others:
    `strided_filters_per_thread`) filters x 4 output columns of one row from a window read
    with __ldg (the input is M s_h s_w times smaller than the output: the output stores bound
    most of these layers as they do the stride-1 ones, the FMAs the 7x7/2 and 5x5/2 ones; the
    plan names the larger floor, `byte_floor_us` or `FMA_floor_us`). Layers the kernel's
    index range does not cover (`strided_supported`) run the direct kernel's plan (lax).
S8. Few channels (beyond the paper): with 1 < C < 8 the multi-channel kernel's S = 32 B
    segments along C (its minimum, sec 3.2) would be mostly padding (measured 0.39-0.50x lax
    on VGG-16's C = 3 first layer, H200), so these layers run the strided kernel with every
    stride, 1 included: the slab's C x KH x KW weights in shared memory and each thread's
    tile summed over the channels in turn, each channel section 3.1's computation. Planned
    for its compiled kernel sizes and strides only (`few_channel_instance`); the rest run lax.
S9. Tensor cores (beyond the paper, whose GPU has none): on the H200 a 5x5 layer's FMA floor
    equals its byte floor (b1 512^2 M32: 8.2 us each) and the FFMA loop runs at 60-65% of the
    FP32 peak, so no FFMA launch reaches 70% of the roofline there. The tensor-core kernel
    (division 5) computes the tile as a GEMM (pixels x taps times taps x filters, taps padded to
    k-steps of 8) in 3xTF32 (float32 accuracy; non-finite results are recomputed with FFMAs),
    from the same input band in shared memory (double buffered, persistent grid of 2 blocks per
    SM). It is not planned by a rule: `candidate_plans` offers the best three tiles of
    `mma_tiles`' cost model (measured ranking within ~3% of the best tile of a 24-tile grid on
    the paper's missed layers, H100 driver) to the autotuner, which keeps it where it is faster
    (H100 driver: 0.83-0.86x the FFMA plan's time on b32 28^2 K5, 0.90-0.95x on b32 56^2 K5,
    0.93-0.97x on b1 512^2 K3/K5 NHWC; 1.13-1.24x slower on NCHW K3, which it then leaves).
S10. Row-Winograd products (beyond the paper): for 5x5 kernels the staged kernel can compute
    each filter row's 4 outputs per chunk with Winograd's F(4, 5) (cuda/winograd_f45.cuh: 8
    products instead of 20; the tile's input rows and filters transformed once in shared
    memory, the products of the 5 filter rows summed in the transformed domain; float32
    relative error ~4e-7; tiles with inf, NaN or huge values are computed by direct sums).
    plan[6] + F45_FLAG selects it for a division 1 or 2 tile (4 filters x 2 chunks of 4
    columns per thread). Like S9 it is not planned by a rule: `candidate_plans` offers the
    planned tile and F45_TILES with the flag, and the autotuner keeps it where it is faster
    (H100 driver, best tile against the best FFMA tile, stores removed as a stand-in for the
    H200's compute-bound 5x5 layers: 0.92x on b32 56^2 K5 NHWC, 0.93-0.95x on b32 112^2 K5,
    1.00x b32 56^2 NCHW, 1.09x slower on b32 28^2; with stores, bound by the H100's copy
    bandwidth, 1.00-1.18x: an H100 bench picked it nowhere).
S11. wgmma over a Toeplitz band (beyond the paper; Hopper's sm_90a only): the padded images stacked
    into one tall map, a CTA stages a flat band of it (hi / lo TF32 copies) and reads it as wgmma's
    shared-memory A operand through a descriptor whose rows overlap (A[r][k] = band[4 r + k + kh
    Ws]), so no thread loads an operand element; B holds the 32 filters of a block at 4 pixel
    phases (cuda/single_channel_wgmma.cu). Division 6: [6, 1, 1, 32, SPT, stagger + 2 RS + 4 AL +
    8 DN, 128 NWG], SPT segments of 256 flat pixels per CTA, NWG warpgroups taking turns at
    wgmma every round (stagger = 1, the launches offered) or not; RS = 1: A from registers (one
    unsplit band copy; each lane loads and splits its own fragment, and wgmma reads only B from
    shared memory).
    Runs NHWC-like outputs (filters contiguous) and NCHW-like ones whose rows are whole float4s
    (`tz_planes`: OW % 4 == 0; lanes t and t ^ 1 swap rows so that each store instruction writes
    one filter's 256 contiguous bytes), M % 32 == 0, KH and KW <= 5. AL = 1 (plane outputs only):
    the aligned line, the band's line rounded further to OW mod 8 (`tz_line`), so that every
    store run covers whole 32-byte sectors; 4 more floats a line for KW > 1 (H200 driver, notes
    round 41: b1 1024^2 K5 NCHW 0.91x, b32 112^2 0.95x, b1 512^2 0.97x), offered beside the
    plain launches with A from registers (`tz_launches`). DN = 1 (with A from registers): dense
    segments, of the output rows' groups of 4 pixels only, each lane loading its rows' fragments
    from their own band offsets, so no MMA or store is spent on the stack's padding rows and
    columns (b32 28^2 K5: 26% of the flat segments' pixels) and plane runs start where the
    plane's 256-byte runs do (H200 driver, notes round 42: b32 28^2 K5 NCHW 0.92x, NHWC 0.93x,
    b32 56^2 K5 NCHW 0.97x; 1.01-1.05x on the large NHWC maps), offered beside the others.
    Not planned by a rule: `candidate_plans` offers TZ_GRIDS' launches to the autotuner (prototype,
    H200, graph timing: b32 56^2 K5 NHWC 29.6 us against 33.0 for the best FFMA launch, b1 1024^2
    K5 NHWC 37.4 against 45.6; the FFMA kernel stays ahead on b32 28^2 K5. NCHW, H200 driver, round
    35: 0.91-0.98x the best FFMA launch on b1 224^2 / 512^2 / 1024^2 and b32 112^2 K5, 1.06-1.23x
    slower on b32 28^2 / 56^2 K5. With filter blocks fastest in the grid, round 36: b32 56^2 K5
    NHWC 26.1 us, NCHW 30.4 against the FFMA kernel's 31.2; b32 28^2 K5 NHWC 14.3 against 14.5,
    NCHW still 1.09x).
"""
from __future__ import annotations

import argparse
import random
import sys

from .planner import _cdiv, _reserved_shared

# ---------------------------------------------------------------- the kernel's facts
TM = 8                 # filters per thread (register tile rows); MB is a multiple of it. The
                       # kernel runs 4 per thread (pick_tm) for NHWC-like 5x5 layers and 3x3
                       # ones under 2^24 outputs: the same tiles, each planned item split in two
TP = 4                 # output columns per thread (the kernel runs 8 with its 4 filters for
                       # NHWC-like 5x5 layers on large maps or tiles of >= 64 filters, pick_tp:
                       # the same tiles, each planned item paired with its neighbour);
                       # `register_tile` says which, and the planned threads follow it
MB_MAX = 128           # filters per tile
RB_MAX = 64            # output rows per tile
T_MIN, T_MAX = 64, 256  # threads per block (__launch_bounds__(256, 2))
BLOCKS_PER_SM = 2      # __launch_bounds__(256, 2); the paper's N_block = 2 N_sm
IN_BUDGET = 48 * 1024 // 4   # floats per input buffer (SC_IN_KB)
NV_EXTRA = 8           # floats read past the patch by the float4 loads, plus rounding

# Registers per thread from `nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a
# -Xptxas -v -Icuda -c cuda/single_channel.cu` (max over the two store layouts), 0 spills.
# Keep in sync with cuda/single_channel.cu (KH x KW templates; 0 = the generic runtime-K path).
KERNEL_REGS = {(1, 1): 112, (3, 3): 128, (5, 5): 128, (7, 7): 124, "generic": 122}

# Hopper rule (S5), from the H200 measurements in benchmarks/notes/single_channel.md.
HOPPER_MB_MAX = 32
HOPPER_ITEMS = 2048

# S6: the pointwise 1x1 kernel's plan attributes [division, P, Q, MB, RB, prefetch, threads]
# and the output size below which it is planned (above it, the staged kernel runs alone).
POINTWISE_ATTRS = (3, 1, 1, 0, 0, 0, 256)
POINTWISE_MAX_OUT = 1 << 22


# S10: plan[6] bit of the row-Winograd products (5x5), floats of a group of 4 transformed
# filters in shared memory (kF45Group), and the tiles offered to the autotuner besides the
# planned one: (division, MB, RB or "bands" (band_rows), prefetch), the best tiles of an H100
# driver grid on the paper's batch-32 5x5 layers (benchmarks/notes/single_channel.md round 20).
F45_FLAG = 2
F45_GROUP = 4 * 5 * 8 + 4
F45_TILES = ((2, 32, "bands", 0), (2, 64, "bands", 0), (1, 32, 24, 1))


def is_f45(attrs) -> bool:
    """Whether plan attributes ask for the row-Winograd products (S10)."""
    a = tuple(attrs)[-7:]
    return len(a) == 7 and a[0] in (1, 2) and bool(a[5] & F45_FLAG)


def f45_supported(spec) -> str | None:
    """Why the row-Winograd products do not run this layer (None: they do); an output of under
    2^29 elements stands in, on the safe side, for f45_offsets_fit's 32-bit tile offsets (a
    tile's extent, OW + 3 columns included, is at most 4x the output in any dense layout)."""
    d = spec.dims
    if (d["KH"], d["KW"]) != (5, 5):
        return "not a 5x5 kernel"
    if d["C"] != 1 or tuple(spec.window_strides) != (1, 1):
        return "not a stride-1 single-channel layer"
    if d["N"] * d["M"] * d["OH"] * d["OW"] >= 1 << 29:
        return "outputs past 32-bit offsets"
    return None


def f45_shared_bytes(RB: int, MB: int, KH: int, KW: int, OW: int) -> int:
    """Shared memory of a row-Winograd tile: the raw patch, its transformed rows (8 floats per
    chunk of 4 columns), the raw filters and their transforms, each single buffered."""
    cb = column_tile(RB, KH, KW, OW)
    return 4 * ((RB + KH - 1) * (shared_line(cb, KW) + 8 * _cdiv(cb, 4)) + KH * KW * MB
                + MB // 4 * F45_GROUP)


def is_pointwise(attrs) -> bool:
    """Whether single-channel plan attributes name the pointwise 1x1 kernel (S6)."""
    return tuple(attrs[1:]) == POINTWISE_ATTRS


# S7: the strided kernel's plan attributes, its slab of filters and the layers it runs
# (cuda/single_channel_strided.h: strided::slab_filters, strided::supported; compared on the
# host by tests/test_plan_single_channel.py test_strided_support_is_the_kernels).
STRIDED_ATTRS = (4, 1, 1, 0, 0, 0, 256)
STRIDED_MB_MAX = 128
STRIDED_SHARED_FLOATS = 48 * 1024 // 4


# The strided kernel's compiled instances for C > 1, (kernel size, stride) of square layers
# (dispatch in cuda/single_channel_strided.cu; 3x3/1 for C > 1 only, C = 1 is the staged
# kernel's there); other layers run its generic instance (runtime loops, four loads per tap).
FEW_CHANNEL_INSTANCES = ((3, 2), (5, 2), (7, 2), (2, 2), (4, 4), (3, 1))

# S9: the tensor-core kernel (cuda/single_channel_mma.cu): its tiles and the layers it runs.
MMA_DIVISION = 5
MMA_FILTERS = (16, 32, 64, 128)     # MB: warps of 16 filters, 8 warps per block
MMA_ROWS = (1, 2, 4, 8, 16, 32)     # RB candidates of mma_tiles
MMA_MAX_TAPS = 64                   # 8 k-steps of 8 taps
MMA_SHARED = 96 * 1024              # both input-band buffers of a block (kSmemBudget)
MMA_TRIES = 3                       # tiles offered to the autotuner (candidate_plans)

# S11: the wgmma kernel (cuda/single_channel_wgmma.cu): its launches and the layers it runs.
TZ_DIVISION = 6
TZ_SEGMENT = 256                    # flat pixels per segment (one m64 wgmma x 4 phases)
TZ_MAX_K = 5                        # KH, KW (8 k per band row: KW + 3 phases)
TZ_SHARED = 227 * 1024              # the kernel's shared-memory bound (the H100 / H200 opt-in)
TZ_SLACK = 256                      # floats past the band (the .cu file's kSlack: memcheck's view
                                    # of a wgmma read)
# (CTAs per SM, warpgroups, A from registers) of the launches offered (for plane outputs, those
# with A from registers also with the aligned line): the prototype's best per
# layer (round 26: b1 512^2 ~1 CTA per SM, b32 56^2 ~2, b32 28^2 ~4; 2 or 3 warpgroups); A from
# registers on the 2-warpgroup grids of 1 and 2 CTAs per SM (round 28, H200 driver: 0.965x on b32
# 56^2 K5, 0.99x on b1 512^2 K5 NHWC; its 146 registers at K = 5 hold one CTA per SM, so it
# loses where several are wanted: b32 28^2 K5 1.1-1.3x)
TZ_GRIDS = ((1, 2, 0), (1, 2, 1), (1, 3, 0), (2, 2, 0), (2, 2, 1), (2, 3, 0), (4, 2, 0))

# C = 1 patchify layers with at least this many taps leave the strided kernel's generic
# instance for the patch GEMM (measured from 7x7/7 up; 3x3/3 and 5x5/5 not measured).
PATCH_GEMM_MIN_TAPS = 49


def generic_patchify(spec) -> bool:
    """A patchify layer (patch_gemm covers it) of >= PATCH_GEMM_MIN_TAPS taps that only the
    strided kernel's generic instance would run."""
    from . import patch_gemm
    d = spec.dims
    return (d["KH"] * d["KW"] >= PATCH_GEMM_MIN_TAPS and not few_channel_instance(spec)
            and patch_gemm.uncovered_reason(spec) is None)


def few_channel_instance(spec) -> bool:
    """Whether a layer of 1 < C < 8 channels has a compiled instance of the strided kernel
    (S8 plans only those: the generic instance measured 0.31-0.58x lax HIGHEST on ViT-B/16's
    16x16/16 patchify stem, C = 3, H100)."""
    d = spec.dims
    sh, sw = spec.window_strides
    return d["KH"] == d["KW"] and sh == sw and (d["KH"], sh) in FEW_CHANNEL_INSTANCES


def is_strided(attrs) -> bool:
    """Whether single-channel plan attributes name the strided kernel (S7)."""
    return tuple(attrs[1:]) == STRIDED_ATTRS


def strided_filters(M: int, KH: int, KW: int, C: int = 1) -> int:
    """MB of the strided kernel: the smallest power of two >= M in [4, 128], halved until the
    slab's C x KH x KW x MB weights fit 48 KB; 0 when 4 filters do not."""
    taps = C * KH * KW
    mb = 4
    while mb < STRIDED_MB_MAX and mb < M:
        mb *= 2
    while mb > 4 and taps * mb > STRIDED_SHARED_FLOATS:
        mb //= 2
    return mb if taps * mb <= STRIDED_SHARED_FLOATS else 0


def strided_filters_per_thread(spec, mb: int, sms: int) -> int:
    """Filters per thread of the strided kernel on a device of `sms` SMs
    (strided::filters_per_thread, for XLA's aligned buffers). Slabs of 4: 4. The column order:
    8 where an output takes >= 9 FMAs (C x KH x KW) and the launch keeps 256 threads per SM or
    (C = 1) its outputs take >= 25; else 4. The filters-first order (the output's filters its
    fastest axis, M % 4 == 0, e.g. NHWC): 4, but 8 for C > 1 where a window row costs more
    than 2 loads per tap (3 SW > KW) and the launch keeps 256 threads per SM."""
    d = spec.dims
    if mb < 8:
        return 4
    threads = strided_items(spec, mb, 8) * _cdiv(d["M"], mb)
    lanes = threads >= 256 * sms
    if spec.out_filters_in_fours:
        return 8 if d["C"] > 1 and 3 * spec.window_strides[1] > d["KW"] and lanes else 4
    taps = d["C"] * d["KH"] * d["KW"]
    return 8 if taps >= 9 and ((taps >= 25 and d["C"] == 1) or lanes) else 4


def strided_items(spec, mb: int, tm: int = 4) -> int:
    """Work items of one slab of the strided kernel: N x OH x ceil(OW / 4) x MB / tm, tm filters
    per thread (4, the most items, in the support check)."""
    d = spec.dims
    return d["N"] * d["OH"] * _cdiv(d["OW"], 4) * (mb // tm)


def strided_supported(spec) -> str | None:
    """None when the strided kernel runs `spec` (C = 1 with a stride > 1, or C > 1 with any
    stride), else why not."""
    d = spec.dims
    sh, sw = spec.window_strides
    big = 1 << 30
    if d["C"] == 1 and (sh, sw) == (1, 1):
        return "C = 1 at stride 1 is the staged kernel's (sec 3.1), not the strided kernel's"
    (pt, _), (pl, _) = spec.padding
    if (max(d["H"], d["W"], d["OH"], d["OW"], d["M"], d["N"], sh, sw, d["KH"], d["KW"]) >= big
            or not -big < pt < big or not -big < pl < big
            or (d["OH"] - 1) * sh + d["KH"] >= big or (d["OW"] - 1) * sw + d["KW"] >= big):
        return "a size over 2^30 (the kernel's 32-bit index math)"
    mb = strided_filters(d["M"], d["KH"], d["KW"], d["C"])
    if mb == 0:
        per = f"C = {d['C']} x " if d["C"] > 1 else ""
        return f"{per}a {d['KH']}x{d['KW']} kernel: 4 filters' weights exceed the 48 KB slab"
    if (strided_items(spec, mb) >= (1 << 31) - 1024
            or _cdiv(d["M"], mb) > 65535):
        return "over 2^31 - 1024 work items per slab or 65535 slabs (32-bit item indices)"
    return None



def mma_attrs(MB: int, RB: int) -> tuple:
    """The plan attributes of the tensor-core kernel with tiles of MB filters x RB rows."""
    return (MMA_DIVISION, 1, 1, MB, RB, 0, 256)


def _mma_line(spec) -> int:
    """Floats of one input-band row in shared memory (OW + KW - 1, rounded up to 4)."""
    d = spec.dims
    return _cdiv(d["OW"] + d["KW"] - 1, 4) * 4


def _mma_tile_fits(spec, MB: int, RB: int) -> bool:
    d = spec.dims
    return (MB in MMA_FILTERS and 1 <= RB <= d["OH"]
            and 2 * (RB + d["KH"] - 1) * _mma_line(spec) * 4 <= MMA_SHARED)


def mma_supported(spec, hw) -> str | None:
    """Why the tensor-core kernel does not run this layer (None: it does): the host checks of
    single_channel_mma_supported, on the safe side (the output's whole index range in 32 bits
    instead of one image's)."""
    d = spec.dims
    taps = d["KH"] * d["KW"]
    if tuple(hw.compute_capability) < (8, 0):
        return "no TF32 tensor cores (sm_80+)"
    if d["C"] != 1 or tuple(spec.window_strides) != (1, 1):
        return "not a stride-1 single-channel layer"
    if not 2 <= taps <= MMA_MAX_TAPS:
        return f"{taps} taps (2 to {MMA_MAX_TAPS})"
    if (max(d["OH"], d["OW"], d["M"], d["N"]) >= 1 << 24 or max(d["H"], d["W"]) >= 1 << 30
            or max(abs(p) for pair in spec.padding for p in pair) >= 1 << 24):
        return "sizes past the kernel's index range"
    if d["N"] * d["M"] * d["OH"] * d["OW"] >= 1 << 31:
        return "outputs past 32-bit offsets"
    if not _mma_tile_fits(spec, MMA_FILTERS[0], 1):
        return "one input row band exceeds its shared memory"
    return None


def mma_tiles(spec, hw, count: int = MMA_TRIES) -> list[tuple[int, int]]:
    """The `count` best (MB, RB) tiles of the tensor-core kernel by a cost model of its
    persistent grid (2 blocks per SM): the first tile's staging, then per turn of the grid a
    tile's fixed cost and its warps' items (32 pixels x 16 filters, 12 MMAs per k-step), and
    fewer warps per SM (a grid under 1.5 blocks per SM) taken as 1.4x slower."""
    d = spec.dims
    N, M, OH, OW = d["N"], d["M"], d["OH"], d["OW"]
    ksteps = _cdiv(d["KH"] * d["KW"], 8)
    sms = hw.sm_count
    item = (12 * ksteps + 40) / 88      # an item's cost, 1 at 5x5
    costs = []
    for MB in MMA_FILTERS:
        if MB > max(16, _cdiv(M, 16) * 16):
            break
        pstep = 8 // (MB // 16)          # a warp takes every pstep-th pixel item
        for RB in MMA_ROWS:
            if not _mma_tile_fits(spec, MB, RB):
                continue
            tiles = N * _cdiv(OH, RB) * _cdiv(M, MB)
            grid = min(tiles, 2 * sms)
            per_warp = _cdiv(_cdiv(RB * OW, 32), pstep)
            cost = (2 + _cdiv(tiles, grid) * (1 + per_warp * item)) * (1.0 if grid >= 1.5 * sms else 1.4)
            costs.append((cost, MB, RB))
    return [(MB, RB) for _, MB, RB in sorted(costs)[:count]]


def tz_attrs(SPT: int, NWG: int, stagger: int = 0, rs: int = 0, al: int = 0,
             dn: int = 0) -> tuple:
    """The plan attributes of the wgmma kernel: SPT segments per CTA, NWG warpgroups, taking
    turns at wgmma (stagger = 1) or not, A from registers (rs = 1) or from shared
    memory, the aligned line (al = 1) or not, dense segments (dn = 1) or flat ones:
    plan[6] = stagger + 2 rs + 4 al + 8 dn."""
    return (TZ_DIVISION, 1, 1, 32, SPT, stagger + 2 * rs + 4 * al + 8 * dn, 128 * NWG)


def tz_flags(bits: int) -> tuple[int, int, int, int]:
    """(stagger, rs, al, dn) of the wgmma kernel's plan[6]: tz_attrs' encoding read back."""
    return bits & 1, (bits >> 1) & 1, (bits >> 2) & 1, (bits >> 3) & 1


def tz_mode(bits: int) -> str:
    """What plan[6]'s bits add to the wgmma kernel's description (explain's mode, the candidate
    plans' reasons)."""
    _, rs, al, dn = tz_flags(bits)
    return ((", A from registers" if rs else "") + (", the aligned line" if al else "")
            + (", dense segments" if dn else ""))


def tz_line(spec, al: int = 0) -> int:
    """Floats of a band line (the .cu file's tz_line): OW + KW - 1 rounded up to 4; with the
    aligned line (al = 1, plane outputs), further to OW mod 8."""
    line = _mma_line(spec)
    return line + (line - spec.dims["OW"]) % 8 if al and tz_planes(spec) else line


def tz_groups_per_row(spec) -> int:
    """Dense segments' groups of 4 output pixels per output row (the .cu file's
    tz_groups_per_row): OW / 4 rounded up, a row's last group partial where OW % 4 != 0."""
    return _cdiv(spec.dims["OW"], 4)


def tz_segments(spec, al: int = 0, dn: int = 0) -> int:
    """256-pixel segments: flat, of the tall stack (N images of OH + KH - 1 rows of tz_line
    floats) through its last output row; dense (dn = 1), of the output rows' groups of 4
    pixels (OW / 4 rounded up a row)."""
    d = spec.dims
    if dn:
        return _cdiv(d["N"] * d["OH"] * tz_groups_per_row(spec) * 4, TZ_SEGMENT)
    return _cdiv((d["N"] * (d["OH"] + d["KH"] - 1) - d["KH"] + 1) * tz_line(spec, al), TZ_SEGMENT)


def tz_band_rows(spec, SPT: int, al: int = 0, dn: int = 0) -> int:
    """Band rows a CTA of SPT segments stages at most (the .cu file's tz_band_rows). Flat: its
    segments' rows, the KH - 1 below, one more for a segment starting mid-row. Dense: the
    output rows its groups span, KH - 1 padding rows per image boundary crossed, KH - 1 below
    and one more."""
    d = spec.dims
    KH = d["KH"]
    if dn:
        gpr = tz_groups_per_row(spec)
        dq = (SPT * TZ_SEGMENT // 4 + gpr - 2) // gpr
        dn_ = min((d["OH"] - 1 + dq) // d["OH"], d["N"] - 1)
        return dq + dn_ * (KH - 1) + KH + 1
    return _cdiv(SPT * TZ_SEGMENT + 8, tz_line(spec, al)) + KH + 1


def tz_shared_bytes(spec, SPT: int, rs: int = 0, al: int = 0, dn: int = 0) -> int:
    """Shared bytes of a CTA: B hi / lo (KH x 1024 floats each), the band's hi / lo copies of
    its rows (tz_band_rows; with A from registers, rs = 1: one unsplit copy) and TZ_SLACK floats
    of slack."""
    rows = tz_band_rows(spec, SPT, al, dn)
    return 4 * (spec.dims["KH"] * 2048 + (1 if rs else 2) * rows * tz_line(spec, al) + TZ_SLACK)


def tz_planes(spec) -> bool:
    """Whether the wgmma kernel writes this output as planes (its tz_planes): pixels contiguous
    (NCHW-like), rows of whole float4s (OW % 4 == 0), every stride a multiple of 4."""
    yn, yc, yh, yw = spec.out_strides
    return (yw == 1 and yc != 1 and spec.dims["OW"] % 4 == 0
            and all(v % 4 == 0 for v in (yn, yc, yh)))


def tz_supported(spec, hw) -> str | None:
    """Why the wgmma kernel does not run this layer (None: it does): the host checks of
    single_channel_wgmma_supported, for its smallest launch."""
    d = spec.dims
    if tuple(hw.compute_capability) != (9, 0):
        return "no sm_90a (wgmma) on this device"
    from ._ffi import cuda_module
    if cuda_module is not None and not getattr(cuda_module, "wgmma_kernels", False):
        return "this build has no sm_90a kernels (CMAKE_CUDA_ARCHITECTURES without 90)"
    if d["C"] != 1 or tuple(spec.window_strides) != (1, 1):
        return "not a stride-1 single-channel layer"
    if d["M"] % 32:
        return "M not a multiple of 32 (whole 32-filter blocks)"
    if not (d["KH"] <= TZ_MAX_K and d["KW"] <= TZ_MAX_K and d["KH"] * d["KW"] >= 2):
        return f"a {d['KH']}x{d['KW']} kernel (2 to {TZ_MAX_K}x{TZ_MAX_K} taps)"
    if not (spec.out_filters_in_fours or tz_planes(spec)) or spec.lhs_strides[3] != 1:
        return ("an output whose filters are not contiguous (NHWC-like) nor its rows whole "
                "float4s of contiguous pixels (NCHW-like, OW % 4 == 0), or input rows that are not")
    if (max(d["N"], d["H"], d["W"], d["OH"], d["OW"]) >= 1 << 24
            or max(abs(p) for pair in spec.padding for p in pair) >= 1 << 24):
        return "sizes past the kernel's index range"
    w_so, _, w_sh, w_sw = spec.rhs_strides
    if (d["M"] - 1) * w_so + (d["KH"] - 1) * w_sh + (d["KW"] - 1) * w_sw >= 1 << 31:
        return "filter offsets past 32 bits"
    segments = tz_segments(spec)
    if (segments + 2) * TZ_SEGMENT >= 1 << 31:
        return "flat pixel indices past 32 bits"
    if _cdiv(segments, 2) * (d["M"] // 32) >= 1 << 31:
        return "over 2^31 - 1 CTAs (one grid dimension)"
    if tz_shared_bytes(spec, 2) > TZ_SHARED:
        return "the band of 2 segments exceeds its shared memory"
    return None


def tz_launches(spec, hw) -> list[tuple[int, int, int, int, int]]:
    """The (SPT, NWG, RS, AL, DN) launches offered to the autotuner: per TZ_GRIDS entry, the
    fewest segments per CTA that give at most that many CTAs per SM (and one segment per
    warpgroup), distinct and within shared memory; for plane outputs whose line the alignment
    changes, the entries with A from registers once more with the aligned line (AL = 1); and
    those entries once more with dense segments (DN = 1)."""
    out = []
    kinds = ((0, 0), (1, 0), (0, 1)) if tz_line(spec, 1) != tz_line(spec) else ((0, 0), (0, 1))
    for al, dn in kinds:
        segments = tz_segments(spec, al, dn)
        tiles = segments * (spec.dims["M"] // 32)
        for per_sm, nwg, rs in TZ_GRIDS:
            if (al or dn) and not rs:
                continue
            spt = max(nwg, _cdiv(tiles, per_sm * hw.sm_count))
            spt = min(spt, max(nwg, segments))
            if ((spt, nwg, rs, al, dn) not in out
                    and tz_shared_bytes(spec, spt, rs, al, dn) <= TZ_SHARED):
                out.append((spt, nwg, rs, al, dn))
    return out


def is_tz(attrs) -> bool:
    """Whether plan attributes name the wgmma kernel (S11)."""
    a = tuple(attrs)[-7:]
    return len(a) == 7 and a[0] == TZ_DIVISION


def is_mma(attrs) -> bool:
    """Whether plan attributes name the tensor-core kernel (S9)."""
    a = tuple(attrs)[-7:]
    return len(a) == 7 and a[0] == MMA_DIVISION


def _r8(x: int) -> int:
    return min(MB_MAX, max(TM, _cdiv(x, TM) * TM))


def kernel_regs(KH: int, KW: int) -> int:
    return KERNEL_REGS.get((KH, KW), KERNEL_REGS["generic"])


def shared_line(cb: int, KW: int) -> int:
    """SW: floats per input line in shared memory for a column tile of cb outputs."""
    return _cdiv(cb + KW - 1 + NV_EXTRA, 4) * 4


def column_tile(RB: int, KH: int, KW: int, OW: int) -> int:
    """CB, the kernel's column tile for RB rows (cuda/single_channel.cu cb_for)."""
    rows_in = RB + KH - 1
    if rows_in * shared_line(OW, KW) <= IN_BUDGET:
        return OW
    cb = IN_BUDGET // rows_in - KW - 1 - NV_EXTRA
    cb = max(128, cb // TP * TP)
    return min(cb, OW)


def patch_fits(RB: int, KH: int, KW: int, OW: int) -> bool:
    cb = column_tile(RB, KH, KW, OW)
    return (RB + KH - 1) * shared_line(cb, KW) <= IN_BUDGET


def shared_bytes(RB: int, MB: int, KH: int, KW: int, OW: int, prefetch: int) -> int:
    cb = column_tile(RB, KH, KW, OW)
    return (2 if prefetch else 1) * 4 * ((RB + KH - 1) * shared_line(cb, KW) + KH * KW * MB)


def register_tile(spec, MB: int) -> tuple[int, int]:
    """(filters, output columns) per thread of the FFMA kernel's work items on this layer with
    tiles of MB filters (pick_tm / pick_tp in cuda/single_channel.cu): where the output's
    filters are its fastest axis (the kernel's NHWC-like store order), 4 filters on 5x5 layers,
    with 8 columns on maps of >= 2^15 pixels or tiles of >= 64 filters, and on 3x3 layers of
    under 2^24 outputs; else 8 x 4."""
    d = spec.dims
    _, yc, _, yw = spec.out_strides
    if yc != 1 or (yw == 1 and d["OW"] >= 4):   # the kernel's LAYOUT 0 (or scalar stores)
        return TM, TP
    if (d["KH"], d["KW"]) == (5, 5):
        return 4, (8 if d["OH"] * d["OW"] >= (1 << 15) or MB >= 64 else TP)
    if (d["KH"], d["KW"]) == (3, 3) and d["N"] * d["OH"] * d["OW"] * d["M"] < (1 << 24):
        return 4, TP
    return TM, TP


def tile_items(RB: int, MB: int, CB: int, tm: int, tp: int) -> int:
    """Work items of a tile of RB rows x CB columns x MB filters, tm filters x tp columns each."""
    return RB * _cdiv(CB, tp) * (MB // tm)


def _threads_for(RB: int, MB: int, CB: int, tm: int, tp: int) -> int:
    """One thread per work item of a tile (tm filters x tp columns each), 64 to 256."""
    return max(T_MIN, min(T_MAX, _cdiv(tile_items(RB, MB, CB, tm, tp), 32) * 32))


def launch_of(spec, plan) -> dict:
    """The launch the kernel runs for `plan` (mirrors resolve_exact in the .cu file)."""
    d = spec.dims
    _, division, P, Q, MB, RB, prefetch, T = plan.kernel_attrs
    N, M, KH, KW, OH, OW = d["N"], d["M"], d["KH"], d["KW"], d["OH"], d["OW"]
    if division == 3:   # pointwise: no tiles and no shared memory; one box per image
        return dict(division=3, RB=OH, CB=OW, MB=M, prefetch=0, threads=T, tiles=N, SW=0,
                    shared=0, grid_per_sm=BLOCKS_PER_SM)
    if division == 4:   # strided: a box per image and slab of filters, the slab's weights shared
        MB = strided_filters(M, KH, KW, d["C"])
        return dict(division=4, RB=OH, CB=OW, MB=MB, prefetch=0, threads=T,
                    tiles=N * _cdiv(M, MB), SW=0, shared=4 * d["C"] * KH * KW * MB,
                    grid_per_sm=BLOCKS_PER_SM)
    if division == MMA_DIVISION:   # tensor cores: whole rows, both band buffers in shared memory
        return dict(division=MMA_DIVISION, RB=RB, CB=OW, MB=MB, prefetch=1, threads=T,
                    tiles=N * _cdiv(OH, RB) * _cdiv(M, MB), SW=_mma_line(spec),
                    shared=2 * (RB + KH - 1) * _mma_line(spec) * 4, grid_per_sm=BLOCKS_PER_SM)
    if division == TZ_DIVISION:   # flat or dense segments (boxes: image x 32 filters)
        _, rs, al, dn = tz_flags(prefetch)
        return dict(division=TZ_DIVISION, RB=OH, CB=OW, MB=32, prefetch=prefetch, threads=T,
                    tiles=_cdiv(tz_segments(spec, al, dn), RB) * (M // 32),
                    SW=tz_line(spec, al), shared=tz_shared_bytes(spec, RB, rs, al, dn),
                    grid_per_sm=0)
    CB = column_tile(RB, KH, KW, OW)
    tiles = N * _cdiv(OH, RB) * _cdiv(OW, CB) * _cdiv(M, MB)
    f45 = bool(prefetch & F45_FLAG)
    return dict(division=division, RB=RB, CB=CB, MB=MB, prefetch=prefetch & 1, threads=T,
                tiles=tiles, SW=shared_line(CB, KW), f45=f45,
                shared=(f45_shared_bytes(RB, MB, KH, KW, OW) if f45
                        else shared_bytes(RB, MB, KH, KW, OW, prefetch)),
                grid_per_sm=BLOCKS_PER_SM)


def tile_ranges(spec, plan) -> dict:
    """Per-axis ranges of the kernel's tiles (n, m, oh, ow): the tiles are their product."""
    d = spec.dims
    L = launch_of(spec, plan)

    def split(extent, size):
        return tuple((lo, min(lo + size, extent)) for lo in range(0, extent, size))
    return {"n": split(d["N"], 1), "m": split(d["M"], L["MB"]), "oh": split(d["OH"], L["RB"]),
            "ow": split(d["OW"], L["CB"]), "c": ((0, d["C"]),)}


def valid_attrs(spec, attrs, hw) -> list[str]:
    """Why `attrs` is outside what the kernel runs exactly (empty: valid)."""
    d = spec.dims
    _, division, P, Q, MB, RB, prefetch, T = attrs
    if division == 3:
        return [] if is_pointwise(attrs) and d["KH"] == d["KW"] == 1 else ["pointwise"]
    if division == 4:
        return [] if is_strided(attrs) and strided_supported(spec) is None else ["strided"]
    if division == MMA_DIVISION:
        ok = (tuple(attrs[1:]) == mma_attrs(MB, RB) and mma_supported(spec, hw) is None
              and _mma_tile_fits(spec, MB, RB))
        return [] if ok else ["tensor-core tile"]
    if division == TZ_DIVISION:
        stagger, rs, al, dn = tz_flags(prefetch)
        ok = (T in (256, 384) and RB >= T // 128 and prefetch in range(16)
              and (not al or tz_planes(spec)) and (not dn or (rs and not al))
              and tuple(attrs[1:]) == tz_attrs(RB, T // 128, stagger, rs, al, dn)
              and tz_supported(spec, hw) is None
              and tz_shared_bytes(spec, RB, rs, al, dn) <= TZ_SHARED)
        return [] if ok else ["wgmma launch"]
    bad = []
    if division not in (1, 2):
        bad.append("division")
    if MB % TM or not TM <= MB <= MB_MAX:
        bad.append("MB")
    if not 1 <= RB <= min(d["OH"], RB_MAX):
        bad.append("RB")
    f45 = prefetch in (2, 3)
    if prefetch not in (0, 1) and not f45:
        bad.append("prefetch")
    if f45 and f45_supported(spec) is not None:
        bad.append("row-Winograd products")
    if T % 32 or not T_MIN <= T <= T_MAX:
        bad.append("threads")
    if division == 1 and (P != _cdiv(d["OH"], RB) or Q != 1):
        bad.append("P/Q")
    if division == 2 and (P != 1 or Q != _cdiv(d["M"], MB)):
        bad.append("P/Q")
    if not bad:
        if not patch_fits(RB, d["KH"], d["KW"], d["OW"]):
            bad.append("input buffer")
        shared = (f45_shared_bytes(RB, MB, d["KH"], d["KW"], d["OW"]) if f45
                  else shared_bytes(RB, MB, d["KH"], d["KW"], d["OW"], prefetch))
        if shared > hw.shared_per_block_optin:
            bad.append("shared")
    return bad


# ---------------------------------------------------------------- section 3.1 on this kernel
def _per_block(hw):
    S_sh = min(hw.shared_per_block_optin, hw.shared_per_sm // BLOCKS_PER_SM - _reserved_shared(hw))
    T_cap = min(T_MAX, hw.max_threads_per_block, hw.max_threads_per_sm // BLOCKS_PER_SM)
    reg_budget = min(hw.max_regs_per_thread, hw.regs_per_sm // (BLOCKS_PER_SM * T_cap) // 8 * 8)
    return S_sh, T_cap, reg_budget


def _smallest(lo, hi, ok):
    for x in range(lo, hi + 1):
        if ok(x):
            return x
    return None


def _largest(lo, hi, ok):
    for x in range(hi, lo - 1, -1):
        if ok(x):
            return x
    return None


def single_channel_plan(spec, hw, lat, pointwise: bool = True):
    """The plan (S1-S6); `pointwise=False` gives the staged plan a 1x1 layer would have
    without S6 (the measured alternative to a pointwise plan)."""
    from .planner import Plan, METHOD_IDS, _direct   # lazy: planner imports this module

    d = spec.dims
    N, M, KH, KW, OH, OW = d["N"], d["M"], d["KH"], d["KW"], d["OH"], d["OW"]
    KK = KH * KW
    b = BLOCKS_PER_SM
    B = b * hw.sm_count
    n_fma_b = _cdiv(lat["N_FMA"], b)
    S_sh, T_cap, budget = _per_block(hw)
    regs = kernel_regs(KH, KW)
    common = (("blocks_per_SM", b), ("N_block", B), ("N_FMA_block", n_fma_b),
              ("S_shared", S_sh), ("reg_budget", budget), ("regs_per_thread", regs))
    if regs > budget or T_cap < T_MIN:
        return _direct(hw, f"single channel: the kernel needs {regs} registers per thread "
                           f"(ptxas) at >= {T_MIN} threads x {b} blocks/SM; the SM allows "
                           f"{budget}", lat, common)
    if not patch_fits(1, KH, KW, OW) or shared_bytes(1, TM, KH, KW, OW, 0) > S_sh:
        return _direct(hw, f"single channel: one output row of a {KH}x{KW} filter does not fit "
                           f"the kernel's 48 KB input buffer or S_shared = {S_sh} B", lat,
                       common)

    def D(RB, MB):        # bytes of one buffer set (S2)
        return shared_bytes(RB, MB, KH, KW, OW, 0)

    def Th(RB, MB):       # FMAs of one piece (S2)
        return KK * MB * RB * column_tile(RB, KH, KW, OW)

    def ok_rows(RB):
        return 1 <= RB <= min(OH, RB_MAX) and patch_fits(RB, KH, KW, OW)

    # ---- division 1: filters across blocks, each image's rows in P pieces (eqs. 5, 6)
    MB1 = _r8(_cdiv(M, B))
    def rows1(P): return _cdiv(OH, P)
    def fits1(P, pf): return ok_rows(rows1(P)) and (2 if pf else 1) * D(rows1(P), MB1) <= S_sh
    P_hi = _largest(1, OH, lambda P: Th(rows1(P), MB1) >= n_fma_b)
    P_lo = _smallest(1, OH, lambda P: fits1(P, 1))
    if P_lo is not None and P_hi is not None and P_lo <= P_hi:
        P1, mode1 = P_lo, "prefetch"
    else:
        P1, mode1 = _smallest(1, OH, lambda P: fits1(P, 0)), "volume"
    # ---- division 2: rows across blocks, the filters in Q pieces (eqs. 7, 8)
    RB2 = min(_cdiv(N * OH, B), OH, RB_MAX)
    while RB2 > 1 and column_tile(RB2, KH, KW, OW) < OW:   # whole lines (the paper's W_x)
        RB2 -= 1
    def mb2(Q): return _r8(_cdiv(M, Q))
    def fits2(Q, pf):
        return _cdiv(M, Q) <= MB_MAX and (2 if pf else 1) * D(RB2, mb2(Q)) <= S_sh
    Q_hi = _largest(1, M, lambda Q: Th(RB2, mb2(Q)) >= n_fma_b)
    Q_lo = _smallest(1, M, lambda Q: fits2(Q, 1))
    if Q_lo is not None and Q_hi is not None and Q_lo <= Q_hi:
        Q2, mode2 = Q_lo, "prefetch"
    else:
        Q2, mode2 = _smallest(1, M, lambda Q: fits2(Q, 0)), "volume"

    cands = []
    if P1 is not None:
        RB = rows1(P1)
        P1 = _cdiv(OH, RB)                    # no empty piece
        tiles = N * P1 * _cdiv(OW, column_tile(RB, KH, KW, OW)) * _cdiv(M, MB1)
        cands.append(dict(division=1, P=P1, Q=1, MB=MB1, RB=RB, mode=mode1, D=D(RB, MB1),
                          Th=Th(RB, MB1), tiles=tiles))
    if Q2 is not None:
        MB = mb2(Q2)
        Q2 = _cdiv(M, MB)
        tiles = N * _cdiv(OH, RB2) * _cdiv(OW, column_tile(RB2, KH, KW, OW)) * Q2
        cands.append(dict(division=2, P=1, Q=Q2, MB=MB, RB=RB2, mode=mode2, D=D(RB2, MB),
                          Th=Th(RB2, MB), tiles=tiles))
    for c in cands:
        c["inflight"] = min(B, c["tiles"]) * c["D"]
    if not cands:
        return _direct(hw, f"single channel: no division fits S_shared = {S_sh} B", lat, common)

    pref = [c for c in cands if c["mode"] == "prefetch"]
    if pref:
        pool = pref
        why = (f"Th{'/'.join(str(c['division']) for c in pool)} >= N_FMA/block = {n_fma_b} "
               f"with two pieces in shared memory: prefetch (sec 2.2 method 1)")
    else:
        vs_ok = [c for c in cands if c["inflight"] >= lat["V_s"]]
        pool = vs_ok or cands
        why = (f"Th < N_FMA/block = {n_fma_b} for every division: volume method, "
               f"{'>= V_s' if vs_ok else 'below V_s'} = {lat['V_s']} B in flight "
               f"(sec 2.2 method 2)")
    best = min(pool, key=lambda c: (c["D"], c["division"]))
    others = [c for c in cands if c is not best]
    if others:
        o = others[0]
        why += (f"; division {best['division']} (D{best['division']} = {best['D']} B) over "
                f"division {o['division']} (D{o['division']} = {o['D']} B)"
                + (": the smaller D (sec 3.1 step 4)" if o in pool else
                   f" ({o['mode']} only)"))
    paper = best
    final = dict(paper)
    rule = "paper"
    if hw.compute_capability >= (9, 0):
        final, hwhy = _hopper_rule(N, M, KH, KW, OH, OW, hw, S_sh, D, Th, B)
        why += "; " + hwhy
        rule = "measured (Hopper)"
    CB = column_tile(final["RB"], KH, KW, OW)
    tm, tp = register_tile(spec, final["MB"])
    T = min(T_cap, _threads_for(final["RB"], final["MB"], CB, tm, tp))
    prefetch = 1 if final["mode"] == "prefetch" else 0
    if final["division"] == 1:
        P, Q = _cdiv(OH, final["RB"]), 1
    else:
        P, Q = 1, _cdiv(M, final["MB"])
    tiles = N * _cdiv(OH, final["RB"]) * _cdiv(OW, CB) * _cdiv(M, final["MB"])
    shared = shared_bytes(final["RB"], final["MB"], KH, KW, OW, prefetch)
    blocks = min(tiles, B) if prefetch else tiles
    by = {c["division"]: c for c in cands}
    c1, c2 = by.get(1), by.get(2)
    q = list(lat.items()) + list(common) + [
        ("threads_per_block", T),
        ("register_tile", f"{tm} filters x {tp} columns per thread"),
        ("P_lower", P_lo if P_lo is not None else "none"),
        ("P_upper", P_hi if P_hi is not None else "none"),
        ("Q_lower", Q_lo if Q_lo is not None else "none"),
        ("Q_upper", Q_hi if Q_hi is not None else "none"),
        ("D1", c1["D"] if c1 else "infeasible"), ("Th1", c1["Th"] if c1 else "infeasible"),
        ("D2", c2["D"] if c2 else "infeasible"), ("Th2", c2["Th"] if c2 else "infeasible"),
        ("paper_choice", f"division {paper['division']}, P={paper['P']}, Q={paper['Q']}, "
                         f"MB={paper['MB']}, RB={paper['RB']}, {paper['mode']}"),
        ("rule", rule),
        ("division", final["division"]), ("mode", final["mode"]), ("P", P), ("Q", Q),
        ("filters_per_block", final["MB"]), ("rows_per_block", final["RB"]),
        ("filters_per_piece", final["MB"]), ("rows_per_piece", final["RB"]),
        ("column_tile", CB), ("tiles", tiles), ("blocks_used", blocks),
        ("Th", Th(final["RB"], final["MB"])),
        ("bytes_in_flight", min(B, tiles) * D(final["RB"], final["MB"])),
        ("shared_bytes_per_block", shared)]
    attrs = (METHOD_IDS["single_channel"], final["division"], P, Q, final["MB"], final["RB"],
             prefetch, T)
    plan = Plan("single_channel", f"C == 1, stride 1 (sec 3.1): {why}", hw.name, tuple(q),
                tuple(int(a) for a in attrs))
    if pointwise and _pointwise_planned(spec, hw):
        plan = _with_attrs(spec, plan, (plan.kernel_attrs[0],) + POINTWISE_ATTRS,
                           f"a 1x1 layer of under {POINTWISE_MAX_OUT} outputs runs the "
                           f"pointwise kernel instead (S6: no staging, every output one product, "
                           f"streamed out)",
                           rule="measured (Hopper, 1x1: pointwise)")
    return plan


def strided_plan(spec, hw, lat):
    """S7: the strided kernel's plan for a C = 1 layer with a stride > 1, and S8: for a layer
    of 1 < C < 8 channels, any stride (the direct plan, which runs lax, where the kernel does
    not cover the layer)."""
    from .planner import Plan, METHOD_IDS, _direct   # lazy: planner imports this module

    d = spec.dims
    stride = tuple(spec.window_strides)
    N, C, M, KH, KW, OH, OW = d["N"], d["C"], d["M"], d["KH"], d["KW"], d["OH"], d["OW"]
    why_not = strided_supported(spec)
    if why_not is None and C > 1 and not few_channel_instance(spec):
        why_not = (f"a {KH}x{KW} kernel at stride {stride} has no compiled instance of the "
                   f"strided kernel for C > 1 (its generic one measured 0.31-0.58x lax HIGHEST "
                   f"on ViT-B/16's 16x16/16 patchify stem, H100); compiled: "
                   + ", ".join(f"{k}x{k}/{st}" for k, st in FEW_CHANNEL_INSTANCES))
    if why_not is None and C == 1 and generic_patchify(spec):
        why_not = (f"a {KH}x{KW} patchify layer (stride = kernel size) would run the strided "
                   f"kernel's generic instance, which measured 2.1-3.8x the time of the patch "
                   f"GEMM on 7x7/7 to 16x16/16 layers (b1 NHWC, H100)")
    if why_not is not None:
        return _direct(hw, f"C = {C}, stride {stride}: {why_not}", lat)
    MB = strided_filters(M, KH, KW, C)
    TM = strided_filters_per_thread(spec, MB, hw.sm_count)
    items = strided_items(spec, MB, TM)
    # The two floors of the layer on this hardware (the bench's roofline, from the model's
    # numbers): its minimal bytes at the bandwidth, its FMAs at one per FP32 core per clock.
    byte_floor_us = 1e6 * spec.min_bytes / hw.bandwidth_bytes_per_s
    fma_floor_us = 1e6 * spec.flops / 2 / (hw.sm_count * hw.cores_per_sm
                                           * hw.fma_per_core_per_clock * hw.clock_hz)
    q = list(lat.items()) + [
        ("rule", "strided (S7)" if C == 1 else "few channels (S8)"), ("division", 4),
        ("mode", "strided"),
        ("filters_per_block", MB), ("filter_slabs", _cdiv(M, MB)), ("threads_per_block", 256),
        ("shared_bytes_per_block", 4 * C * KH * KW * MB),
        ("filters_per_thread", TM), ("work_items", items * _cdiv(M, MB)),
        ("FMA_per_item", C * KH * KW * TM * 4),
        ("byte_floor_us", round(byte_floor_us, 2)), ("FMA_floor_us", round(fma_floor_us, 2))]
    attrs = (METHOD_IDS["single_channel"],) + STRIDED_ATTRS
    if C == 1:
        what = f"C == 1, stride {stride} (S7, beyond sec 3.1's stride 1)"
    else:
        what = (f"C = {C} < 8, stride {stride} (S8, beyond the paper: the multi-channel "
                f"kernel's 32 B segments along C would be mostly padding, so sec 3.1's "
                f"computation runs per channel, summed in registers)")
    why = (f"{what}: the strided kernel: slabs of MB = {MB} filters with their "
           f"{C}x{KH}x{KW} weights in shared memory ({4 * C * KH * KW * MB} B), each thread "
           f"{TM} filters x 4 output columns of a row from a window read through L1; "
           + (f"bound by its {C * KH * KW} FMAs per output ({fma_floor_us:.3g} us here, the "
              f"bytes {byte_floor_us:.3g} us)" if fma_floor_us > byte_floor_us else
              f"bound by its {spec.min_bytes} B of traffic, the output's "
              f"{4 * N * M * OH * OW} B of stores the most ({byte_floor_us:.3g} us here, the "
              f"FMAs {fma_floor_us:.3g} us)"))
    return Plan("single_channel", why, hw.name, tuple(q), attrs)


def _pointwise_layer(spec, hw) -> bool:
    """A 1x1 layer on Hopper: the pointwise kernel runs it (S6), planned below
    POINTWISE_MAX_OUT outputs (_pointwise_planned), measured beside the staged plan above."""
    return hw.compute_capability >= (9, 0) and spec.dims["KH"] == spec.dims["KW"] == 1


def _pointwise_planned(spec, hw) -> bool:
    d = spec.dims
    return _pointwise_layer(spec, hw) and d["N"] * d["M"] * d["OH"] * d["OW"] < POINTWISE_MAX_OUT


def _hopper_rule(N, M, KH, KW, OH, OW, hw, S_sh, D, Th, B):
    """S5: the measured rule on Hopper (H200 run of 2026-11-21, 72 paper-single cases x up to
    100 valid plans each, benchmarks/notes/single_channel.md). Volume method, division 2;
    MB = M rounded to 8, at most HOPPER_MB_MAX = 32; RB = the most rows in {16, 8, 4, 2, 1}
    with at most HOPPER_ITEMS work items (8 filters x 4 columns each) per tile and at least
    HOPPER_MIN_TILES = N_sm / 2 tiles; 1 when none has. Over the 72 cases this rule was
    within 5 % (geometric mean) of the best measured plan per case; the paper's choice
    (prefetch, large pieces) and the earlier ">= 3 tiles per SM" rule were slower."""
    MB = _r8(min(M, HOPPER_MB_MAX))
    min_tiles = _cdiv(hw.sm_count, 2)

    def tiles(RB):
        return N * _cdiv(OH, RB) * _cdiv(OW, column_tile(RB, KH, KW, OW)) * _cdiv(M, MB)

    def items(RB):   # in the planned 8 x 4 unit, as HOPPER_ITEMS was measured
        return tile_items(RB, MB, column_tile(RB, KH, KW, OW), TM, TP)

    RB = 1
    for r in (16, 8, 4, 2):
        if (r <= OH and patch_fits(r, KH, KW, OW) and D(r, MB) <= S_sh
                and items(r) <= HOPPER_ITEMS and tiles(r) >= min_tiles):
            RB = r
            break
    t = tiles(RB)
    why = (f"on Hopper the measured rule replaces it (S5): volume method, division 2, "
           f"MB = {MB}, RB = {RB}: {items(RB)} work items per tile (<= {HOPPER_ITEMS}), "
           f"{t} tiles (>= N_sm / 2 = {min_tiles} where the shape has them); on the H200 this "
           f"beat the persistent prefetch sweep and the paper's larger pieces")
    return dict(division=2, MB=MB, RB=RB, mode="volume", P=1, Q=_cdiv(M, MB)), why


# ---------------------------------------------------------------- measured alternatives
# Plan variants that beat the planned launch on some paper layers in the H200 sweeps
# (benchmarks/notes/single_channel.md, rounds 5, 6, 9 and 10) and that no rule separates from
# it: the autotuner (autotune.choose_plan) times them beside the planned plan on the device
# (about 11 ms of device time per candidate at the first trace of a shape).
VARIANTS = (
    # (division, MB or None = the plan's, RB or None = the plan's or "bands" (band_rows),
    #  prefetch, threads, why)
    (2, None, 4, 0, 128, "RB 4, 128 threads"),                    # large maps (b1 1024^2)
    (1, 64, None, 1, 256, "division 1, prefetch, MB 64"),          # NHWC small maps (b32 28^2)
    (2, 128, 8, 0, 128, "MB 128, RB 8, 128 threads"),              # NCHW small maps (b32 28^2)
    # round 10 (level-2 sweep of the 16 missed cases at 2a5571b, driver, H200):
    (2, None, 4, 0, 256, "RB 4"),                                  # b1 1024^2 K5 NHWC 0.940x
    (1, 32, 16, 1, 256, "division 1, prefetch, MB 32, RB 16"),     # b32 56^2 K5 NHWC 0.884x
    (2, 16, 16, 0, 128, "MB 16, RB 16, 128 threads"),              # b32 56^2 K3 NCHW 0.953x
    # round 11: whole-map row bands (RB "bands" = band_rows(OH): the map's rows in equal bands
    # of <= RB_MAX, one band per map up to 64 rows) on batch-32 small maps, 0.85-0.98x the best of the above
    # (driver grid of 560 launches over 10 missed layers, H200; b32 28^2 K3 NCHW 0.850x):
    (2, 32, "bands", 0, 256, "whole-map bands, MB 32"),            # b32 56^2 K5 NHWC 0.932x
    (2, 64, "bands", 0, 256, "whole-map bands, MB 64"),            # b32 56^2 K5 NCHW 0.861x
    (2, 128, "bands", 0, 256, "whole-map bands, MB 128"),          # b32 28^2 K3 NCHW 0.850x
)


def band_rows(OH: int) -> int:
    """Rows per tile when a map's OH output rows are cut into the fewest equal bands of at most
    RB_MAX rows (a whole map up to RB_MAX rows): no half-empty last band."""
    return _cdiv(OH, _cdiv(OH, RB_MAX))


def _with_attrs(spec, plan, attrs, why, rule=None):
    """`plan` re-described for another launch of the single-channel kernels (the quantities
    explain() shows follow the new launch): a measured variant, or with `rule` a planned
    launch for the reason `why`."""
    import dataclasses
    said = f"; {why}" if rule else f"; measured on this device: {why}"
    variant = dataclasses.replace(plan, kernel_attrs=tuple(int(a) for a in attrs),
                                  reason=plan.reason + said)
    L = launch_of(spec, variant)
    _, _, P, Q, MB, RB, _, T = variant.kernel_attrs
    mode = ({3: "pointwise", 4: "strided", MMA_DIVISION: "tensor cores (3xTF32)",
             TZ_DIVISION: "wgmma over a Toeplitz band (3xTF32)"}.get(L["division"])
            or ("prefetch" if L["prefetch"] else "volume"))
    if L.get("f45"):
        mode += ", row-Winograd F(4, 5) products"
    if L["division"] == TZ_DIVISION:
        mode += tz_mode(L["prefetch"])
    new = {"division": L["division"], "mode": mode,
           "P": P, "Q": Q, "filters_per_block": MB, "rows_per_block": RB,
           "filters_per_piece": MB, "rows_per_piece": RB, "threads_per_block": T,
           "column_tile": L["CB"], "tiles": L["tiles"], "shared_bytes_per_block": L["shared"],
           "rule": rule or f"measured variant ({why})"}
    if L["division"] == MMA_DIVISION:   # a persistent grid; products per tile, one band in flight
        d = spec.dims
        blocks = min(L["tiles"], BLOCKS_PER_SM * dict(plan.quantities)["N_sm"])
        new.update(Th=d["KH"] * d["KW"] * MB * RB * d["OW"], blocks_used=blocks,
                   bytes_in_flight=4 * (RB + d["KH"] - 1) * L["SW"] * blocks)
    if L["division"] == TZ_DIVISION:   # one CTA per SPT segments and 32-filter block
        d = spec.dims
        new.update(Th=d["KH"] * d["KW"] * 32 * RB * TZ_SEGMENT, blocks_used=L["tiles"],
                   bytes_in_flight=L["shared"] * L["tiles"], filters_per_block=32,
                   filters_per_piece=32, rows_per_block=L["RB"], rows_per_piece=L["RB"],
                   column_tile=L["CB"])
    if L["division"] == 3:   # no tiles: a grid of 256-thread blocks over the work items
        new.update(Th=spec.dims["M"] * spec.dims["OH"] * spec.dims["OW"], bytes_in_flight=0,
                   blocks_used="ceil(items / (256 x 1-4 items per thread)), at run time")
    return dataclasses.replace(variant, quantities=tuple((k, new.get(k, v))
                                                         for k, v in plan.quantities))


def candidate_plans(spec, hw, plan) -> list:
    """The planned single-channel plan first, then the valid, distinct VARIANTS of it; after a
    pointwise plan (S6), the staged plan the layer would have without S6, then its variants."""
    if plan.method != "single_channel" or is_strided(plan.kernel_attrs):
        return [plan]
    d = spec.dims
    OH, M = d["OH"], d["M"]
    out = [plan]
    if is_pointwise(plan.kernel_attrs):
        from .planner import latency_model
        staged = single_channel_plan(spec, hw, latency_model(hw), pointwise=False)
        if staged.method != "single_channel":
            return out
        out.append(_with_attrs(spec, staged, staged.kernel_attrs, "the staged kernel (S1-S5)"))
        return out + candidate_plans(spec, hw, staged)[1:]
    _, _, _, _, MB0, RB0, _, _ = plan.kernel_attrs
    if _pointwise_layer(spec, hw) and not _pointwise_planned(spec, hw):   # S6: measured above
        out.append(_with_attrs(spec, plan, (plan.kernel_attrs[0],) + POINTWISE_ATTRS,
                               "the pointwise kernel (S6)"))
    if mma_supported(spec, hw) is None:   # S9: the tensor-core kernel's best tiles
        for MB, RB in mma_tiles(spec, hw):
            out.append(_with_attrs(spec, plan, (plan.kernel_attrs[0],) + mma_attrs(MB, RB),
                                   f"tensor cores (3xTF32), MB {MB}, RB {RB}"))

    if tz_supported(spec, hw) is None:   # S11: the wgmma kernel's launches
        for SPT, NWG, RS, AL, DN in tz_launches(spec, hw):   # staggered: 0.97-1.0x together
            attrs = tz_attrs(SPT, NWG, 1, RS, AL, DN)
            out.append(_with_attrs(spec, plan, (plan.kernel_attrs[0],) + attrs,
                                   f"wgmma over a Toeplitz band (3xTF32), {SPT} segments per "
                                   f"CTA, {NWG} warpgroups, staggered start" + tz_mode(attrs[5])))

    def tile(division, mb, rb, prefetch, T):
        """A division 1 / 2 tile: MB from mb (None: the plan's), rounded to the register tile
        and at most the layer's filters; RB from rb (None: the plan's; "bands": band_rows)."""
        MB = _r8(min(mb if mb is not None else MB0, max(TM, M)))
        RB = band_rows(OH) if rb == "bands" else max(1, min(rb if rb is not None else RB0, OH,
                                                             RB_MAX))
        P, Q = (_cdiv(OH, RB), 1) if division == 1 else (1, _cdiv(M, MB))
        return (plan.kernel_attrs[0], division, P, Q, MB, RB, prefetch, T)

    def offer(attrs, why):   # valid and not offered yet
        if not any(p.kernel_attrs == attrs for p in out) and not valid_attrs(spec, attrs, hw):
            out.append(_with_attrs(spec, plan, attrs, why))

    if f45_supported(spec) is None:    # S10: the planned tile and F45_TILES, row-Winograd
        for division, mb, rb, prefetch in ((plan.kernel_attrs[1], None, None,
                                            plan.kernel_attrs[6]),) + F45_TILES:
            if division in (1, 2):
                a = tile(division, mb, rb, prefetch | F45_FLAG, 256)
                offer(a, f"row-Winograd F(4, 5) products, division {division}, MB {a[4]}, "
                         f"RB {a[5]}, {'prefetch' if prefetch else 'volume'}")
    for division, mb, rb, prefetch, T, why in VARIANTS:
        offer(tile(division, mb, rb, prefetch, T), why)
    return out


def plan_for(spec, hw, lat=None):
    """This module's plan for a spec of C < 8 channels (make_plan's answer for it): the strided
    kernel's where a stride is > 1 (S7) or C > 1 (S8), else section 3.1's. `lat`:
    planner.latency_model(hw)."""
    from .planner import latency_model
    lat = latency_model(hw) if lat is None else lat
    if tuple(spec.window_strides) != (1, 1) or spec.dims["C"] > 1:
        return strided_plan(spec, hw, lat)
    return single_channel_plan(spec, hw, lat)


# ---------------------------------------------------------------- export for the driver
PAPER_SINGLE = ((28, 512), (56, 256), (112, 128), (224, 64), (512, 32), (1024, 32))


def _export(path: str, hardware: str, n_random: int, seed: int) -> int:
    from .hardware import resolve_hardware
    from .spec import spec_from_logical
    hw = resolve_hardware(hardware)
    rng = random.Random(seed)
    lines = ["# name N H W M KH KW pt pb pl pr ylay(0 NCHW,1 NHWC) a1..a7 (plan attrs) "
             f"-- plans of jax_fastconv.plan_single_channel for {hw.name}"]

    def emit(name, N, H, W, M, KH, KW, pt, pb, pl, pr, lay):
        spec = spec_from_logical(N, 1, H, W, M, KH, KW, padding=((pt, pb), (pl, pr)),
                                 layout="NHWC" if lay else "NCHW")
        plan = plan_for(spec, hw)
        if plan.method != "single_channel":
            return
        a = plan.kernel_attrs
        lines.append(" ".join(str(v) for v in (name, N, H, W, M, KH, KW, pt, pb, pl, pr, lay)
                              + tuple(a[1:])))

    for N in (1, 32):
        for lay in (1, 0):
            for H, M in PAPER_SINGLE:
                for K in (1, 3, 5):
                    emit(f"paper_{'NHWC' if lay else 'NCHW'}_N{N}_{H}_M{M}_K{K}", N, H, H, M,
                         K, K, 0, 0, 0, 0, lay)
    for i in range(n_random):
        KH, KW = rng.choice([(1, 1), (3, 3), (5, 5), (7, 7), (1, 7), (7, 1), (5, 3), (2, 2),
                             (4, 6), (rng.randint(1, 9), rng.randint(1, 9))])
        kind = rng.randrange(10)
        if kind < 6:
            H, W = rng.randint(1, 80), rng.randint(1, 80)
        elif kind < 8:
            H, W = rng.randint(30, 300), rng.randint(30, 300)
        elif kind == 8:
            H, W = rng.randint(1, 12), rng.randint(1200, 4000)
        else:
            H, W = rng.randint(200, 700), rng.randint(1, 9)
        M = rng.randint(65, 300) if rng.randrange(4) == 0 else rng.randint(1, 64)
        N = rng.choice([1, 2, 3, 4, 7, 16, 32, 64])
        if N * H * W * M > 4_000_000:
            N = 1
        pads = [rng.randint(-1, 4) if rng.randrange(3) else 0 for _ in range(4)]
        pt, pb, pl, pr = pads
        if H + pt + pb - KH + 1 < 1:
            pb += KH
        if W + pl + pr - KW + 1 < 1:
            pr += KW
        if H + pt + pb - KH + 1 < 1 or W + pl + pr - KW + 1 < 1:
            continue
        emit(f"rand{i}", N, H, W, M, KH, KW, pt, pb, pl, pr, rng.randrange(2))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines) - 1} planned cases for {hw.name} to {path}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--export", required=True, help="plans file for the CUDA driver")
    ap.add_argument("--hardware", default="h200")
    ap.add_argument("--random", type=int, default=140)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)
    return _export(a.export, a.hardware, a.random, a.seed)


if __name__ == "__main__":
    sys.exit(main())
