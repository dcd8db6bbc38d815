// CUDA runtime error state on the client: the per-thread last error and the
// process-wide sticky error, with cudart's semantics:
// - every failing call records its error as the calling thread's last error;
// - cudaGetLastError returns and clears it, cudaPeekAtLastError only returns it;
// - a sticky error (the context is corrupted, e.g. cudaErrorIllegalAddress)
//   is returned by every later call that needs the device and is never cleared.
#pragma once

#include <cuda_runtime_api.h>

namespace agileos::client {

// Records `error` as the thread's last error when it is not cudaSuccess, and
// latches it as the sticky error when it is one of the context-fatal codes.
// Returns `error` so handlers can `return recordError(e);`.
cudaError_t recordError(cudaError_t error);

// Latches `error` as the sticky error when it is context-fatal, touching no thread's last error:
// every worker reply passes here, so a fault that either shim's call reports (cudaDeviceSynchronize,
// cuCtxSynchronize) is returned by every later call of both.
void latchIfContextFatal(cudaError_t error);

cudaError_t takeLastError();  // cudaGetLastError
cudaError_t peekLastError();  // cudaPeekAtLastError
cudaError_t stickyError();    // cudaSuccess until a context-fatal error happened

bool isContextFatal(cudaError_t error);

}  // namespace agileos::client
