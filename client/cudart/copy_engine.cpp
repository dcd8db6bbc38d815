#include "client/cudart/copy_engine.h"

#include <algorithm>
#include <cstring>

#include "client/cudart/module_registry.h"
#include "client/cudart/runtime.h"

namespace agileos::client {

cudaError_t copyHostToDevice(std::uint64_t dst, const void* src, std::uint64_t bytes, CopyTarget target) {
  const auto* bytesIn = static_cast<const char*>(src);
  std::uint64_t offset = 0;
  do {
    const std::uint64_t chunk = std::min(kCopyChunkBytes, bytes - offset);
    v1::CallRequest request;
    v1::MemcpyHtoD* copy = request.mutable_memcpy_htod();
    copy->set_dst(dst);
    copy->set_total_size(bytes);
    copy->set_offset(offset);
    copy->set_data(bytesIn + offset, chunk);
    copy->set_stream(target.stream);
    copy->set_async(target.async);
    v1::CallReply reply;
    if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
    offset += chunk;
  } while (offset < bytes);
  return cudaSuccess;
}

cudaError_t copyDeviceToHost(void* dst, std::uint64_t src, std::uint64_t bytes, CopyTarget target) {
  auto* bytesOut = static_cast<char*>(dst);
  std::uint64_t offset = 0;
  do {
    const std::uint64_t chunk = std::min(kCopyChunkBytes, bytes - offset);
    v1::CallRequest request;
    v1::MemcpyDtoH* copy = request.mutable_memcpy_dtoh();
    copy->set_src(src);
    copy->set_total_size(bytes);
    copy->set_offset(offset);
    copy->set_size(chunk);
    copy->set_stream(target.stream);
    copy->set_async(target.async);
    v1::CallReply reply;
    if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
    if (reply.host_data().data().size() != chunk) return cudaErrorUnknown;  // a broken reply
    std::memcpy(bytesOut + offset, reply.host_data().data().data(), chunk);
    offset += chunk;
  } while (offset < bytes);
  return cudaSuccess;
}

cudaError_t copyDeviceToDevice(std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, CopyTarget target) {
  v1::CallRequest request;
  v1::MemcpyDtoD* copy = request.mutable_memcpy_dtod();
  copy->set_dst(dst);
  copy->set_src(src);
  copy->set_size(bytes);
  copy->set_stream(target.stream);
  copy->set_async(target.async);
  v1::CallReply reply;
  return invoke(request, &reply);
}

cudaError_t fillDevice(std::uint64_t dst, int value, std::uint64_t bytes, CopyTarget target) {
  v1::CallRequest request;
  v1::Memset* memset = request.mutable_memset();
  memset->set_dst(dst);
  memset->set_value(static_cast<std::uint32_t>(value) & 0xffu);
  memset->set_size(bytes);
  memset->set_stream(target.stream);
  memset->set_async(target.async);
  v1::CallReply reply;
  return invoke(request, &reply);
}

bool isDeviceAddress(const void* p) {
  const auto address = reinterpret_cast<std::uint64_t>(p);
  cudaError_t error = cudaSuccess;
  const v1::DeviceInfo* info = deviceInfo(&error);
  if (info != nullptr && address >= info->user_range_begin() && address < info->user_range_end()) return true;
  return ModuleRegistry::instance().isDeviceVariableAddress(address);
}

cudaError_t copyByKind(void* dst, const void* src, std::uint64_t bytes, cudaMemcpyKind kind, CopyTarget target) {
  if (kind == cudaMemcpyDefault) {
    const bool dstDevice = isDeviceAddress(dst);
    const bool srcDevice = isDeviceAddress(src);
    kind = dstDevice ? (srcDevice ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                     : (srcDevice ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  }
  if (bytes == 0) return cudaSuccess;
  const auto dstAddress = reinterpret_cast<std::uint64_t>(dst);
  const auto srcAddress = reinterpret_cast<std::uint64_t>(src);
  switch (kind) {
    case cudaMemcpyHostToHost:
      if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
      std::memmove(dst, src, bytes);
      return cudaSuccess;
    case cudaMemcpyHostToDevice:
      if (src == nullptr) return cudaErrorInvalidValue;
      return copyHostToDevice(dstAddress, src, bytes, target);
    case cudaMemcpyDeviceToHost:
      if (dst == nullptr) return cudaErrorInvalidValue;
      return copyDeviceToHost(dst, srcAddress, bytes, target);
    case cudaMemcpyDeviceToDevice:
      return copyDeviceToDevice(dstAddress, srcAddress, bytes, target);
    default:
      return cudaErrorInvalidMemcpyDirection;
  }
}

cudaError_t copyRows(void* dst, std::uint64_t dpitch, const void* src, std::uint64_t spitch,
                     std::uint64_t width, std::uint64_t height, cudaMemcpyKind kind, CopyTarget target) {
  if (width == 0 || height == 0) return cudaSuccess;
  if (dpitch == width && spitch == width) {
    if (height > UINT64_MAX / width) return cudaErrorInvalidValue;
    return copyByKind(dst, src, width * height, kind, target);
  }
  for (std::uint64_t row = 0; row < height; ++row) {
    void* dstRow = static_cast<char*>(dst) + row * dpitch;
    const void* srcRow = static_cast<const char*>(src) + row * spitch;
    if (cudaError_t error = copyByKind(dstRow, srcRow, width, kind, target); error != cudaSuccess)
      return error;
  }
  return cudaSuccess;
}

cudaError_t fillRows(std::uint64_t dst, std::uint64_t pitch, int value, std::uint64_t width,
                     std::uint64_t height, CopyTarget target) {
  if (width == 0 || height == 0) return cudaSuccess;
  if (pitch == width) {
    if (height > UINT64_MAX / width) return cudaErrorInvalidValue;
    return fillDevice(dst, value, width * height, target);
  }
  for (std::uint64_t row = 0; row < height; ++row) {
    if (cudaError_t error = fillDevice(dst + row * pitch, value, width, target); error != cudaSuccess)
      return error;
  }
  return cudaSuccess;
}

}  // namespace agileos::client
