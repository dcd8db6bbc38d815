// Device management (cudart exports). Device queries are answered from the
// description the worker sent once; synchronization, reset and limits go to
// the worker.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "client/cudart/device_properties.h"
#include "client/session/context_calls.h"
#include "client/session/enum_bits.h"
#include "client/session/error_state.h"
#include "client/session/pci_bus_id.h"
#include "client/session/thread_contexts.h"
#include "client/session/worker_calls.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;

namespace {

std::atomic<unsigned> gDeviceFlags{0};

// The device description, or the error that prevents having one.
cudaError_t requireDevice(int device, const agileos::v1::DeviceInfo** info) {
  cudaError_t error = cudaSuccess;
  *info = deviceInfo(&error);
  if (*info == nullptr) return error;
  if (device < 0 || device >= (*info)->device_count()) return cudaErrorInvalidDevice;
  return cudaSuccess;
}

PciLocation pciLocation(const agileos::v1::DeviceInfo& info) {
  const auto field = [&](cudaDeviceAttr attribute) {
    return static_cast<unsigned>(findAttribute(info, attribute).value_or(0));
  };
  return {field(cudaDevAttrPciDomainId), field(cudaDevAttrPciBusId), field(cudaDevAttrPciDeviceId)};
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return recordError(cudaErrorInvalidValue);
  cudaError_t error = cudaSuccess;
  const agileos::v1::DeviceInfo* info = deviceInfo(&error);
  *count = info != nullptr ? info->device_count() : 0;
  return recordError(error);
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return recordError(cudaErrorInvalidValue);
  *device = 0;  // a worker serves one device, always ordinal 0 for its clients
  return cudaSuccess;
}

// Both make the device's primary context current on the calling thread, as libcudart does (it
// replaces what was current; the one device's primary context is all there is).
cudaError_t cudaSetDevice(int device) {
  const agileos::v1::DeviceInfo* info = nullptr;
  if (cudaError_t error = requireDevice(device, &info); error != cudaSuccess) return recordError(error);
  bindPrimaryContextIfNoneCurrent();  // the runtime's one retain of the primary context
  setCurrentContext(primaryContext());
  return cudaSuccess;
}

cudaError_t cudaInitDevice(int device, unsigned int, unsigned int) {
  const agileos::v1::DeviceInfo* info = nullptr;
  if (cudaError_t error = requireDevice(device, &info); error != cudaSuccess) return recordError(error);
  bindPrimaryContextIfNoneCurrent();  // the runtime's one retain of the primary context
  setCurrentContext(primaryContext());
  return cudaSuccess;
}

cudaError_t cudaChooseDevice(int* device, const struct cudaDeviceProp* prop) {
  if (device == nullptr || prop == nullptr) return recordError(cudaErrorInvalidValue);
  const agileos::v1::DeviceInfo* info = nullptr;
  if (cudaError_t error = requireDevice(0, &info); error != cudaSuccess) return recordError(error);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return recordError(cudaErrorInvalidValue);
  const agileos::v1::DeviceInfo* info = nullptr;
  if (cudaError_t error = requireDevice(device, &info); error != cudaSuccess) return recordError(error);
  fillDeviceProperties(*info, prop);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (value == nullptr) return recordError(cudaErrorInvalidValue);
  const agileos::v1::DeviceInfo* info = nullptr;
  if (cudaError_t error = requireDevice(device, &info); error != cudaSuccess) return recordError(error);
  std::optional<int> found = findAttribute(*info, attr);
  if (!found) return recordError(cudaErrorInvalidValue);
  *value = *found;
  return cudaSuccess;
}

// Formatted as libcudart does: "%04X:%02X:%02X.0" (domain, bus, device; upper case),
// cut to len - 1 characters and always NUL-terminated.
cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
  if (pciBusId == nullptr || len <= 0) return recordError(cudaErrorInvalidValue);
  const agileos::v1::DeviceInfo* info = nullptr;
  if (cudaError_t error = requireDevice(device, &info); error != cudaSuccess) return recordError(error);
  const PciLocation location = pciLocation(*info);
  std::snprintf(pciBusId, static_cast<std::size_t>(len), "%04X:%02X:%02X.0", location.domain, location.bus,
                location.device);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetByPCIBusId(int* device, const char* pciBusId) {
  if (device == nullptr || pciBusId == nullptr) return recordError(cudaErrorInvalidValue);
  PciLocation wanted;
  unsigned function = 0;
  if (!parsePciBusId(pciBusId, &wanted, &function)) return recordError(cudaErrorInvalidValue);
  const agileos::v1::DeviceInfo* info = nullptr;
  if (cudaError_t error = requireDevice(0, &info); error != cudaSuccess) return recordError(error);
  const PciLocation own = pciLocation(*info);
  if (wanted.domain != own.domain || wanted.bus != own.bus || wanted.device != own.device || function != 0) {
    return recordError(cudaErrorInvalidDevice);  // no device of this client sits there
  }
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  const agileos::v1::DeviceInfo* info = nullptr;
  if (cudaError_t error = requireDevice(0, &info); error != cudaSuccess) return recordError(error);
  if (leastPriority != nullptr) *leastPriority = info->least_stream_priority();
  if (greatestPriority != nullptr) *greatestPriority = info->greatest_stream_priority();
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return recordError(cudaErrorInvalidValue);
  cudaError_t error = cudaSuccess;
  const agileos::v1::DeviceInfo* info = deviceInfo(&error);
  // As with no driver installed: version 0, and no error.
  *driverVersion = info != nullptr ? info->driver_version() : 0;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return recordError(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

// Scheduling flags describe how a host thread waits for the GPU; under AgileOS
// the waiting happens in the worker, so the flags are kept for cudaGetDeviceFlags
// and otherwise have no effect.
cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  constexpr unsigned kKnown =
      cudaDeviceScheduleMask | cudaDeviceMapHost | cudaDeviceLmemResizeToMax | cudaDeviceSyncMemops;
  if ((flags & ~kKnown) != 0) return recordError(cudaErrorInvalidValue);
  gDeviceFlags = flags;
  return cudaSuccess;
}

// cudaDeviceMapHost is reported where page-locked memory is mapped for the device (the shared
// memory transport, host_allocations.h), as natively, where it is always set.
cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  if (flags == nullptr) return recordError(cudaErrorInvalidValue);
  const unsigned mapHost = Connection::instance().sharesHostMemory() ? unsigned{cudaDeviceMapHost} : 0u;
  *flags = gDeviceFlags.load() | mapHost;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  bindPrimaryContextIfNoneCurrent();
  return recordError(synchronizeDevice());
}

cudaError_t cudaDeviceReset(void) { return recordError(resetDevice()); }

cudaError_t cudaDeviceGetLimit(size_t* pValue, enum cudaLimit limit) {
  if (pValue == nullptr) return recordError(cudaErrorInvalidValue);
  std::uint64_t value = 0;
  const cudaError_t error = contextLimit(limit, &value);
  if (error == cudaSuccess) *pValue = value;
  return recordError(error);
}

cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value) {
  return recordError(setContextLimit(limit, value));
}

cudaError_t cudaCtxResetPersistingL2Cache(void) {
  bindPrimaryContextIfNoneCurrent();
  return recordError(resetPersistingL2Cache());
}

// The context's preferred L1/shared-memory split, kept by the worker's context.
cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache* pCacheConfig) {
  if (pCacheConfig == nullptr) return recordError(cudaErrorInvalidValue);
  int config = 0;
  const cudaError_t error = contextCacheConfig(&config);
  if (error == cudaSuccess) *pCacheConfig = static_cast<cudaFuncCache>(config);
  return recordError(error);
}

cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache cacheConfig) {
  return recordError(setContextCacheConfig(cacheConfig));
}

// Fixed four-byte banks (context_calls.h): the query answers that, a valid setting does nothing.
cudaError_t cudaDeviceGetSharedMemConfig(enum cudaSharedMemConfig* pConfig) {
  if (pConfig == nullptr) return recordError(cudaErrorInvalidValue);
  if (cudaError_t error = checkDeviceOrdinal(0); error != cudaSuccess) return recordError(error);
  *pConfig = static_cast<cudaSharedMemConfig>(kFixedSharedMemBankSize);
  return cudaSuccess;
}

cudaError_t cudaDeviceSetSharedMemConfig(enum cudaSharedMemConfig config) {
  if (cudaError_t error = checkDeviceOrdinal(0); error != cudaSuccess) return recordError(error);
  return recordError(checkSharedMemBankSetting(enumBits(config)));
}

}  // extern "C"
