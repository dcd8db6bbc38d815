// cuGetExportTable: the private tables a CUDA runtime inside the program asks the driver for
// (libcuda.so.1 export; untrusted side).
//
// nvcc links the CUDA runtime into a program by default (static cudart), and every math library
// (cuBLAS, cuRAND, cuSPARSE, ...) carries one inside. Such a runtime reaches the driver only
// through cuGetProcAddress, which answers with this shim's functions, and through these tables,
// identified by 16-byte ids. The tables' layouts are not documented by NVIDIA; the ones served here
// are those the public ZLUDA and Lupine projects found a CUDA 12/13 runtime to need:
//
//   runtime interface      the primary context's handle, old-style fatbin loading
//   tools callback hooks   tracing switches, all off (the runtime then never calls the hooks)
//   tools TLS              set and get the current context
//   context-local storage  the runtime's per-context state (client/cuda/context_storage.h)
//   runtime integrity      a digest the runtime recomputes (client/cuda/runtime_integrity.h)
//   context type checks    every context is a plain one (not a green context)
//   tools context          what cuBLASLt asks of a context (client/cuda/tools_context_table.cpp)
//
// Everything a table entry does is done by this shim's public functions on the process's one
// session, so a runtime in the program gets exactly the checks a driver-API program gets: code it
// loads goes through the worker's guard, memory through the worker's validation. An entry whose
// meaning is unknown fails closed with CUDA_ERROR_NOT_SUPPORTED and logs once; an id not listed
// here gets CUDA_ERROR_INVALID_VALUE and no table.
//
// Each table has as many entries as the real driver's (580.159, CUDA 13.0: checked on the H200 with
// client/cuda/tools/probe_export_tables.cpp). The tables live as long as the process at fixed
// addresses: the integrity digest covers them.
#include <cuda.h>
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "client/common/log.h"
#include "client/cuda/context_storage.h"
#include "client/cuda/driver_call.h"
#include "client/cuda/export_table_entry.h"
#include "client/cuda/export_table_ids.h"
#include "client/cuda/runtime_integrity.h"
#include "client/cuda/tools_context_table.h"
#include "client/session/thread_contexts.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;

namespace {

using Id = ExportTableId;

std::string hex(const Id& id) {
  std::string text;
  char byte[3];
  for (std::uint8_t b : id) {
    std::snprintf(byte, sizeof byte, "%02x", b);
    text += byte;
  }
  return text;
}

// --- runtime interface ---

CUresult loadFatBinary(CUmodule* module, const void* fatCubin) {
  return cuModuleLoadFatBinary(module, fatCubin);
}

// The primary context's handle, neither retained nor made current (as the driver answers).
CUresult primaryContextOf(CUcontext* context, CUdevice device) {
  if (context == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireDevice(device); result != CUDA_SUCCESS) return result;
  *context = primaryContext();
  return CUDA_SUCCESS;
}

// Loading with relocations against the program's symbols is not offered; without any, it is a load.
CUresult loadFatBinaryWithRelocations(CUmodule* module, const void* fatCubin, const char**, void**,
                                      unsigned int relocations) {
  if (relocations != 0) return unknownEntry<1, 6>();
  return cuModuleLoadFatBinary(module, fatCubin);
}

void fatBinaryDestroyed(const void*) {}  // nothing is kept per fatbin here

// The arguments come in this order on purpose (the driver's own name says so).
CUresult loadDataHidden(const void* image, CUmodule* module, CUjit_option* options, void** values,
                        unsigned int count) {
  return cuModuleLoadDataEx(module, image, count, options, values);
}

CUresult prepareCompilers() { return CUDA_SUCCESS; }  // CUDA 13.1: the worker compiles, not the client

void* const gRuntimeInterface[13] = {
    size(13),
    entry(&loadFatBinary),
    entry(&primaryContextOf),
    entry(&unknownEntry<1, 3>),
    entry(&unknownEntry<1, 4>),
    entry(&unknownEntry<1, 5>),
    entry(&loadFatBinaryWithRelocations),
    entry(&fatBinaryDestroyed),
    entry(&loadDataHidden),
    entry(&unknownEntry<1, 9>),
    entry(&unknownEntry<1, 10>),
    entry(&unknownEntry<1, 11>),
    entry(&prepareCompilers),
};

// --- tools callback hooks: every switch off ---

// The runtime reads switch[callbackId] and calls the hooks only for a switch that is set.
volatile std::uint32_t gRuntimeCallbackSwitches[1024] = {};
volatile std::uint32_t gInternalCallbackSwitches[1024] = {};

void runtimeCallbackSwitches(volatile std::uint32_t** switches, std::size_t* count) {
  if (switches != nullptr) *switches = gRuntimeCallbackSwitches;
  if (count != nullptr) *count = 1024;
}
void internalCallbackSwitches(volatile std::uint32_t** switches, std::size_t* count) {
  if (switches != nullptr) *switches = gInternalCallbackSwitches;
  if (count != nullptr) *count = 14;
}

void* const gToolsCallbackHooks[7] = {
    size(7),
    entry(&unknownEntry<2, 1>),
    entry(&runtimeCallbackSwitches),
    entry(&unknownEntry<2, 3>),
    entry(&unknownEntry<2, 4>),
    entry(&unknownEntry<2, 5>),
    entry(&internalCallbackSwitches),
};

// --- tools TLS ---

void* const gToolsTls[3] = {
    size(3),
    entry(&cuCtxSetCurrent),
    entry(&cuCtxGetCurrent),
};

// --- context-local storage: no size entry; ends with a null ---

void* const gContextStorage[4] = {
    entry(&putContextValue),
    entry(&removeContextValue),
    entry(&getContextValue),
    nullptr,
};

// --- runtime integrity ---

CUresult runtimeIntegrity(std::uint32_t runtimeVersion, std::uint64_t unixSeconds, std::uint64_t* answer);

void* const gRuntimeIntegrity[3] = {
    size(3),
    entry(&runtimeIntegrity),
    nullptr,
};

// The inputs are what this shim itself reports to the runtime (the version, each device's UUID
// and PCI location), so that the runtime's own computation agrees.
CUresult runtimeIntegrity(std::uint32_t runtimeVersion, std::uint64_t unixSeconds, std::uint64_t* answer) {
  if (answer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int driverVersion = 0;
  cuDriverGetVersion(&driverVersion);
  IntegrityInputs inputs{};
  inputs.driverVersion = static_cast<std::uint32_t>(driverVersion);
  inputs.runtimeVersion = runtimeVersion;
  inputs.processId = static_cast<std::uint32_t>(getpid());
  inputs.threadId = static_cast<std::uint32_t>(pthread_self());
  inputs.cudartTable = reinterpret_cast<std::uintptr_t>(gRuntimeInterface);
  inputs.integrityTable = reinterpret_cast<std::uintptr_t>(gRuntimeIntegrity);
  inputs.function = reinterpret_cast<std::uintptr_t>(gRuntimeIntegrity[1]);
  inputs.unixSeconds = unixSeconds;
  std::vector<DeviceIdentity> devices;
  int count = 0;
  if (cuDeviceGetCount(&count) == CUDA_SUCCESS) {
    for (int device = 0; device < count; ++device) {
      DeviceIdentity identity{};
      CUuuid uuid{};
      cuDeviceGetUuid_v2(&uuid, device);
      std::memcpy(identity.uuid.data(), uuid.bytes, sizeof uuid.bytes);
      cuDeviceGetAttribute(&identity.pciDomain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, device);
      cuDeviceGetAttribute(&identity.pciBus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, device);
      cuDeviceGetAttribute(&identity.pciDevice, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, device);
      devices.push_back(identity);
    }
  }
  const std::array<std::uint64_t, 2> digest = runtimeIntegrityDigest(inputs, devices);
  answer[0] = digest[0];
  answer[1] = digest[1];
  return CUDA_SUCCESS;
}

// --- context type checks ---

// Every context here is a plain (not green) context.
CUresult contextType(CUcontext, int* type, CUcontext*) {
  if (type != nullptr) *type = 0;
  return CUDA_SUCCESS;
}
int primaryGreenContextsEnabled() { return 0; }

void* const gContextChecks[15] = {
    size(15),
    entry(&unknownEntry<6, 1>),  // creating a green context: the worker's client cannot partition the device
    entry(&contextType),
    entry(&primaryGreenContextsEnabled),
    entry(&unknownEntry<6, 4>),
    entry(&unknownEntry<6, 5>),
    entry(&unknownEntry<6, 6>),
    entry(&unknownEntry<6, 7>),
    entry(&unknownEntry<6, 8>),
    entry(&unknownEntry<6, 9>),
    entry(&unknownEntry<6, 10>),
    entry(&unknownEntry<6, 11>),
    entry(&unknownEntry<6, 12>),
    entry(&unknownEntry<6, 13>),
    entry(&unknownEntry<6, 14>),
};

struct Table {
  const Id* id;
  const void* table;
};
const Table kTables[] = {
    {&kRuntimeInterfaceId, gRuntimeInterface},
    {&kToolsCallbackHooksId, gToolsCallbackHooks},
    {&kToolsTlsId, gToolsTls},
    {&kContextStorageId, gContextStorage},
    {&kRuntimeIntegrityId, gRuntimeIntegrity},
    {&kContextChecksId, gContextChecks},
    {&kToolsContextId, toolsContextTable()},
};

void reportUnknownTable(const Id& id) {
  if (agileos::client::firstTime("export table:" + hex(id))) {
    AGILEOS_LOG_WARN(
        "cuGetExportTable: private driver table %s is not served by AgileOS; returning "
        "CUDA_ERROR_INVALID_VALUE",
        hex(id).c_str());
  }
}

}  // namespace

extern "C" {

CUresult cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  if (ppExportTable == nullptr || pExportTableId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Id id;
  std::memcpy(id.data(), pExportTableId->bytes, id.size());
  for (const Table& table : kTables) {
    if (*table.id == id) {
      *ppExportTable = table.table;
      return CUDA_SUCCESS;
    }
  }
  *ppExportTable = nullptr;
  reportUnknownTable(id);
  return CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
