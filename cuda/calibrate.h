// Device calibration for the planner (`python -m jax_fastconv calibrate`): what the CUDA
// runtime cannot tell about the paper's model (section 2.2), measured on the device.
#pragma once

namespace fastconv {

struct CalibrationResult {
  double latency_cycles;    // global-memory latency: single-thread pointer chase, clock64()
  double copy_bytes_per_s;  // device-to-device copy, bytes read + bytes written per second
  double fma_per_s;         // FP32 FMA rate over all SMs (one FMA = 2 flops)
  double clock_hz;          // SM clock during the pointer chase (clock64 cycles / event time)
};

// Runs the three measurements on `device` (restores the caller's current device).
// Throws std::runtime_error carrying the CUDA error string on any CUDA failure.
CalibrationResult calibrate(int device);

}  // namespace fastconv
