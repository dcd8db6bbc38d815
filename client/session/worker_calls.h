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

// Sends `request`, handles what the reply carries besides its result
// (absorbReply), and returns the call's error (not yet recorded as the last
// error: callers `return recordError(invoke(...))`). A sticky error
// short-circuits the call.
cudaError_t invoke(const v1::CallRequest& request, v1::CallReply* reply);

// invoke() for a query the worker answers whatever the client's state (the kernel memory
// guard's status, which must stay readable after a fault): no sticky short-circuit.
cudaError_t invokeStatusQuery(const v1::CallRequest& request, v1::CallReply* reply);

// For asynchronous work (launches, async copies and memsets, event records,
// stream waits): sends `request` without waiting for its reply where the
// transport allows, and returns cudaSuccess; an error it causes comes back on a
// later reply and is reported then (absorbReply). Where the transport cannot
// (gRPC), this is invoke() and the error is returned now.
cudaError_t invokeAsync(const v1::CallRequest& request);

// What every reply may carry besides the call's result: device printf output
// (written to stdout) and the deferred error of calls sent without waiting,
// which becomes the thread's last error (and the sticky error if it is
// context-fatal). Returns the call's own error; for a synchronizing call
// (synchronizes, queries, synchronous copies) that succeeded, the deferred
// error instead, as CUDA reports asynchronous errors at such calls.
cudaError_t absorbReply(const v1::CallRequest& request, const v1::CallReply& reply);

// The worker's device description, fetched once. Null with *error set if unavailable.
const v1::DeviceInfo* deviceInfo(cudaError_t* error);

// cudaSuccess when `device` names a device of this client (an ordinal below the worker's device
// count), cudaErrorInvalidDevice when it does not, or why the description is unavailable.
cudaError_t checkDeviceOrdinal(int device);

}  // namespace agileos::client
