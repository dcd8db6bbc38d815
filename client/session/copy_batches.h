// cudaMemcpyBatchAsync's own arguments, checked once for both shims (untrusted side): the runtime
// shim's cudaMemcpyBatchAsync and the driver shim's cuMemcpyBatchAsync (which a linked-in runtime
// calls). Each shim then makes every copy as its own asynchronous copy on the stream, in order.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace agileos::client {

// The arrays present and `count` > 0; 1 to `count` attribute entries whose indices start at 0,
// rise strictly and stay below `count`; each entry's source access order one CUDA defines and its
// flags none but cudaMemcpyFlagPreferOverlapWithCompute (a hint). *duringCall: some copy's source
// is read only during the call (cudaMemcpySrcAccessOrderDuringApiCall), so the batch is complete
// before the call returns. The location hints concern migrating memory, which AgileOS does not
// have. CUmemcpyAttributes has this layout.
cudaError_t checkCopyBatch(const void* dsts, const void* srcs, const size_t* sizes, size_t count,
                           const cudaMemcpyAttributes* attrs, const size_t* attrsIdxs, size_t numAttrs,
                           bool* duringCall);

}  // namespace agileos::client
