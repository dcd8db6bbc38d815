// What a pointer is (cuPointerGetAttribute(s), cuMemGetAddressRange; libcuda.so.1 exports),
// answered from the session's own records as cudaPointerGetAttributes is: device memory is an
// address in the client's user range, page-locked host memory one the session allocated. Nothing
// here reaches the worker, and nothing here is trusted by it: a wrong answer only misleads the
// program that asked.
//
// Page-locked host memory has a device pointer only when it is mapped for the device (the
// worker's address); managed memory is the device's type at one address for host and device. Attributes about
// IPC, P2P tokens, memory pools and RDMA fail closed.
#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "client/common/log.h"
#include "client/cuda/driver_call.h"
#include "client/session/copy_engine.h"
#include "client/session/device_allocations.h"
#include "client/session/host_allocations.h"
#include "client/session/thread_contexts.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;

namespace {

enum class Kind { kUnknown, kDevice, kHost, kManaged };

Kind kindOf(CUdeviceptr ptr) {
  const auto* address = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(ptr));
  if (const auto host = HostAllocations::instance().kindOf(address)) {
    return *host == HostAllocations::Kind::kManaged ? Kind::kManaged : Kind::kHost;
  }
  if (ptr != 0 && isDeviceAddress(address)) return Kind::kDevice;
  return Kind::kUnknown;
}

template <typename T>
CUresult put(void* data, T value) {
  std::memcpy(data, &value, sizeof value);
  return CUDA_SUCCESS;
}

CUresult unsupportedAttribute(int attribute) {
  static std::atomic<bool> logged{false};
  if (!logged.exchange(true)) {
    AGILEOS_LOG_WARN(
        "cuPointerGetAttribute(s) of attribute %d is not supported by AgileOS; returning "
        "CUDA_ERROR_NOT_SUPPORTED",
        static_cast<int>(attribute));
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

// One attribute of a pointer this session knows (`kind` is not kUnknown).
// `attribute` is an int: a program may pass any bit pattern, which an enum cannot hold.
CUresult attributeOf(void* data, int attribute, CUdeviceptr ptr, Kind kind) {
  std::uint64_t base = 0, size = 0;
  const bool inAllocation = kind == Kind::kDevice && deviceAllocationContaining(ptr, &base, &size);
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      return put(data, primaryContext());
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:  // managed memory reports the device's type, as natively
      return put(data,
                 static_cast<unsigned>(kind == Kind::kHost ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE));
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      if (kind == Kind::kHost) {  // mapped or registered host memory: the worker's address
        const std::optional<std::uint64_t> device = HostAllocations::instance().deviceAddressOf(
            reinterpret_cast<const void*>(static_cast<std::uintptr_t>(ptr)));
        if (!device) return CUDA_ERROR_INVALID_VALUE;  // not mapped for the device
        return put(data, static_cast<CUdeviceptr>(*device));
      }
      return put(data, ptr);
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (kind == Kind::kDevice) return CUDA_ERROR_INVALID_VALUE;
      return put(data, reinterpret_cast<void*>(static_cast<std::uintptr_t>(ptr)));
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      return put(data,
                 static_cast<int>(1));  // a worker's copies and fills are synchronous with respect to it
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      // Unique among live allocations: the allocation's base (its start, for page-locked memory).
      return put(data, static_cast<unsigned long long>(inAllocation ? base : ptr));
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      return put(data, static_cast<int>(kind == Kind::kManaged ? 1 : 0));
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
      return put(data, static_cast<int>(0));
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      return put(data, static_cast<int>(kOnlyDevice));
    case CU_POINTER_ATTRIBUTE_MAPPED:
      return put(data, static_cast<int>(kind != Kind::kHost ? 1 : 0));
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      if (!inAllocation) return CUDA_ERROR_INVALID_VALUE;
      return put(data, static_cast<CUdeviceptr>(base));
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      if (!inAllocation) return CUDA_ERROR_INVALID_VALUE;
      return put(data, static_cast<size_t>(size));
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      return put(data, static_cast<unsigned long long>(CU_MEM_HANDLE_TYPE_NONE));
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      return put(data, static_cast<unsigned>(CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE));
    default:
      return unsupportedAttribute(attribute);
  }
}

}  // namespace

extern "C" {

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  const Kind kind = kindOf(ptr);
  if (kind == Kind::kUnknown) return CUDA_ERROR_INVALID_VALUE;  // not memory of this session
  return attributeOf(data, static_cast<int>(attribute), ptr, kind);
}

// Unlike cuPointerGetAttribute, a pointer this session does not know is no error: each attribute
// gets its "none" value (zero, -2 for the device ordinal, and the pointer itself as its host
// pointer, as the driver answers).
CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes, void** data,
                                CUdeviceptr ptr) {
  if (numAttributes == 0 || attributes == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  const Kind kind = kindOf(ptr);
  for (unsigned int i = 0; i < numAttributes; ++i) {
    if (data[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
  }
  for (unsigned int i = 0; i < numAttributes; ++i) {
    int attribute = 0;  // read as an integer: the program may pass any bit pattern
    static_assert(sizeof attribute == sizeof attributes[i]);
    std::memcpy(&attribute, &attributes[i], sizeof attribute);
    if (kind == Kind::kUnknown) {
      if (attribute == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) {
        put(data[i], static_cast<int>(-2));
      } else if (attribute == CU_POINTER_ATTRIBUTE_HOST_POINTER) {
        put(data[i], reinterpret_cast<void*>(static_cast<std::uintptr_t>(ptr)));  // as the driver answers
      } else if (attribute == CU_POINTER_ATTRIBUTE_CONTEXT ||
                 attribute == CU_POINTER_ATTRIBUTE_DEVICE_POINTER ||
                 attribute == CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE) {
        put(data[i], static_cast<void*>(nullptr));
      } else if (attribute == CU_POINTER_ATTRIBUTE_BUFFER_ID ||
                 attribute == CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES ||
                 attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR ||
                 attribute == CU_POINTER_ATTRIBUTE_RANGE_SIZE) {
        put(data[i], static_cast<std::uint64_t>(0));
      } else if (attribute == CU_POINTER_ATTRIBUTE_MEMORY_TYPE ||
                 attribute == CU_POINTER_ATTRIBUTE_SYNC_MEMOPS ||
                 attribute == CU_POINTER_ATTRIBUTE_IS_MANAGED || attribute == CU_POINTER_ATTRIBUTE_MAPPED ||
                 attribute == CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE ||
                 attribute == CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE ||
                 attribute == CU_POINTER_ATTRIBUTE_ACCESS_FLAGS) {
        put(data[i], static_cast<std::uint32_t>(0));
      } else {
        return unsupportedAttribute(attribute);
      }
      continue;
    }
    const CUresult result = attributeOf(data[i], attribute, ptr, kind);
    if (result == CUDA_ERROR_INVALID_VALUE) {
      // An attribute this kind of memory lacks (a host pointer of device memory): its "none" value.
      if (attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR ||
          attribute == CU_POINTER_ATTRIBUTE_RANGE_SIZE) {
        put(data[i], static_cast<std::uint64_t>(0));
      } else {
        put(data[i], static_cast<void*>(nullptr));
      }
    } else if (result != CUDA_SUCCESS) {
      return result;
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::uint64_t base = 0, size = 0;
  if (!deviceAllocationContaining(dptr, &base, &size)) return CUDA_ERROR_NOT_FOUND;
  if (pbase != nullptr) *pbase = base;
  if (psize != nullptr) *psize = size;
  return CUDA_SUCCESS;
}

}  // extern "C"
