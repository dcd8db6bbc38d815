#include "worker/protected_modules/worker_protected_memory.h"

#include "agileos/module_abi.h"

namespace agileos::worker::protected_modules {
namespace {

// The module ABI's code for a driver result (0 stays 0).
int toModuleCode(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS:
      return AGILEOS_MODULE_OK;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return AGILEOS_MODULE_ENOMEM;
    case CUDA_ERROR_INVALID_VALUE:
      return AGILEOS_MODULE_EINVAL;
    default:
      return AGILEOS_MODULE_EIO;
  }
}

}  // namespace

int WorkerProtectedMemory::allocate(std::uint64_t bytes, std::uint64_t* device_address) {
  memmgr::DevicePtr address = 0;
  const CUresult result = memory_.allocateProtected(client_, bytes, &address);
  if (result != CUDA_SUCCESS) return toModuleCode(result);
  *device_address = address;
  return AGILEOS_MODULE_OK;
}

int WorkerProtectedMemory::free(std::uint64_t device_address) {
  // freeProtected refuses anything that is not a live protected allocation of this client.
  const CUresult result = memory_.freeProtected(client_, device_address);
  return result == CUDA_ERROR_INVALID_VALUE ? AGILEOS_MODULE_EPERM : toModuleCode(result);
}

// Copies are synchronous on the legacy default stream: when they return, the bytes are on the
// device (or in `dst`), so the plugin's buffers may be reused at once. The calling thread is a
// transport or control thread, so the context is bound first.
int WorkerProtectedMemory::write(std::uint64_t device_address, const void* src, std::uint64_t bytes) {
  if (const CUresult bound = gpu_.bindContext(); bound != CUDA_SUCCESS) return toModuleCode(bound);
  return toModuleCode(gpu_.copyHostToDevice(device_address, src, bytes, nullptr, false));
}

int WorkerProtectedMemory::read(std::uint64_t device_address, void* dst, std::uint64_t bytes) {
  if (const CUresult bound = gpu_.bindContext(); bound != CUDA_SUCCESS) return toModuleCode(bound);
  return toModuleCode(gpu_.copyDeviceToHost(dst, device_address, bytes, nullptr, false));
}

}  // namespace agileos::worker::protected_modules
