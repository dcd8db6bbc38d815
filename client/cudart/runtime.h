// The cudart shim's link to its worker (untrusted side): sending a call,
// turning connection trouble into CUDA errors, and the device description
// cached at first use.
#pragma once

#include <cuda_runtime_api.h>

#include "agileos/v1/client_api.pb.h"
#include "client/common/connection.h"

namespace agileos::client {

// The CUDA error a program sees for a connection state: no daemon reachable is
// cudaErrorNoDevice (as on a machine with no GPU); busy or lost is
// cudaErrorDevicesUnavailable.
cudaError_t toCudaError(ConnectionState state);

// Sends `request`, writes any device printf output the reply carries to stdout,
// and returns the reply's error (not yet recorded as the last error: callers
// `return recordError(invoke(...))`). A sticky error short-circuits the call.
cudaError_t invoke(const v1::CallRequest& request, v1::CallReply* reply);

// The worker's device description, fetched once. Null with *error set if unavailable.
const v1::DeviceInfo* deviceInfo(cudaError_t* error);

}  // namespace agileos::client
