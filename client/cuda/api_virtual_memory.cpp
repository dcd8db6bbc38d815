// The driver's virtual-memory management (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess,
// ...), on the worker's memory manager: reservations lie in the client's user range, physical
// allocations are charged to its quota, and handles and mappings are the client's own
// (memmgr/memory_manager.h). Here the arguments are checked the way the driver checks them, and
// what AgileOS does not offer fails closed: shareable handles (the memory never leaves the worker),
// GPUDirect RDMA, read-only or no-access mappings (every mapping is read/write for the device),
// and offsets into an allocation (the driver itself requires 0).
#include <cuda.h>

#include <cstdio>
#include <map>
#include <mutex>

#include "client/common/log.h"
#include "client/cuda/driver_call.h"
#include "client/session/device_allocations.h"
#include "client/session/memory_calls.h"
#include "cuda_api.gen.h"  // checks these definitions against the declarations

using namespace agileos::client;
using namespace agileos::client::cuda_shim;
namespace v1 = agileos::v1;

namespace {

// What the program asked for at cuMemCreate, returned by cuMemGetAllocationPropertiesFromHandle,
// kept while the handle has references (cuMemCreate's and cuMemRetainAllocationHandle's, each
// dropped by a cuMemRelease, as the worker counts them). The worker's numbers are the handles.
struct HandleRecord {
  CUmemAllocationProp properties{};
  std::uint64_t references = 0;
};
std::mutex gMutex;
auto& gHandles = *new std::map<CUmemGenericAllocationHandle, HandleRecord>();

void sayOnce(const char* key, const char* message) {
  if (firstTime(key)) std::fprintf(stderr, "[agileos warn] %s\n", message);
}

// The one kind of memory a client can have: pinned device memory of its device, no shareable
// handle. INVALID_VALUE for what the driver would refuse, NOT_SUPPORTED for what it would do and
// AgileOS does not. Generic compression is asked of the worker, whose driver may create the memory
// without it, as a native driver may (cuMemGetAllocationPropertiesFromHandle tells).
CUresult checkProperties(const CUmemAllocationProp* prop) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireDevice(prop->location.id); result != CUDA_SUCCESS) return result;
  if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE) {
    sayOnce("vmm-shareable",
            "cuMemCreate: shareable handles (requestedHandleTypes) are not supported by AgileOS: the "
            "memory never leaves the worker; returning CUDA_ERROR_NOT_SUPPORTED");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (prop->allocFlags.compressionType != CU_MEM_ALLOCATION_COMP_NONE &&
      prop->allocFlags.compressionType != CU_MEM_ALLOCATION_COMP_GENERIC) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (prop->allocFlags.gpuDirectRDMACapable != 0) {
    sayOnce("vmm-flags",
            "cuMemCreate: GPUDirect RDMA memory is not supported by AgileOS; returning "
            "CUDA_ERROR_NOT_SUPPORTED");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}

CUresult step(v1::VirtualMemory::Step which, std::uint64_t address, std::uint64_t size,
              v1::VirtualMemoryResult* result = nullptr, std::uint64_t alignment = 0,
              std::uint64_t handle = 0, bool compressible = false) {
  v1::VirtualMemory request;
  request.set_step(which);
  request.set_compressible(compressible);
  request.set_address(address);
  request.set_size(size);
  request.set_alignment(alignment);
  request.set_handle(handle);
  return inContext([&] { return virtualMemoryStep(request, result); });
}

}  // namespace

extern "C" {

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  if (granularity == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = checkProperties(prop); result != CUDA_SUCCESS) return result;
  v1::VirtualMemoryResult answer;
  if (CUresult result = step(v1::VirtualMemory::GRANULARITY, 0, 0, &answer); result != CUDA_SUCCESS)
    return result;
  *granularity = answer.granularity();  // the worker's, which every size must be a multiple of
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  (void)addr;  // a hint the driver may ignore; the worker places every reservation itself
  if (ptr == nullptr || size == 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  v1::VirtualMemoryResult answer;
  if (CUresult result = step(v1::VirtualMemory::RESERVE, 0, size, &answer, alignment); result != CUDA_SUCCESS)
    return result;
  *ptr = answer.address();
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  if (ptr == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  return step(v1::VirtualMemory::FREE_ADDRESS, ptr, size);
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                     unsigned long long flags) {
  if (handle == nullptr || size == 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = checkProperties(prop); result != CUDA_SUCCESS) return result;
  v1::VirtualMemoryResult answer;
  const bool compressible = prop->allocFlags.compressionType == CU_MEM_ALLOCATION_COMP_GENERIC;
  if (CUresult result = step(v1::VirtualMemory::CREATE, 0, size, &answer, 0, 0, compressible);
      result != CUDA_SUCCESS) {
    return result;
  }
  *handle = answer.handle();
  HandleRecord record{*prop, 1};
  // What was granted, as the driver reports it: compression only where the worker's driver gave it.
  record.properties.allocFlags.compressionType =
      answer.compressed() ? CU_MEM_ALLOCATION_COMP_GENERIC : CU_MEM_ALLOCATION_COMP_NONE;
  std::lock_guard lock(gMutex);
  gHandles[answer.handle()] = record;
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  const CUresult result = step(v1::VirtualMemory::RELEASE, 0, 0, nullptr, 0, handle);
  if (result == CUDA_SUCCESS) {
    std::lock_guard lock(gMutex);
    if (auto it = gHandles.find(handle); it != gHandles.end() && --it->second.references == 0)
      gHandles.erase(it);
  }
  return result;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  // The driver requires offset 0 and flags 0 (cuda.h: "currently must be zero").
  if (ptr == 0 || size == 0 || offset != 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return step(v1::VirtualMemory::MAP, ptr, size, nullptr, 0, handle);
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  if (ptr == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  return step(v1::VirtualMemory::UNMAP, ptr, size);
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (ptr == 0 || size == 0 || desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult result = requireDevice(desc[i].location.id); result != CUDA_SUCCESS) return result;
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) continue;
    if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ)
      return CUDA_ERROR_INVALID_VALUE;
    sayOnce("vmm-access",
            "cuMemSetAccess: read-only and no-access mappings are not supported by AgileOS (mappings are "
            "read/write); returning CUDA_ERROR_NOT_SUPPORTED");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return step(v1::VirtualMemory::SET_ACCESS, ptr, size);
}

CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  if (flags == nullptr || location == nullptr || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireDevice(location->id); result != CUDA_SUCCESS) return result;
  v1::VirtualMemoryResult answer;
  if (CUresult result = step(v1::VirtualMemory::ALLOCATION_OF, ptr, 0, &answer); result != CUDA_SUCCESS)
    return result;
  *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;  // every mapping is
  return CUDA_SUCCESS;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  if (handle == nullptr || addr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  v1::VirtualMemoryResult answer;
  if (CUresult result = step(v1::VirtualMemory::RETAIN, reinterpret_cast<std::uint64_t>(addr), 0, &answer);
      result != CUDA_SUCCESS) {
    return result;
  }
  *handle = answer.handle();  // the handle it was mapped with, as natively; released like it
  std::lock_guard lock(gMutex);
  // A handle the worker knows but this record lost (released to none while still mapped) comes
  // back without its properties: the worker does not keep what the program asked for.
  if (auto it = gHandles.find(answer.handle()); it != gHandles.end()) ++it->second.references;
  return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                CUmemGenericAllocationHandle handle) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::lock_guard lock(gMutex);
  auto it = gHandles.find(handle);
  if (it == gHandles.end()) return CUDA_ERROR_INVALID_VALUE;
  *prop = it->second.properties;
  return CUDA_SUCCESS;
}

}  // extern "C"
