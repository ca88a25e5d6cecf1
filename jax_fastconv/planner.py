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
7. Multi channel: S bytes = S/4 filter elements of the flattened (ch, ky, kx) sequence; one
   segment spans at most ceil((S/4 + KW - 1) / KW) filter rows, each needing one map line, so
   W'y counts that worst case (the paper's ceil(S / (4K)) assumes segments start on a row
   boundary). One stage is S x M' + 4 x W'y x (W'x + KW - 1) bytes (the paper adds W'x pixels
   to bytes, and omits the KW - 1 halo). The FMA requirement uses the pixels a tile really
   computes, min(W'x, OW): M' >= N_FMA x 4 / (S x min(W'x, OW)). W'x = the smallest multiple
   of 32 pixels (128 B) covering OW, at most 128 (the paper's best). S = 32 B first (larger
   M'), 64 B when 32 B cannot meet the requirement; a filter shorter than one segment
   (C x KH x KW < S / 4 elements) is one segment. One block of 256 threads per SM (the
   paper's M' = 64 at W'x = 128 matches N_FMA per SM, not per half SM).
8. Beyond the paper: when the output tiles N x OH x ceil(OW / W'x) x ceil(M / M') are fewer
   than N_sm, the channels are split (c_split > 1, the smallest split giving >= N_sm blocks);
   the partial sums need a reduction the paper rejected on Pascal (section 2.3).
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
SC_BLOCKS_PER_SM = 2     # section 4: N_block = 2 x N_sm
SC_THREADS = 512         # section 4: 512 threads per block
MC_BLOCKS_PER_SM = 1
MC_THREADS = 256
MC_WX_MAX = 128          # section 4: W'x = 128 was the best
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
    "division": "1: filters across blocks, 2: map rows across blocks (sec 3.1)",
    "mode": "prefetch (Th >= N_FMA) or volume (>= V_s in flight) (sec 2.2)",
    "filters_per_block": "filters a block applies",
    "rows_per_block": "output rows a block produces",
    "rows_per_piece": "output rows per piece",
    "filters_per_piece": "filters per piece",
    "blocks_used": "blocks launched (x N images)",
    "bytes_in_flight": "data of one round over all blocks (compare V_s)",
    "regs_per_thread": "estimated registers per thread",
    "shared_bytes_per_block": "shared memory a block holds",
    "S": "segment bytes along ch (sec 3.2)",
    "S_elems": "segment elements = S / 4",
    "W'x": "tile pixels along x, a multiple of 128 B (sec 3.2)",
    "W'y": "map lines one segment needs (sec 3.2)",
    "M'": "filters per block, smallest with M' >= N_FMA x 4 / (S x W'x) (sec 3.2)",
    "M'_lower": "N_FMA x 4 / (S x min(W'x, OW)), rounded up",
    "M'_upper": "largest M' the stage and the registers allow (<= M)",
    "Th_stage": "FMAs per block per stage = M' x S/4 x min(W'x, OW)",
    "stage_bytes": "one stage: S x M' + 4 x W'y x (W'x + KW - 1) <= S_shared / 2",
    "output_tiles": "N x OH x ceil(OW / W'x) x ceil(M / M')",
    "c_split": "channel split (beyond the paper; 1 = none)",
    "channels_per_split": "channels per split",
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


def _smallest(lo: int, hi: int, ok) -> int | None:
    """Smallest x in [lo, hi] with ok(x), ok monotone (False...True); None if none."""
    if lo > hi or not ok(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _largest(lo: int, hi: int, ok) -> int | None:
    """Largest x in [lo, hi] with ok(x), ok monotone (True...False); None if none."""
    if lo > hi or not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


# ------------------------------------------------------------------ section 3.1
def _sc_attempt(T, b, B, S_sh, n_fma_b, N, M, KH, KW, OH, OW, hw, lat) -> dict:
    """Section 3.1 steps 1-3 for one block size: bounds on P and Q, the smallest feasible."""
    KK = KH * KW
    Wx_in = OW + KW - 1
    budget = _reg_budget(hw, b, T)
    common = (("blocks_per_SM", b), ("N_block", B), ("N_FMA_block", n_fma_b),
              ("S_shared", S_sh), ("threads_per_block", T), ("reg_budget", budget))

    def staged(words: int, pieces: int) -> int:
        return REG_BASE + KK + (_cdiv(words, T) if pieces > 1 else 0)

    # division 1: filters across blocks, the map in P pieces of rows
    fpb1 = _cdiv(M, B)
    def D1(P): return ELEM_BYTES * (KK * fpb1 + (_cdiv(OH, P) + KH - 1) * Wx_in)
    def Th1(P): return KK * fpb1 * _cdiv(OH, P) * OW
    def R1(P): return staged((_cdiv(OH, P) + KH - 1) * Wx_in, P)
    def fits1(P): return D1(P) <= S_sh and R1(P) <= budget
    # division 2: map rows across blocks, the filters in Q pieces
    rows2 = _cdiv(OH, B)
    def D2(Q): return ELEM_BYTES * (KK * _cdiv(M, Q) + (rows2 + KH - 1) * Wx_in)
    def Th2(Q): return KK * _cdiv(M, Q) * rows2 * OW
    def R2(Q): return staged(KK * _cdiv(M, Q), Q)
    def fits2(Q): return D2(Q) <= S_sh and R2(Q) <= budget

    def solve(extent, fits, Th):
        # lower bound: D <= S_shared and registers (P = 1 stages nothing, so test it apart)
        lower = 1 if fits(1) else _smallest(2, extent, fits)
        upper = _largest(1, extent, lambda x: Th(x) >= n_fma_b)
        return lower, upper

    P_lo, P_hi = solve(OH, fits1, Th1)
    Q_lo, Q_hi = solve(M, fits2, Th2)

    cands = []
    if P_lo is not None:
        rows = _cdiv(OH, P_lo)
        P = _cdiv(OH, rows)
        blocks = _cdiv(M, fpb1)
        cands.append(dict(division=1, P=P, Q=1, D=D1(P), Th=Th1(P), regs=R1(P),
                          fpb=fpb1, rpb=OH, rows_per_piece=rows, filters_per_piece=fpb1,
                          blocks=blocks, inflight=min(B, blocks * N) * D1(P)))
    if Q_lo is not None:
        fpp = _cdiv(M, Q_lo)
        Q = _cdiv(M, fpp)
        blocks = _cdiv(OH, rows2)
        cands.append(dict(division=2, P=1, Q=Q, D=D2(Q), Th=Th2(Q), regs=R2(Q),
                          fpb=M, rpb=rows2, rows_per_piece=rows2, filters_per_piece=fpp,
                          blocks=blocks, inflight=min(B, blocks * N) * D2(Q)))

    q = list(lat.items()) + list(common) + [
        ("P_lower", P_lo if P_lo is not None else "none"),
        ("P_upper", P_hi if P_hi is not None else "none"),
        ("Q_lower", Q_lo if Q_lo is not None else "none"),
        ("Q_upper", Q_hi if Q_hi is not None else "none")]
    return dict(T=T, budget=budget, common=common, cands=cands, q=q,
                D1_min=D1(OH), D2_min=D2(M))


def _single_channel(spec: ConvSpec, hw: Hardware, lat: dict) -> Plan:
    d = spec.dims
    N, M, KH, KW, OH, OW = d["N"], d["M"], d["KH"], d["KW"], d["OH"], d["OW"]
    KK = KH * KW
    b = SC_BLOCKS_PER_SM
    S_sh = min(hw.shared_per_block_optin, hw.shared_per_sm // b - _reserved_shared(hw))
    n_fma_b = _cdiv(lat["N_FMA"], b)
    B = b * hw.sm_count

    # The paper's 512 threads first; fewer threads (more registers each) when the filter
    # taps or the register staging of a piece do not fit the budget at 512.
    T_max = min(SC_THREADS, hw.max_threads_per_block, hw.max_threads_per_sm // b) // WARP * WARP
    tries = [t for t in (T_max, T_max // 2, T_max // 4) if t >= WARP]
    for T in tries:
        att = _sc_attempt(T, b, B, S_sh, n_fma_b, N, M, KH, KW, OH, OW, hw, lat)
        if att["cands"]:
            break
    T, budget, common, cands, q = att["T"], att["budget"], att["common"], att["cands"], att["q"]
    if REG_BASE + KK > budget:
        return _direct(hw, f"single channel: a {KH}x{KW} filter needs {REG_BASE + KK} "
                           f"registers per thread, more than the {budget} available",
                       lat, common)
    if not cands:
        return _direct(hw, f"single channel: no division fits {S_sh} B of shared memory and "
                           f"{budget} registers per thread (one row piece needs "
                           f"D1 = {att['D1_min']} B, one filter piece D2 = {att['D2_min']} B)",
                       lat, q[len(lat):])

    prefetch = [c for c in cands if c["Th"] >= n_fma_b]
    if prefetch:
        pool, mode = prefetch, "prefetch"
        why = (f"Th{'/'.join(str(c['division']) for c in pool)} >= N_FMA/block = {n_fma_b}: "
               f"prefetch the next piece while computing this one (sec 2.2 method 1)")
    else:
        vs_ok = [c for c in cands if c["inflight"] >= lat["V_s"]]
        pool, mode = (vs_ok or cands), "volume"
        why = (f"Th < N_FMA/block = {n_fma_b} for every division (small map): transfer "
               f"{'>= V_s' if vs_ok else 'as much as fits (below V_s)'} = {lat['V_s']} B at "
               f"once instead (sec 2.2 method 2)")
    best = min(pool, key=lambda c: (c["D"], c["division"]))
    other = [c for c in cands if c is not best]
    if other:
        o = other[0]
        why += (f"; division {best['division']} (D{best['division']} = {best['D']} B) over "
                f"division {o['division']} (D{o['division']} = {o['D']} B)"
                + (": the smaller D (sec 3.1 step 4)" if o in pool else
                   (f" whose Th{o['division']} = {o['Th']} < N_FMA/block" if mode == "prefetch"
                    else f" whose {o['inflight']} B in flight stay below V_s")))
    else:
        missing = 2 if best["division"] == 1 else 1
        why += f"; division {missing} does not fit shared memory/registers"

    by_div = {c["division"]: c for c in cands}
    c1, c2 = by_div.get(1), by_div.get(2)
    q += [("D1", c1["D"] if c1 else "infeasible"), ("Th1", c1["Th"] if c1 else "infeasible"),
          ("D2", c2["D"] if c2 else "infeasible"), ("Th2", c2["Th"] if c2 else "infeasible"),
          ("division", best["division"]), ("mode", mode), ("P", best["P"]), ("Q", best["Q"]),
          ("filters_per_block", best["fpb"]), ("rows_per_block", best["rpb"]),
          ("rows_per_piece", best["rows_per_piece"]),
          ("filters_per_piece", best["filters_per_piece"]),
          ("blocks_used", best["blocks"]), ("bytes_in_flight", best["inflight"]),
          ("regs_per_thread", best["regs"]), ("shared_bytes_per_block", best["D"])]
    attrs = (METHOD_IDS["single_channel"], best["division"], best["P"], best["Q"], best["fpb"],
             best["rpb"], 1 if mode == "prefetch" else 0, T)
    return Plan("single_channel", f"C == 1, stride 1 (sec 3.1): {why}", hw.name, tuple(q),
                tuple(int(a) for a in attrs))


# ------------------------------------------------------------------ section 3.2
def _multi_channel(spec: ConvSpec, hw: Hardware, lat: dict) -> Plan:
    d = spec.dims
    N, C, M, KH, KW, OH, OW = d["N"], d["C"], d["M"], d["KH"], d["KW"], d["OH"], d["OW"]
    b = MC_BLOCKS_PER_SM
    S_sh = min(hw.shared_per_block_optin, hw.shared_per_sm // b - _reserved_shared(hw))
    T = min(MC_THREADS, hw.max_threads_per_block, hw.max_threads_per_sm // b) // WARP * WARP
    budget = _reg_budget(hw, b, T)
    n_fma = lat["N_FMA"]
    Wx = min(_cdiv(OW, WARP) * WARP, MC_WX_MAX)          # multiple of 32 px = 128 B
    Wx_eff = min(Wx, OW)
    common = (("blocks_per_SM", b), ("S_shared", S_sh), ("threads_per_block", T),
              ("reg_budget", budget))

    options = []
    for S in (32, 64):
        # a filter shorter than one segment (C x KH x KW < S / 4) is one segment
        Se = min(S // ELEM_BYTES, C * KH * KW)
        Wy = min(_cdiv(Se + KW - 1, KW), C * KH)
        map_bytes = ELEM_BYTES * Wy * (Wx + KW - 1)
        m_lo = max(1, _cdiv(n_fma, Se * Wx_eff))       # = N_FMA x 4 / (S x W'x) at S = 4 Se
        m_shared = (S_sh // 2 - map_bytes) // (ELEM_BYTES * Se)
        acc_max = budget - REG_BASE - Se
        m_regs = acc_max * T // Wx if acc_max > 0 else 0
        m_hi = min(M, m_shared, m_regs)
        options.append(dict(S=S, Se=Se, Wy=Wy, map_bytes=map_bytes, m_lo=m_lo, m_hi=m_hi))
    if options[0]["Se"] == options[1]["Se"]:      # both S give the same (whole-filter) segment
        options = options[:1]
    meets = [o for o in options if 1 <= o["m_lo"] <= o["m_hi"]]
    if meets:
        o = meets[0]
        Mp = o["m_lo"]
        why = (f"S = {o['S']} B: the smallest M' = {Mp} with M' x S/4 x min(W'x, OW) >= N_FMA "
               f"and one stage <= S_shared / 2")
    else:
        fits = [o for o in options if o["m_hi"] >= 1]
        if not fits:
            return _direct(hw, f"multi channel: one stage of even M' = 1 exceeds S_shared / 2 "
                               f"= {S_sh // 2} B or the register budget ({budget})",
                           lat, common)
        o = max(fits, key=lambda o: (o["m_hi"] * o["Se"], -o["S"]))
        Mp = o["m_hi"]
        lim = "M" if Mp == M else "shared memory/registers"
        why = (f"no M' <= {lim} reaches N_FMA (needs M' >= {o['m_lo']} at S = {o['S']} B); "
               f"S = {o['S']} B, M' = {Mp}: prefetch hides the latency only partly")
    S, Se, Wy = o["S"], o["Se"], o["Wy"]
    stage = ELEM_BYTES * Se * Mp + o["map_bytes"]
    regs = REG_BASE + _cdiv(Mp * Wx, T) + Se
    th_stage = Mp * Se * Wx_eff
    tiles = N * OH * _cdiv(OW, Wx) * _cdiv(M, Mp)
    c_split = 1
    if tiles < hw.sm_count and C > 1:
        target = _cdiv(hw.sm_count, tiles)
        c_split = C
        for s in range(min(target, C), C + 1):
            s_norm = _cdiv(C, _cdiv(C, s))
            if s_norm * tiles >= hw.sm_count:
                c_split = s_norm
                break
        why += (f"; only {tiles} output tiles for {hw.sm_count} SMs: channels split "
                f"{c_split} ways (beyond the paper: needs a reduction across blocks)")
    q = list(lat.items()) + list(common) + [
        ("S", S), ("S_elems", Se), ("W'x", Wx), ("W'y", Wy), ("M'_lower", o["m_lo"]),
        ("M'_upper", o["m_hi"]), ("M'", Mp), ("Th_stage", th_stage), ("stage_bytes", stage),
        ("shared_bytes_per_block", 2 * stage), ("regs_per_thread", regs),
        ("output_tiles", tiles), ("c_split", c_split),
        ("channels_per_split", _cdiv(C, c_split))]
    attrs = (METHOD_IDS["multi_channel"], Se, Mp, Wx, Wy, c_split, T, 0)
    return Plan("multi_channel", f"C > 1, stride 1: stride-fixed block (sec 3.2): {why}",
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
    if tuple(spec.window_strides) != (1, 1):
        return _direct(hw, f"stride {tuple(spec.window_strides)}: the paper's kernels are "
                           f"stride 1", lat)
    if d["C"] == 1:
        return _single_channel(spec, hw, lat)
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
        division, P, Q, fpb, rpb = a[1], a[2], a[3], a[4], a[5]
        if division == 1:
            out["m"] = split(d["M"], fpb)
            out["oh"] = split(d["OH"], _cdiv(d["OH"], P))
        else:
            out["oh"] = split(d["OH"], rpb)
            out["m"] = split(d["M"], _cdiv(fpb, Q))
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
    print(make_plan(spec, hw).describe())
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
