// Stream stamps: CUDA events recorded on XLA's stream by a custom call (stream_stamp.cc).
#pragma once

#include <cstdint>
#include <string>

namespace fastconv {

constexpr int64_t kStampSlots = 64;   // events per device; jax_fastconv/stream_stamp.py mirrors it

// Microseconds between the events of slots `first` and `last` on `device`, after waiting for
// `last`; -1 with *error set when a slot holds no recorded event or CUDA fails.
double stamp_elapsed_us(int64_t first, int64_t last, int device, std::string* error);

}  // namespace fastconv
