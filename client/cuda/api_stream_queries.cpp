// Stream identity and stream-capture status, context ids, profiler control (libcuda.so.1
// exports), as the runtime shim answers them (client/cudart/api_stream_queries.cpp,
// api_profiler.cpp): a stream's capture state is the session's (client/session/stream_capture.h,
// shared with the runtime shim), after each query proves the stream live with the worker; so is
// the thread's capture mode.
#include <cuda.h>
#include <cudaProfiler.h>

#include <cstring>
#include <vector>

#include "client/cuda/driver_call.h"
#include "client/session/error_state.h"
#include "client/session/stream_capture.h"
#include "client/session/stream_event_calls.h"
#include "client/session/streams.h"
#include "client/session/thread_contexts.h"
#include "client/session/worker_calls.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;

namespace {

constexpr DefaultStream kLegacy = DefaultStream::kLegacy;
constexpr DefaultStream kPerThread = DefaultStream::kPerThread;

CUresult idOf(CUstream stream, DefaultStream spelling, unsigned long long* id) {
  return inContext([&] { return streamId(reinterpret_cast<cudaStream_t>(stream), spelling, id); });
}

CUresult isCapturing(CUstream stream, CUstreamCaptureStatus* status, DefaultStream spelling) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned long long id = 0;
  if (CUresult result = idOf(stream, spelling, &id); result != CUDA_SUCCESS) return result;
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(reinterpret_cast<cudaStream_t>(stream), spelling, &token);
      error != cudaSuccess) {
    return toDriverResult(error);
  }
  *status = static_cast<CUstreamCaptureStatus>(agileos::client::captureInfo(token).status);
  return CUDA_SUCCESS;
}

// Only the status is valid unless it is Active; the other outputs are cleared then so that
// nothing stale is read as a capture.
CUresult captureInfo(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                     const CUgraphNode** dependencies, const CUgraphEdgeData** edgeData,
                     size_t* numDependencies, DefaultStream spelling) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (edgeData != nullptr && dependencies == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned long long streamIdentity = 0;
  if (CUresult result = idOf(stream, spelling, &streamIdentity); result != CUDA_SUCCESS) return result;
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(reinterpret_cast<cudaStream_t>(stream), spelling, &token);
      error != cudaSuccess) {
    return toDriverResult(error);
  }
  const CaptureInfo info = agileos::client::captureInfo(token);
  *status = static_cast<CUstreamCaptureStatus>(info.status);
  const bool active = info.status == cudaStreamCaptureStatusActive;
  const size_t count = active ? info.dependencies->size() : 0;
  if (id != nullptr) *id = active ? info.id : 0;
  if (graph != nullptr) *graph = active ? reinterpret_cast<CUgraph>(info.graph) : nullptr;
  if (dependencies != nullptr) {
    *dependencies = count > 0 ? reinterpret_cast<const CUgraphNode*>(info.dependencies->data()) : nullptr;
  }
  if (edgeData != nullptr) {
    thread_local std::vector<CUgraphEdgeData> tDefaultEdges;  // every captured edge is a default edge
    tDefaultEdges.assign(count, CUgraphEdgeData{});
    *edgeData = count > 0 ? tDefaultEdges.data() : nullptr;
  }
  if (numDependencies != nullptr) *numDependencies = count;
  return CUDA_SUCCESS;
}

CUresult deviceOf(CUstream stream, CUdevice* device, DefaultStream spelling) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned long long id = 0;
  if (CUresult result = idOf(stream, spelling, &id); result != CUDA_SUCCESS) return result;
  *device = kOnlyDevice;
  return CUDA_SUCCESS;
}

// A created stream's context is the one it was made in (kept by the session); the special streams'
// is the calling thread's current context, as the driver documents (none: CUDA_ERROR_INVALID_CONTEXT).
CUresult contextOf(CUstream stream, CUcontext* context, DefaultStream spelling) {
  if (context == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) {
    const CUcontext current = currentContext();
    if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (CUresult result = requireContext(); result != CUDA_SUCCESS) return result;
    *context = current;
    return CUDA_SUCCESS;
  }
  unsigned long long id = 0;
  if (CUresult result = idOf(stream, spelling, &id); result != CUDA_SUCCESS) return result;  // live
  const void* recorded = nullptr;
  if (!streamCreationContext(reinterpret_cast<std::uint64_t>(stream), &recorded))
    return CUDA_ERROR_INVALID_HANDLE;
  const auto made = static_cast<CUcontext>(const_cast<void*>(recorded));
  if (!isLiveContext(made)) return CUDA_ERROR_INVALID_CONTEXT;
  *context = made;
  return CUDA_SUCCESS;
}

// No profiling tool can be attached to a client (it has no driver): as natively with none, start
// and stop do nothing, after initializing (reaching the worker) and reporting a sticky error.
CUresult profilerControl() {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  cudaError_t error = cudaSuccess;
  deviceInfo(&error);
  if (error != cudaSuccess) return toDriverResult(error);
  return toDriverResult(stickyError());
}

}  // namespace

extern "C" {

CUresult cuStreamGetId(CUstream hStream, unsigned long long* streamId) {
  if (streamId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return idOf(hStream, kLegacy, streamId);
}
CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long* streamId) {
  if (streamId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return idOf(hStream, kPerThread, streamId);
}

CUresult cuStreamGetDevice(CUstream hStream, CUdevice* device) { return deviceOf(hStream, device, kLegacy); }
CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice* device) {
  return deviceOf(hStream, device, kPerThread);
}

CUresult cuStreamGetCtx(CUstream hStream, CUcontext* pctx) { return contextOf(hStream, pctx, kLegacy); }
CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext* pctx) {
  return contextOf(hStream, pctx, kPerThread);
}
// No green contexts here (a worker's client cannot create one): the green context, when asked for,
// is always null.
CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext* pCtx, CUgreenCtx* pGreenCtx) {
  const CUresult result = contextOf(hStream, pCtx, kLegacy);
  if (result == CUDA_SUCCESS && pGreenCtx != nullptr) *pGreenCtx = nullptr;
  return result;
}
CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext* pCtx, CUgreenCtx* pGreenCtx) {
  const CUresult result = contextOf(hStream, pCtx, kPerThread);
  if (result == CUDA_SUCCESS && pGreenCtx != nullptr) *pGreenCtx = nullptr;
  return result;
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  return isCapturing(hStream, captureStatus, kLegacy);
}
CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  return isCapturing(hStream, captureStatus, kPerThread);
}

CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                cuuint64_t* id_out) {
  return captureInfo(hStream, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr, kLegacy);
}
CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                     cuuint64_t* id_out) {
  return captureInfo(hStream, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr, kPerThread);
}
CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                   cuuint64_t* id_out, CUgraph* graph_out,
                                   const CUgraphNode** dependencies_out, size_t* numDependencies_out) {
  return captureInfo(hStream, captureStatus_out, id_out, graph_out, dependencies_out, nullptr,
                     numDependencies_out, kLegacy);
}
CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                        cuuint64_t* id_out, CUgraph* graph_out,
                                        const CUgraphNode** dependencies_out, size_t* numDependencies_out) {
  return captureInfo(hStream, captureStatus_out, id_out, graph_out, dependencies_out, nullptr,
                     numDependencies_out, kPerThread);
}
CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                   cuuint64_t* id_out, CUgraph* graph_out,
                                   const CUgraphNode** dependencies_out, const CUgraphEdgeData** edgeData_out,
                                   size_t* numDependencies_out) {
  return captureInfo(hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                     numDependencies_out, kLegacy);
}
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                        cuuint64_t* id_out, CUgraph* graph_out,
                                        const CUgraphNode** dependencies_out,
                                        const CUgraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  return captureInfo(hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                     numDependencies_out, kPerThread);
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int requested = 0;  // any bit pattern may come: read as an integer, not as the enum
  static_assert(sizeof requested == sizeof *mode);
  std::memcpy(&requested, mode, sizeof requested);
  if (cudaError_t error = exchangeCaptureMode(&requested); error != cudaSuccess) return toDriverResult(error);
  std::memcpy(mode, &requested, sizeof requested);
  return CUDA_SUCCESS;
}

// A context's id: unique for the life of the process (contexts.h's contextNumber).
CUresult cuCtxGetId(CUcontext ctx, unsigned long long* ctxId) {
  if (ctxId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  if (ctx == nullptr) ctx = currentContext();
  if (ctx == nullptr || !isLiveContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *ctxId = contextNumber(ctx);
  return CUDA_SUCCESS;
}

CUresult cuProfilerStart(void) { return profilerControl(); }
CUresult cuProfilerStop(void) { return profilerControl(); }

}  // extern "C"
