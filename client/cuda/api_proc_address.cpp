// Driver entry points by name (libcuda.so.1 exports cuGetProcAddress and cuGetProcAddress_v2),
// as the CUDA runtime and cudaGetDriverEntryPoint look every driver function up.
//
// The table (proc_addresses.gen.inc, generated from the toolkit's cudaTypedefs.h by
// tools/generate_proc_addresses.py) maps a base name and the CUDA version a caller was built for
// to the exported symbol of that ABI, and to its per-thread-default-stream twin. Every entry is a
// function of this shim: one that works, or one that fails closed. Nothing here connects to the
// daemon, so the runtime may look its entry points up before cuInit, as it does with the driver.
#include <cuda.h>
#include <cudaProfiler.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

namespace {

struct ProcAddress {
  const char* name;
  int version;     // the first CUDA version with this ABI
  bool perThread;  // the per-thread-default-stream entry point
  void* function;
};

const ProcAddress kProcAddresses[] = {
#define AGILEOS_PROC_ADDRESS(name, version, perThread, symbol) \
  {name, version, perThread, reinterpret_cast<void*>(&symbol)},
#include "proc_addresses.gen.inc"
#undef AGILEOS_PROC_ADDRESS
};

// The newest ABI of `symbol` not newer than `cudaVersion` (its per-thread twin when asked for and
// there is one); null with *status saying why when there is none.
void* lookUp(const char* symbol, int cudaVersion, bool perThread, CUdriverProcAddressQueryResult* status) {
  const auto [first, last] = std::equal_range(
      std::begin(kProcAddresses), std::end(kProcAddresses), ProcAddress{symbol, 0, false, nullptr},
      [](const ProcAddress& a, const ProcAddress& b) { return std::strcmp(a.name, b.name) < 0; });
  if (first == last) {
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return nullptr;
  }
  const ProcAddress* legacy = nullptr;
  const ProcAddress* threaded = nullptr;
  for (const ProcAddress* entry = first; entry != last; ++entry) {
    if (entry->version > cudaVersion) continue;
    const ProcAddress*& best = entry->perThread ? threaded : legacy;
    if (best == nullptr || entry->version > best->version) best = entry;
  }
  const ProcAddress* chosen = perThread && threaded != nullptr ? threaded : legacy;
  *status = chosen != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  return chosen != nullptr ? chosen->function : nullptr;
}

}  // namespace

extern "C" {

// As the driver: CUDA_SUCCESS with *pfn null (and the reason in *symbolStatus) for a name it does
// not have or a version too old for it; CUDA_ERROR_INVALID_VALUE for flags it does not know. A
// version newer than this shim's (a CUDA 13.1 library on a 13.0 driver) gets the newest ABI the
// shim has, as the driver answers such a library.
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  constexpr cuuint64_t kKnownFlags =
      CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if ((flags & ~kKnownFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  *pfn = lookUp(symbol, cudaVersion, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, &status);
  if (symbolStatus != nullptr) *symbolStatus = status;
  return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, nullptr);
}

}  // extern "C"
