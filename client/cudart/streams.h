// Stream handles as the program sees them (untrusted side).
//
// A cudaStream_t is the worker's opaque token. The spellings CUDA gives
// special meaning are resolved here: 0 is the legacy default stream (or the
// calling thread's default stream for the per-thread `_ptsz`/`_ptds` entry
// points), cudaStreamLegacy is the legacy stream, cudaStreamPerThread is the
// calling thread's default stream. A thread's default stream is an ordinary
// blocking stream created on first use, which has CUDA's semantics for it (it
// synchronizes with the legacy stream, and with nothing else).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace agileos::client {

enum class DefaultStream { kLegacy, kPerThread };

// Resolves `stream` to the token sent to the worker.
cudaError_t resolveStream(cudaStream_t stream, DefaultStream spelling, std::uint64_t* token);

// Flags and priority the program created a stream with (kept client-side).
void rememberStream(std::uint64_t token, unsigned flags, int priority);
void forgetStream(std::uint64_t token);
bool streamProperties(std::uint64_t token, unsigned* flags, int* priority);

// After cudaDeviceReset: every stream is gone, including per-thread default streams.
void forgetAllStreams();

}  // namespace agileos::client
