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

// Flags and priority the program created a stream with (kept client-side), and the context it
// was created in (an opaque CUcontext handle of client/session/thread_contexts.h; null for a
// thread's default stream, which belongs to whichever context the thread has current).
void rememberStream(std::uint64_t token, unsigned flags, int priority, const void* context = nullptr);
void forgetStream(std::uint64_t token);
bool streamProperties(std::uint64_t token, unsigned* flags, int* priority);
// The stream's priority changed (cudaStreamSetAttribute); nothing else of its record does.
void setStreamPriority(std::uint64_t token, int priority);
// The context a created stream was made in (cuStreamGetCtx); false for an unknown stream and for
// the default streams (the legacy one, a thread's), whose context is the caller's current one.
bool streamCreationContext(std::uint64_t token, const void** context);
// True for the legacy stream and for every stream this process created and has not destroyed.
bool isKnownStream(std::uint64_t token);

// A stream's id (cuStreamGetId) as the worker answered it: fixed for the stream's life, asked for by
// cuBLAS at every GEMM. Forgotten with the stream. False when not known yet.
bool knownStreamId(std::uint64_t token, unsigned long long* id);
void rememberStreamId(std::uint64_t token, unsigned long long id);

// After cudaDeviceReset: every stream and event is gone, including per-thread default streams.
void forgetAllStreams();

// Events this process created and has not destroyed (kept client-side, like streams'
// properties, to tell a handle the worker will surely accept from one it must judge).
void rememberEvent(std::uint64_t token);
void forgetEvent(std::uint64_t token);
bool isLiveEvent(std::uint64_t token);

// What the client knows about work pending on its streams, so that cudaStreamQuery
// on a stream that surely has nothing pending is answered without a round trip.
// Every call that leaves work on a stream (a launch, an async copy or memset, a
// memset, an event record, a stream wait) notes it BEFORE it is sent; a
// synchronize or a query that found a stream idle notes that, with the mark taken
// BEFORE it was sent, so work posted meanwhile by another thread keeps the stream
// pending. A stream is surely idle when nothing was posted to it since a mark that
// found it (or the whole device) idle. Blocking streams and the legacy stream wait
// for each other, so the legacy stream counts as idle only when every stream is,
// and another stream only when the legacy stream is too.
void noteWorkPosted(std::uint64_t token);
std::uint64_t workMark();
void noteStreamIdle(std::uint64_t token, std::uint64_t mark);
void noteDeviceIdle(std::uint64_t mark);
bool streamSurelyIdle(std::uint64_t token);

}  // namespace agileos::client
