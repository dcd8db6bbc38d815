// The tools-context private table (untrusted side).
//
// NVIDIA documents nothing of it. What is served is what cuBLASLt 13.1 was seen to call against
// the real driver (580.159, H200), read off a native run with client/cuda/tools/
// trace_private_tables.c (docs/driver-private-tables.md has the trace):
//
//   entry 4   (context, uint64* out)                     -> the context's number (1 natively for
//             the primary context, cuCtxGetId's answer); called before and during every GEMM
//   entry 51  (context, stream, void** out)              -> an object of the context, the same on
//             every call; the stream is cublasSetStream's (null for the default stream, the only
//             one the first trace saw; a created stream in UnifiedMemoryStreams and
//             conjugateGradientCudaGraphs, which failed with CUBLAS_STATUS_INTERNAL_ERROR while
//             only null was accepted)
//   entry 39  (context, that object, uint64* out)        -> 7
//
// The second trace (2026-12-05, H200, tests/gpu/samples/trace_private_tables.sh) saw a created
// stream: natively entry 51 then writes an object of that stream (the first word of the stream's
// own record), and entry 39 answers a number of that stream (13 and 14 in two runs; 7 for the
// default stream's object). Here entry 51 answers the context's object for every stream and 39 the
// default stream's 7; with that, cuBLAS on a stream of its own worked on the H200 (the samples
// UnifiedMemoryStreams and conjugateGradientCudaGraphs). Serving each stream its own object and
// number is the faithful next step (the number is most likely the stream's id; not yet shown).
//
// The object is opaque to cuBLASLt as far as the trace shows (it only hands it back to entry 39),
// so a token stands for it. Calls with any other arguments than those seen fail closed with
// CUDA_ERROR_NOT_SUPPORTED and are logged once, as every other entry of the table does: what a
// value means for arguments never seen is not guessed.
#include "client/cuda/tools_context_table.h"

#include <cuda.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <utility>

#include "client/common/log.h"
#include "client/cuda/driver_call.h"
#include "client/cuda/export_table_entry.h"
#include "client/session/streams.h"
#include "client/session/thread_contexts.h"

namespace agileos::client::cuda_shim {
namespace {

constexpr unsigned kTableNumber = 7;  // in the unknown-entry log lines
constexpr std::size_t kEntries = 93;  // the real driver's size (probe_export_tables.cpp on the H200)

// What entry 39 answered natively for the arguments seen.
constexpr std::uint64_t kObservedObjectValue = 7;

// Stands for the context's object; zero-filled in case a caller reads it.
alignas(64) const std::uint64_t gContextObjectToken[16] = {};

CUresult liveContext(CUcontext context) {
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  return context != nullptr && isLiveContext(context) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

template <unsigned kEntry>
CUresult notAsSeen() {
  static std::atomic<bool> reported{false};
  if (!reported.exchange(true)) {
    AGILEOS_LOG_WARN(
        "the tools-context table's entry %u was called with arguments AgileOS has not seen the driver "
        "answer; returning CUDA_ERROR_NOT_SUPPORTED",
        kEntry);
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult contextNumberEntry(CUcontext context, std::uint64_t* number) {
  if (number == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = liveContext(context); result != CUDA_SUCCESS) return result;
  *number = contextNumber(context);
  return CUDA_SUCCESS;
}

// The second argument is the stream cuBLAS works on (cublasSetStream's; null natively for the
// default stream): one of this process's live streams, or a default-stream spelling.
CUresult contextObjectEntry(CUcontext context, CUstream stream, const void** object) {
  if (object == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = liveContext(context); result != CUDA_SUCCESS) return result;
  if (stream != nullptr) {
    std::uint64_t token = 0;
    if (resolveStream(reinterpret_cast<cudaStream_t>(stream), DefaultStream::kLegacy, &token) !=
            cudaSuccess ||
        !isKnownStream(token)) {
      return CUDA_ERROR_INVALID_HANDLE;
    }
  }
  *object = gContextObjectToken;
  return CUDA_SUCCESS;
}

// Three arguments as far as the trace shows: the registers after them held 0, 0 and 1 natively,
// and other values (left over from earlier calls) under AgileOS, with cuBLASLt working on.
CUresult objectValueEntry(CUcontext context, const void* object, std::uint64_t* value) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = liveContext(context); result != CUDA_SUCCESS) return result;
  if (object != gContextObjectToken) return notAsSeen<39>();
  *value = kObservedObjectValue;
  return CUDA_SUCCESS;
}

template <std::size_t... kIndex>
std::array<void*, kEntries> unknownEntries(std::index_sequence<kIndex...>) {
  return {entry(&unknownEntry<kTableNumber, kIndex>)...};
}

// Built once, before main (the shim is loaded before the program's code runs), at a fixed address.
std::array<void*, kEntries> makeTable() {
  std::array<void*, kEntries> table = unknownEntries(std::make_index_sequence<kEntries>());
  table[0] = size(kEntries);
  table[4] = entry(&contextNumberEntry);
  table[39] = entry(&objectValueEntry);
  table[51] = entry(&contextObjectEntry);
  return table;
}

const std::array<void*, kEntries> gToolsContext = makeTable();

}  // namespace

const void* toolsContextTable() { return gToolsContext.data(); }

}  // namespace agileos::client::cuda_shim
