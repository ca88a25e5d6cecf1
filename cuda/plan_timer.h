// Device time of one convolution under several plans (jax_fastconv/autotune.py, measure_plans):
// CUDA events around CUDA graphs of back-to-back launches, on buffers of its own.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "conv_params.h"

namespace fastconv {

using PlanAttrs = std::array<int64_t, kPlanLen>;

// Microseconds of device time per launch of `base` under each of `plans` (base.plan is
// ignored): result[i] holds `rounds` samples of plans[i].
//   * Buffers of its own on device `ordinal` (the caller's current device is restored): a
//     workspace for multi-channel plans and S sets of (input, filters, output), S in [1, 256],
//     enough that the S outputs together exceed 2x the L2 cache and 6 GiB (each launch of a
//     sample takes the next set, so no launch finds the previous one's data, its filters
//     included, in L2 or its pages recently touched) where budget_bytes (and half the free
//     device memory) allow. Inputs and filters hold a normal float bit pattern (the kernels'
//     time does not depend on the values).
//   * Warm-up: every plan launched once on every set, checked per plan. Iterations per
//     sample: from a timed graph of 8 launches of plans[0], about 1 ms per sample, in
//     [4, 512], rounded up to a multiple of S; the same for every plan.
//   * Each plan's `iters` launches are captured into a CUDA graph (as XLA's command buffers
//     run the FFI handler): the host's cost per launch does not limit the device. A round
//     enqueues one untimed graph, then every plan's graph between two events, back to back
//     (no host gap inside a timed span), the plans' order rotated by one each round.
// Throws std::invalid_argument for bad arguments (a zero size, negative strides, no plans,
// rounds outside [1, 1000], a layer that does not fit budget_bytes) and std::runtime_error
// naming the plan and the CUDA error where a launch or a CUDA call fails. Everything it
// allocated or created is released on every path.
std::vector<std::vector<double>> time_plans(const ConvParams& base,
                                            const std::vector<PlanAttrs>& plans, int rounds,
                                            int ordinal, size_t budget_bytes);

}  // namespace fastconv
