// cuLaunchKernelEx's attribute list, read from the program's CUlaunchConfig into the form the
// session sends (untrusted side).
#pragma once

#include <cuda.h>

#include <array>
#include <cstddef>
#include <span>

#include "client/session/kernel_launch.h"

namespace agileos::client::cuda_shim {

// As many attributes as the worker takes for one launch (worker/handlers/launch_attributes.h).
inline constexpr std::size_t kMaxLaunchAttributes = 16;

struct LaunchAttributes {
  std::array<LaunchAttributeValue, kMaxLaunchAttributes> values;
  std::size_t count = 0;
  bool cooperative = false;  // CU_LAUNCH_ATTRIBUTE_COOPERATIVE, which travels as the launch's flag

  std::span<const LaunchAttributeValue> view() const { return {values.data(), count}; }
};

// Reads every attribute: each id is read as an integer (the program may have put any bits there)
// and each value by its id's layout. CUDA_ERROR_INVALID_VALUE when the list is missing or longer
// than kMaxLaunchAttributes; CUDA_ERROR_NOT_SUPPORTED, logged once per id, for an attribute the
// shim does not pass on (one that carries an event or an address, or an id it does not know).
CUresult readLaunchAttributes(const CUlaunchConfig& config, LaunchAttributes* out);

}  // namespace agileos::client::cuda_shim
