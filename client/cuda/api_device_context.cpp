// Initialization, devices and contexts (libcuda.so.1 exports). A worker serves one device, seen as
// ordinal 0, through one CUDA context; client/cuda/contexts.h says how the program's contexts map
// onto it.
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "client/cuda/context_storage.h"
#include "client/cuda/driver_call.h"
#include "client/session/context_calls.h"
#include "client/session/enum_bits.h"
#include "client/session/error_state.h"
#include "client/session/pci_bus_id.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;
namespace v1 = agileos::v1;

namespace {

// The context flags cuCtxCreate and cuDevicePrimaryCtxSetFlags accept.
constexpr unsigned kKnownContextFlags = CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX |
                                        CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE |
                                        CU_CTX_SYNC_MEMOPS;

CUresult createContextOn(CUcontext* pctx, unsigned flags, CUdevice dev) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireDevice(dev); result != CUDA_SUCCESS) return result;
  if ((flags & ~kKnownContextFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  const CUcontext context = createContext(flags);
  if (!pushCurrentContext(context)) {  // a new context is made current, as the driver does
    destroyContext(context);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *pctx = context;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return initialize();
}

CUresult cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult result = CUDA_SUCCESS;
  const v1::DeviceInfo* info = deviceDescription(&result);
  // As with no driver reachable: the version this shim was built for.
  *driverVersion = info != nullptr ? info->driver_version() : CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  CUresult result = CUDA_SUCCESS;
  const v1::DeviceInfo* info = deviceDescription(&result);
  *count = info != nullptr ? info->device_count() : 0;
  return result;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireDevice(ordinal); result != CUDA_SUCCESS) return result;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireDevice(dev); result != CUDA_SUCCESS) return result;
  CUresult result = CUDA_SUCCESS;
  const v1::DeviceInfo* info = deviceDescription(&result);
  const std::size_t n = std::min(info->name().size(), static_cast<std::size_t>(len) - 1);
  std::memcpy(name, info->name().data(), n);
  name[n] = '\0';
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireDevice(dev); result != CUDA_SUCCESS) return result;
  CUresult result = CUDA_SUCCESS;
  const v1::DeviceInfo* info = deviceDescription(&result);
  if (info->uuid().size() != sizeof uuid->bytes) return CUDA_ERROR_UNKNOWN;
  std::memcpy(uuid->bytes, info->uuid().data(), sizeof uuid->bytes);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireDevice(dev); result != CUDA_SUCCESS) return result;
  CUresult result = CUDA_SUCCESS;
  *bytes = deviceDescription(&result)->total_global_mem();  // the client's quota, as cudaMemGetInfo's total
  return CUDA_SUCCESS;
}

// CUdevice_attribute and cudaDeviceAttr number every attribute alike; the worker reports them
// by that number. An attribute it did not report is CUDA_ERROR_INVALID_VALUE, as an unknown one is.
CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireDevice(dev); result != CUDA_SUCCESS) return result;
  CUresult result = CUDA_SUCCESS;
  for (const v1::DeviceAttribute& attribute : deviceDescription(&result)->attributes()) {
    if (attribute.attribute() == static_cast<int>(attrib)) {
      *pi = attribute.value();
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  if (major == nullptr || minor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = cuDeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
      result != CUDA_SUCCESS) {
    return result;
  }
  return cuDeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
}

// A worker's client has one device, which is not its own peer (as cudaDeviceCanAccessPeer(0, 0)
// answers natively).
CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireDevice(dev); result != CUDA_SUCCESS) return result;
  if (CUresult result = requireDevice(peerDev); result != CUDA_SUCCESS) return result;
  *canAccessPeer = 0;
  return CUDA_SUCCESS;
}

// The only device pair is device 0 with itself, which the driver refuses (as the runtime shim's
// cudaDeviceGetP2PAttribute answers).
CUresult cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib, CUdevice srcDevice,
                                 CUdevice dstDevice) {
  (void)attrib;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireDevice(srcDevice); result != CUDA_SUCCESS) return result;
  if (CUresult result = requireDevice(dstDevice); result != CUDA_SUCCESS) return result;
  return CUDA_ERROR_INVALID_DEVICE;
}

// Formatted as the runtime shim's cudaDeviceGetPCIBusId ("%04X:%02X:%02X.0": domain, bus, device;
// upper case), cut to len - 1 characters and always NUL-terminated.
CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  int domain = 0, bus = 0, device = 0;
  for (const auto& [attribute, value] : {std::pair{CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, &domain},
                                         std::pair{CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &bus},
                                         std::pair{CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, &device}}) {
    if (CUresult result = cuDeviceGetAttribute(value, attribute, dev); result != CUDA_SUCCESS) return result;
  }
  std::snprintf(pciBusId, static_cast<std::size_t>(len), "%04X:%02X:%02X.0", static_cast<unsigned>(domain),
                static_cast<unsigned>(bus), static_cast<unsigned>(device));
  return CUDA_SUCCESS;
}

// The one device answers to its own PCI location (any of the spellings cuDeviceGetPCIBusId's
// output has); any other location is no device of this client.
CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId) {
  if (dev == nullptr || pciBusId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  PciLocation wanted;
  unsigned function = 0;
  if (!parsePciBusId(pciBusId, &wanted, &function)) return CUDA_ERROR_INVALID_VALUE;
  int domain = 0, bus = 0, device = 0;
  for (const auto& [attribute, value] : {std::pair{CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, &domain},
                                         std::pair{CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &bus},
                                         std::pair{CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, &device}}) {
    if (CUresult result = cuDeviceGetAttribute(value, attribute, kOnlyDevice); result != CUDA_SUCCESS)
      return result;
  }
  if (wanted.domain != static_cast<unsigned>(domain) || wanted.bus != static_cast<unsigned>(bus) ||
      wanted.device != static_cast<unsigned>(device) || function != 0) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *dev = kOnlyDevice;
  return CUDA_SUCCESS;
}

// --- the primary context ---

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireDevice(dev); result != CUDA_SUCCESS) return result;
  retainPrimary();
  *pctx = primaryContext();
  return CUDA_SUCCESS;
}

// The last release ends the primary context as the driver's does: a runtime in the program finds
// its context-local state gone and makes it afresh at the next retain.
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  if (CUresult result = requireDevice(dev); result != CUDA_SUCCESS) return result;
  if (CUresult result = releasePrimary(); result != CUDA_SUCCESS) return result;
  if (!primaryActive()) clearContextValues(primaryContext());
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

// Destroys every allocation, stream and event of the context, as cudaDeviceReset does; loaded
// modules stay loaded (the worker keeps code across a reset).
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  if (CUresult result = requireDevice(dev); result != CUDA_SUCCESS) return result;
  clearContextValues(primaryContext());
  return toDriverResult(resetDevice());
}
CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireDevice(dev); result != CUDA_SUCCESS) return result;
  *flags = contextFlags(primaryContext());
  *active = primaryActive() ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  if (CUresult result = requireDevice(dev); result != CUDA_SUCCESS) return result;
  if ((flags & ~kKnownContextFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  setContextFlags(primaryContext(), flags);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

// --- contexts ---

CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return createContextOn(pctx, flags, dev);
}
CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return createContextOn(pctx, flags, dev);
}

// Execution-affinity and green-context parameters partition the device, which a worker's
// client cannot do: only their absence is accepted.
CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams, unsigned int flags,
                        CUdevice dev) {
  if (numParams < 0 || (numParams > 0 && paramsArray == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  if (numParams > 0) return CUDA_ERROR_NOT_SUPPORTED;
  return createContextOn(pctx, flags, dev);
}
CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams, unsigned int flags,
                        CUdevice dev) {
  if (ctxCreateParams != nullptr &&
      (ctxCreateParams->numExecAffinityParams != 0 || ctxCreateParams->cigParams != nullptr)) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return createContextOn(pctx, flags, dev);
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == primaryContext()) return CUDA_ERROR_INVALID_CONTEXT;  // released, never destroyed
  if (CUresult result = destroyContext(ctx); result != CUDA_SUCCESS) return result;
  clearContextValues(ctx);
  return CUDA_SUCCESS;
}
CUresult cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  *pctx = currentContext();
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  if (ctx != nullptr && !isLiveContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  setCurrentContext(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  if (ctx == nullptr || !isLiveContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  return pushCurrentContext(ctx) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuCtxPushCurrent(CUcontext ctx) { return cuCtxPushCurrent_v2(ctx); }

CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  CUcontext popped = popCurrentContext();
  if (popped == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx != nullptr) *pctx = popped;
  return CUDA_SUCCESS;
}
CUresult cuCtxPopCurrent(CUcontext* pctx) { return cuCtxPopCurrent_v2(pctx); }

CUresult cuCtxGetDevice(CUdevice* device) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  *device = kOnlyDevice;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == nullptr) return cuCtxGetDevice(device);
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  if (!isLiveContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *device = kOnlyDevice;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned int* flags) {
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  *flags = contextFlags(workingContext());
  return CUDA_SUCCESS;
}

CUresult cuCtxSetFlags(unsigned int flags) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  if ((flags & ~kKnownContextFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  setContextFlags(workingContext(), flags);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  if (ctx != nullptr && !isLiveContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *version = 3020;  // what the driver reports for every context made through the v2 API and later
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize() { return inContext(synchronizeDevice); }

CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  if (ctx != nullptr && !isLiveContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  return inContext(synchronizeDevice);
}

// CUlimit and cudaLimit number the limits alike; the worker charges and applies them.
CUresult cuCtxGetLimit(size_t* pvalue, CUlimit limit) {
  if (pvalue == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t value = 0;
  if (CUresult result = inContext([&] { return contextLimit(static_cast<int>(limit), &value); });
      result != CUDA_SUCCESS) {
    return result;
  }
  *pvalue = value;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  return inContext([&] { return setContextLimit(static_cast<int>(limit), value); });
}

CUresult cuCtxGetCacheConfig(CUfunc_cache* pconfig) {
  if (pconfig == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int config = 0;
  if (CUresult result = inContext([&] { return contextCacheConfig(&config); }); result != CUDA_SUCCESS)
    return result;
  *pconfig = static_cast<CUfunc_cache>(config);
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCacheConfig(CUfunc_cache config) {
  return inContext([&] { return setContextCacheConfig(static_cast<int>(config)); });
}

// Fixed four-byte banks (client/session/context_calls.h).
CUresult cuCtxGetSharedMemConfig(CUsharedconfig* pConfig) {
  if (pConfig == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  *pConfig = static_cast<CUsharedconfig>(kFixedSharedMemBankSize);
  return CUDA_SUCCESS;
}

CUresult cuCtxSetSharedMemConfig(CUsharedconfig config) {
  return inContext([&] { return checkSharedMemBankSetting(enumBits(config)); });
}

CUresult cuCtxResetPersistingL2Cache() {
  return inContext([] { return resetPersistingL2Cache(); });
}

CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  CUresult result = CUDA_SUCCESS;
  const v1::DeviceInfo* info = deviceDescription(&result);
  if (info == nullptr) return result;
  if (leastPriority != nullptr) *leastPriority = info->least_stream_priority();
  if (greatestPriority != nullptr) *greatestPriority = info->greatest_stream_priority();
  return CUDA_SUCCESS;
}

}  // extern "C"
