// Names of CUDA graph node types and of stream capture statuses and modes, for the GPU programs
// that print a graph's shape or a capture's state (their stdout is compared with a native run's,
// so the names only need to be stable).
#pragma once

#include <cuda_runtime.h>

inline const char* graphNodeTypeName(cudaGraphNodeType type) {
  switch (type) {
    case cudaGraphNodeTypeKernel:
      return "kernel";
    case cudaGraphNodeTypeMemcpy:
      return "memcpy";
    case cudaGraphNodeTypeMemset:
      return "memset";
    case cudaGraphNodeTypeHost:
      return "host";
    case cudaGraphNodeTypeGraph:
      return "graph";
    case cudaGraphNodeTypeEmpty:
      return "empty";
    case cudaGraphNodeTypeWaitEvent:
      return "wait_event";
    case cudaGraphNodeTypeEventRecord:
      return "event_record";
    case cudaGraphNodeTypeMemAlloc:
      return "mem_alloc";
    case cudaGraphNodeTypeMemFree:
      return "mem_free";
    case cudaGraphNodeTypeConditional:
      return "conditional";
    default:
      return "other";
  }
}

inline const char* captureStatusName(cudaStreamCaptureStatus status) {
  switch (status) {
    case cudaStreamCaptureStatusNone:
      return "None";
    case cudaStreamCaptureStatusActive:
      return "Active";
    case cudaStreamCaptureStatusInvalidated:
      return "Invalidated";
  }
  return "unknown";
}

inline const char* captureModeName(cudaStreamCaptureMode mode) {
  switch (mode) {
    case cudaStreamCaptureModeGlobal:
      return "Global";
    case cudaStreamCaptureModeThreadLocal:
      return "ThreadLocal";
    case cudaStreamCaptureModeRelaxed:
      return "Relaxed";
  }
  return "unknown";
}
