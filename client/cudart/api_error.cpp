// Error state (cudart exports); names and strings are in error_api.cpp.
#include <cuda_runtime_api.h>

#include "client/session/error_state.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

extern "C" {

cudaError_t cudaGetLastError(void) { return agileos::client::takeLastError(); }

cudaError_t cudaPeekAtLastError(void) { return agileos::client::peekLastError(); }

}  // extern "C"
