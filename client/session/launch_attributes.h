// Launch attributes (cuLaunchKernelEx's CUlaunchAttribute list, cudaLaunchKernelExC's
// cudaLaunchAttribute list: one layout), read from the program's memory into the form the
// session sends (untrusted side). Shared by the runtime and driver shims.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <span>

#include "client/session/kernel_launch.h"

namespace agileos::client {

// As many attributes as the worker takes for one launch (worker/handlers/launch_attributes.h).
inline constexpr std::size_t kMaxLaunchAttributes = 16;

struct LaunchAttributes {
  std::array<LaunchAttributeValue, kMaxLaunchAttributes> values;
  std::size_t count = 0;
  bool cooperative = false;  // the cooperative attribute, which travels as the launch's flag

  std::span<const LaunchAttributeValue> view() const { return {values.data(), count}; }
};

// Reads `count` attributes at `attributes` (CUlaunchAttribute or cudaLaunchAttribute): each id as
// an integer (the program may have put any bits there) and each value by its id's layout.
// cudaErrorInvalidValue when the list is missing or longer than kMaxLaunchAttributes;
// cudaErrorNotSupported, logged once per id, for an attribute the shims do not pass on (one that
// carries an event or an address, or an id they do not know).
cudaError_t readLaunchAttributes(const void* attributes, unsigned count, LaunchAttributes* out);

// The driver's union (CUlaunchAttributeValue, cudaLaunchAttributeValue: one layout) for a value in
// the session's form: what cuStreamGetAttribute hands the program.
void launchAttributeValueOf(const LaunchAttributeValue& in, CUlaunchAttributeValue* out);

}  // namespace agileos::client
