// Translation between the driver's CUresult and the runtime's cudaError_t,
// which is what clients see. The two enumerations share most values by design;
// the exceptions are listed in cuda_errors.cpp.
#pragma once

#include <cuda.h>
#include <driver_types.h>

#include "memmgr/allocation_table.h"

namespace agileos::worker {

cudaError_t toCudaError(CUresult result);

// The error native CUDA gives for a bad pointer argument: cudaErrorInvalidValue.
cudaError_t toCudaError(memmgr::PointerCheck verdict);

// True when the driver reports that the context is corrupted for good.
bool isContextFatal(CUresult result);

}  // namespace agileos::worker
