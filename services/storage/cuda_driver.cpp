#include "services/storage/cuda_driver.h"

#include <dlfcn.h>

namespace agileos::services::storage {
namespace {

using GetProcAddress = decltype(&::cuGetProcAddress);  // cuGetProcAddress_v2's signature

struct LoadedDriver {
  CudaDriver driver;
  std::string failure;  // empty: loaded
};

// Resolves `symbol` (a base name) into *entry; false with *failure set when it is missing.
template <typename Entry>
bool resolve(GetProcAddress get_proc_address, const char* symbol, Entry* entry, std::string* failure) {
  void* address = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  const CUresult result =
      get_proc_address(symbol, &address, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  if (result != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || address == nullptr) {
    *failure = std::string("libcuda.so.1 lacks ") + symbol + " (driver older than CUDA " +
               std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10) + "?)";
    return false;
  }
  *entry = reinterpret_cast<Entry>(address);
  return true;
}

LoadedDriver load() {
  LoadedDriver loaded;
  void* library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = ::dlerror();
    loaded.failure =
        std::string("cannot load the CUDA driver: ") + (error != nullptr ? error : "libcuda.so.1");
    return loaded;
  }
  auto get_proc_address = reinterpret_cast<GetProcAddress>(::dlsym(library, "cuGetProcAddress_v2"));
  if (get_proc_address == nullptr) {
    loaded.failure = "libcuda.so.1 has no cuGetProcAddress_v2 (driver older than CUDA 12)";
    return loaded;
  }
  CudaDriver& d = loaded.driver;
  std::string& f = loaded.failure;
  // #symbol is the name as written (the base name), decltype in CudaDriver the versioned one.
#define AGILEOS_RESOLVE(field, symbol) resolve(get_proc_address, #symbol, &d.field, &f)
  const bool all =
      AGILEOS_RESOLVE(getErrorName, cuGetErrorName) && AGILEOS_RESOLVE(init, cuInit) &&
      AGILEOS_RESOLVE(deviceGet, cuDeviceGet) &&
      AGILEOS_RESOLVE(primaryCtxRetain, cuDevicePrimaryCtxRetain) &&
      AGILEOS_RESOLVE(ctxSetCurrent, cuCtxSetCurrent) &&
      AGILEOS_RESOLVE(memImportFromShareableHandle, cuMemImportFromShareableHandle) &&
      AGILEOS_RESOLVE(memGetAllocationPropertiesFromHandle, cuMemGetAllocationPropertiesFromHandle) &&
      AGILEOS_RESOLVE(memGetAllocationGranularity, cuMemGetAllocationGranularity) &&
      AGILEOS_RESOLVE(memAddressReserve, cuMemAddressReserve) &&
      AGILEOS_RESOLVE(memAddressFree, cuMemAddressFree) && AGILEOS_RESOLVE(memMap, cuMemMap) &&
      AGILEOS_RESOLVE(memUnmap, cuMemUnmap) && AGILEOS_RESOLVE(memSetAccess, cuMemSetAccess) &&
      AGILEOS_RESOLVE(memRelease, cuMemRelease) && AGILEOS_RESOLVE(memHostAlloc, cuMemHostAlloc) &&
      AGILEOS_RESOLVE(memFreeHost, cuMemFreeHost) && AGILEOS_RESOLVE(streamCreate, cuStreamCreate) &&
      AGILEOS_RESOLVE(streamDestroy, cuStreamDestroy) &&
      AGILEOS_RESOLVE(streamSynchronize, cuStreamSynchronize) &&
      AGILEOS_RESOLVE(memcpyHtoDAsync, cuMemcpyHtoDAsync);
#undef AGILEOS_RESOLVE
  if (!all) loaded.driver = CudaDriver{};
  return loaded;
}

}  // namespace

std::string CudaDriver::describe(const char* call, CUresult result) const {
  const char* name = nullptr;
  if (getErrorName == nullptr || getErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) {
    return std::string(call) + ": CUresult " + std::to_string(static_cast<int>(result));
  }
  return std::string(call) + ": " + name;
}

const CudaDriver* loadCudaDriver(std::string* reason) {
  static const LoadedDriver loaded = load();  // once, thread-safe (magic static)
  if (!loaded.failure.empty()) {
    *reason = loaded.failure;
    return nullptr;
  }
  return &loaded.driver;
}

}  // namespace agileos::services::storage
