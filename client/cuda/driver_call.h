// Helpers every driver-shim entry point uses (untrusted side).
#pragma once

#include <cuda.h>

#include "agileos/v1/client_api.pb.h"
#include "client/cuda/driver_result.h"
#include "client/session/thread_contexts.h"

namespace agileos::client::cuda_shim {

// The checks before a call that works in a context: cuInit happened, and the thread's current
// context (if any) is live.
inline CUresult enterContext() {
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  return requireContext();
}

// Runs a session call (returning cudaError_t) after the context checks, and translates its error.
template <typename Call>
CUresult inContext(Call call) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  return toDriverResult(call());
}

// The worker's device description; null with *result set when unavailable.
const v1::DeviceInfo* deviceDescription(CUresult* result);

// CUDA_ERROR_INVALID_DEVICE unless `device` is the one device of this client.
CUresult requireDevice(CUdevice device);

}  // namespace agileos::client::cuda_shim
