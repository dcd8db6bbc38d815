// Tensor maps (proto TensorMapEncode) and their check at launch. See docs/security-model.md,
// "Tensor maps", for why a kernel's tensor copies then reach only the client's own allocations.
#pragma once

#include <string_view>

#include "worker/call_context.h"
#include "worker/client_session.h"

namespace agileos::worker {

// For a kernel whose guarded PTX reads tensor maps from parameters (function.tensorMapOffsets):
// each such parameter of the launch's parameter block `params` (already checked to match the
// kernel's layout) must hold, byte for byte, a map this client was issued whose range still lies
// inside one live allocation of the client. False, with cudaErrorInvalidValue in the reply (the
// driver shim's CUDA_ERROR_INVALID_VALUE), otherwise. Runs under the client's gate like every
// launch: no free of the client can run between this check and the launch.
bool checkTensorMapArguments(CallContext& ctx, const FunctionRecord& function, std::string_view params,
                             v1::CallReply& reply);

}  // namespace agileos::worker
