// CUresult on the driver shim (untrusted side): the session speaks cudaError_t (the worker's
// answers are the runtime's codes), the driver API answers with CUresult.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

namespace agileos::client::cuda_shim {

// The driver's code for a runtime code. CUDA numbers the two enums alike wherever both have a
// code (cudaErrorMemoryAllocation == CUDA_ERROR_OUT_OF_MEMORY, 700s, 900s); the runtime's own
// codes (an invalid device pointer, a bad memcpy direction, an invalid device function) become
// the code the driver gives for the same mistake.
CUresult toDriverResult(cudaError_t error);

// cuGetErrorName's answer: the enumerator's name, or null for a value CUresult does not have.
const char* driverResultName(CUresult result);

// CUDA_ERROR_NOT_INITIALIZED until cuInit succeeded (or the runtime shim connected the
// session: a program that mixes the two APIs never calls cuInit itself).
CUresult requireInitialized();
// cuInit: connects the session. The outcome is kept, like the driver's.
CUresult initialize();

}  // namespace agileos::client::cuda_shim
