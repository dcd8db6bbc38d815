// Stream capture (untrusted side), shared by the runtime and the driver shims: between
// cudaStreamBeginCapture and cudaStreamEndCapture, work the program puts on a capturing stream is
// not sent to the worker; it becomes a node of the capture's graph (graph.h), after the nodes
// the stream's earlier captured work became. Other streams join a capture by waiting on an event
// recorded in it, and must be joined back into the origin stream before the capture ends
// (cudaErrorStreamCaptureUnjoined otherwise), as in CUDA.
//
// The session functions that put work on a stream ask capturedWork() first; it costs one relaxed
// atomic load while nothing is being captured, so the launch path pays nothing for capture.
//
// What is captured: kernel launches, copies and memsets on the stream, host functions, event
// records and waits, and stream-ordered allocation: cudaMallocAsync becomes an allocation node
// (its address is fixed at once, graph_memory.h) and cudaFreeAsync of a graph allocation a free
// node; cudaFreeAsync of other memory is cudaErrorInvalidValue and invalidates the capture (a free
// node frees only graph allocations, as natively). Library calls served by the worker (cuFFT) and
// stream callbacks on a capturing stream are refused with cudaErrorStreamCaptureUnsupported and
// invalidate the capture, as CUDA does for what it cannot capture; so are a synchronize or query
// of a capturing stream. The capture mode is kept but calls made from other threads are not
// judged "unsafe" (no call the worker serves is: each is validated as it comes).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "client/session/graph.h"
#include "client/session/streams.h"

namespace agileos::client {

// While a stream captures: adds `work` as a node after the stream's current dependencies and
// returns the call's result (cudaSuccess, or cudaErrorStreamCaptureInvalidated when the capture
// was invalidated). nullopt when the stream is not capturing: the caller sends the work.
std::optional<cudaError_t> capturedWork(std::uint64_t stream, NodeKind kind, NodeWork work);

// cudaMallocAsync and cudaFreeAsync on a capturing stream: nullopt when the stream is not
// capturing; otherwise the call's result, with *address the allocation's (fixed) address.
std::optional<cudaError_t> capturedAllocation(std::uint64_t stream, std::uint64_t bytes,
                                              std::uint64_t* address);
std::optional<cudaError_t> capturedFree(std::uint64_t stream, std::uint64_t address);

// For calls that cannot be captured: nullopt when the stream is not capturing, otherwise the
// capture is invalidated and the call gets cudaErrorStreamCaptureUnsupported.
std::optional<cudaError_t> refusedInCapture(std::uint64_t stream);

// Event records and waits on a capturing stream (or, for a wait, an event recorded in a capture):
// nullopt when capture is not involved and the caller sends the call.
std::optional<cudaError_t> capturedEventRecord(std::uint64_t event, std::uint64_t stream, unsigned flags);
std::optional<cudaError_t> capturedEventWait(std::uint64_t stream, std::uint64_t event, unsigned flags);
// The event is gone (destroyed): it no longer names captured work.
void forgetCapturedEvent(std::uint64_t event);

// cudaStreamBeginCapture(ToGraph): `graph` null makes a new graph; otherwise nodes are added to
// it after `dependencies`. The legacy stream cannot capture (cudaErrorStreamCaptureUnsupported);
// a stream already capturing is cudaErrorIllegalState.
cudaError_t beginCapture(std::uint64_t stream, int mode, Graph* graph, std::span<Node* const> dependencies);
// cudaStreamEndCapture: the graph (owned by the program from now on), or null with the error.
// `graph` may be null for a capture into the program's own graph (cudaStreamBeginCaptureToGraph),
// as natively; for any other capture that is cudaErrorInvalidValue and the capture goes on.
cudaError_t endCapture(std::uint64_t stream, Graph** graph);

struct CaptureInfo {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  Graph* graph = nullptr;
  // Valid until the next capture call on the stream (CUDA's contract for the array it returns).
  const std::vector<Node*>* dependencies = nullptr;
};
CaptureInfo captureInfo(std::uint64_t stream);

// cudaStreamUpdateCaptureDependencies: flags cudaStreamSetCaptureDependencies (replace) or
// cudaStreamAddCaptureDependencies (add).
cudaError_t updateCaptureDependencies(std::uint64_t stream, std::span<Node* const> dependencies,
                                      unsigned flags);

// True while any stream of the process captures.
bool anyCapture();

}  // namespace agileos::client
