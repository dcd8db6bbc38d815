#include "client/cuda/copy_targets.h"

#include "client/cuda/driver_call.h"

namespace agileos::client::cuda_shim {

CUresult copyTarget(CUstream stream, DefaultStream spelling, Ordering ordering, CopyTarget* target) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  target->async = ordering == Ordering::kAsynchronous || spelling == DefaultStream::kPerThread;
  target->returnsEarly = ordering == Ordering::kAsynchronous;
  return toDriverResult(resolveStream(reinterpret_cast<cudaStream_t>(stream), spelling, &target->stream));
}

bool rectangleSide(int type, const void* host, CUdeviceptr device, std::size_t x, std::size_t y,
                   std::size_t pitch, std::uintptr_t* address, bool* onDevice, bool* unified) {
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      *address = reinterpret_cast<std::uintptr_t>(host);
      *onDevice = false;
      break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
      *address = static_cast<std::uintptr_t>(device);
      *onDevice = true;
      *unified = *unified || type == CU_MEMORYTYPE_UNIFIED;
      break;
    default:
      return false;
  }
  std::uintptr_t rows = 0;
  return !__builtin_mul_overflow(y, pitch, &rows) && !__builtin_add_overflow(rows, x, &rows) &&
         !__builtin_add_overflow(*address, rows, address);
}

cudaMemcpyKind rectangleCopyKind(bool srcOnDevice, bool dstOnDevice, bool unified) {
  return unified                      ? cudaMemcpyDefault
         : srcOnDevice && dstOnDevice ? cudaMemcpyDeviceToDevice
         : srcOnDevice                ? cudaMemcpyDeviceToHost
         : dstOnDevice                ? cudaMemcpyHostToDevice
                                      : cudaMemcpyHostToHost;
}

}  // namespace agileos::client::cuda_shim
