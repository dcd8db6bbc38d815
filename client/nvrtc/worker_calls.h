// How the NVRTC shim's calls to the worker's NVRTC adapter (worker/adapters/nvrtc) map to nvrtcResult
// (UNTRUSTED side).
#pragma once

#include <nvrtc.h>

#include "client/library_shim/library_call_client.h"
#include "proto/adapters/nvrtc_operations.h"

namespace agileos::client::nvrtc_shim {

// The adapter's library and operation names, as declared (proto/adapters/nvrtc_operations.h).
namespace names = adapters::nvrtc::names;

// No reply: NVRTC_ERROR_INTERNAL_ERROR; refused without an NVRTC status:
// NVRTC_ERROR_INVALID_INPUT; results not as declared: NVRTC_ERROR_INTERNAL_ERROR.
inline constexpr library_shim::FailureCodes kCodes{NVRTC_ERROR_INTERNAL_ERROR, NVRTC_ERROR_INVALID_INPUT,
                                                   NVRTC_ERROR_INTERNAL_ERROR};

inline nvrtcResult asResult(int status) { return static_cast<nvrtcResult>(status); }

}  // namespace agileos::client::nvrtc_shim
