// FakeGpuBackend's arrays, 3D copies and texture and surface objects. An array is host bytes of
// its extent (array_geometry.h); a level of a mipmapped array is an array of its own, destroyed
// with it. A copy checks every row of both ends first (array bounds, accessible device memory)
// and changes nothing when one is outside, answering CUDA_ERROR_INVALID_VALUE as the driver does.
// Objects are numbered from 1 like the driver's descriptor indices, never reused; creating one
// over memory that is not accessible, or over a dead array, is misuse.
#include <algorithm>
#include <cstring>

#include "worker/array_texture/array_geometry.h"
#include "worker/testing/fake_gpu/fake_gpu_backend.h"

namespace agileos::worker {

CUarray FakeGpuBackend::makeArrayLocked(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, CUmipmappedArray owner) {
  const arrays::Extent extent = arrays::levelExtent(descriptor, 0);
  const auto array = reinterpret_cast<CUarray>(nextObject_ += 0x10);
  Array& record = arrays_[array];
  record.descriptor = descriptor;
  record.owner = owner;
  record.bytes.assign(extent.width * extent.height * extent.depth *
                          arrays::elementBytes(descriptor.Format, descriptor.NumChannels),
                      0);
  return array;
}

CUresult FakeGpuBackend::arrayCreate(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, CUarray* array) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kArrayCreate)) return *injected;
  if (!arrays::checkDescriptor(descriptor, 0).empty()) return CUDA_ERROR_INVALID_VALUE;
  *array = makeArrayLocked(descriptor, nullptr);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::arrayDestroy(CUarray array) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kArrayDestroy)) return *injected;
  auto it = arrays_.find(array);
  if (it == arrays_.end() || it->second.owner != nullptr)
    return misused("arrayDestroy of " + hex(array), CUDA_ERROR_INVALID_HANDLE);
  arrays_.erase(it);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::mipmappedArrayCreate(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, unsigned levels,
                                              CUmipmappedArray* array) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kMipmappedArrayCreate)) return *injected;
  if (levels == 0 || !arrays::checkDescriptor(descriptor, levels).empty()) return CUDA_ERROR_INVALID_VALUE;
  *array = reinterpret_cast<CUmipmappedArray>(nextObject_ += 0x10);
  MipmappedArray& record = mipmapped_[*array];
  for (unsigned level = 0; level < levels; ++level)
    record.levels.push_back(makeArrayLocked(arrays::levelDescriptor(descriptor, level), *array));
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::mipmappedArrayLevel(CUmipmappedArray array, unsigned level, CUarray* levelArray) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kMipmappedArrayLevel)) return *injected;
  auto it = mipmapped_.find(array);
  if (it == mipmapped_.end())
    return misused("mipmappedArrayLevel of " + hex(array), CUDA_ERROR_INVALID_HANDLE);
  if (level >= it->second.levels.size()) return CUDA_ERROR_INVALID_VALUE;
  *levelArray = it->second.levels[level];
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::mipmappedArrayDestroy(CUmipmappedArray array) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kMipmappedArrayDestroy)) return *injected;
  auto it = mipmapped_.find(array);
  if (it == mipmapped_.end())
    return misused("mipmappedArrayDestroy of " + hex(array), CUDA_ERROR_INVALID_HANDLE);
  for (CUarray level : it->second.levels) arrays_.erase(level);
  mipmapped_.erase(it);
  return CUDA_SUCCESS;
}

std::uint8_t* FakeGpuBackend::rowOf(const CUDA_MEMCPY3D& copy, bool source, std::uint64_t y, std::uint64_t z,
                                    std::vector<std::uint8_t>* scratch) {
  const CUmemorytype type = source ? copy.srcMemoryType : copy.dstMemoryType;
  const std::uint64_t x = source ? copy.srcXInBytes : copy.dstXInBytes;
  y += source ? copy.srcY : copy.dstY;
  z += source ? copy.srcZ : copy.dstZ;
  const std::uint64_t pitch = source ? copy.srcPitch : copy.dstPitch;
  const std::uint64_t rows = source ? copy.srcHeight : copy.dstHeight;
  if (type == CU_MEMORYTYPE_ARRAY) {
    auto it = arrays_.find(source ? copy.srcArray : copy.dstArray);
    if (it == arrays_.end()) return nullptr;
    const arrays::Extent extent = arrays::levelExtent(it->second.descriptor, 0);
    const std::uint64_t element =
        arrays::elementBytes(it->second.descriptor.Format, it->second.descriptor.NumChannels);
    if (x + copy.WidthInBytes > extent.width * element || y >= extent.height || z >= extent.depth)
      return nullptr;
    return it->second.bytes.data() + (z * extent.height + y) * extent.width * element + x;
  }
  if (x + copy.WidthInBytes > pitch || (copy.Depth > 1 && y >= rows)) return nullptr;
  const std::uint64_t offset = (z * rows + y) * pitch + x;
  if (type == CU_MEMORYTYPE_HOST) {
    return static_cast<std::uint8_t*>(const_cast<void*>(source ? copy.srcHost : copy.dstHost)) + offset;
  }
  if (type != CU_MEMORYTYPE_DEVICE) return nullptr;
  const CUdeviceptr va = (source ? copy.srcDevice : copy.dstDevice) + offset;
  const auto pieces = resolve(va, copy.WidthInBytes);
  if (!pieces) return nullptr;
  if (pieces->size() == 1) return pieces->front().data;
  scratch->resize(copy.WidthInBytes);  // rows spanning two mappings: read through a copy
  std::size_t at = 0;
  for (const Piece& piece : *pieces) {
    std::memcpy(scratch->data() + at, piece.data, piece.bytes);
    at += piece.bytes;
  }
  return scratch->data();
}

CUresult FakeGpuBackend::copy3D(const CUDA_MEMCPY3D& copy, CUstream stream, bool) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kCopy3D)) return *injected;
  if (!streamUsable(stream)) return CUDA_ERROR_INVALID_HANDLE;
  const std::uint64_t depth = copy.Depth == 0 ? 1 : copy.Depth;
  const std::uint64_t height = copy.Height == 0 ? 1 : copy.Height;
  std::vector<std::uint8_t> scratch;
  for (std::uint64_t z = 0; z < depth; ++z) {  // every row of both ends first: all or nothing
    for (std::uint64_t y = 0; y < height; ++y) {
      if (rowOf(copy, true, y, z, &scratch) == nullptr || rowOf(copy, false, y, z, &scratch) == nullptr) {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
  }
  std::vector<std::uint8_t> row(copy.WidthInBytes);
  for (std::uint64_t z = 0; z < depth; ++z) {
    for (std::uint64_t y = 0; y < height; ++y) {
      std::memcpy(row.data(), rowOf(copy, true, y, z, &scratch), row.size());
      if (copy.dstMemoryType == CU_MEMORYTYPE_DEVICE) {
        const CUdeviceptr va = copy.dstDevice +
                               ((copy.dstZ + z) * copy.dstHeight + copy.dstY + y) * copy.dstPitch +
                               copy.dstXInBytes;
        std::size_t at = 0;
        const std::optional<std::vector<Piece>> pieces = resolve(va, row.size());  // checked above
        for (const Piece& piece : pieces.value()) {
          std::memcpy(piece.data, row.data() + at, piece.bytes);
          at += piece.bytes;
        }
      } else {
        std::memcpy(rowOf(copy, false, y, z, &scratch), row.data(), row.size());
      }
    }
  }
  return CUDA_SUCCESS;
}

bool FakeGpuBackend::resourceLive(const CUDA_RESOURCE_DESC& resource) const {
  switch (resource.resType) {
    case CU_RESOURCE_TYPE_ARRAY:
      return arrays_.contains(resource.res.array.hArray);
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
      return mipmapped_.contains(resource.res.mipmap.hMipmappedArray);
    case CU_RESOURCE_TYPE_LINEAR:
      return resolve(resource.res.linear.devPtr, resource.res.linear.sizeInBytes).has_value();
    case CU_RESOURCE_TYPE_PITCH2D:
      return resolve(resource.res.pitch2D.devPtr,
                     resource.res.pitch2D.pitchInBytes * resource.res.pitch2D.height)
          .has_value();
    default:
      return false;
  }
}

CUresult FakeGpuBackend::texObjectCreate(const CUDA_RESOURCE_DESC& resource, const CUDA_TEXTURE_DESC&,
                                         CUtexObject* object) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kTexObjectCreate)) return *injected;
  if (!resourceLive(resource))
    return misused("texObjectCreate over a dead or unmapped resource", CUDA_ERROR_INVALID_VALUE);
  *object = nextObjectHandle_++;
  objects_[*object] = resource;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::texObjectDestroy(CUtexObject object) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kTexObjectDestroy)) return *injected;
  if (objects_.erase(object) == 0)
    return misused("texObjectDestroy of " + hex(object), CUDA_ERROR_INVALID_HANDLE);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::surfObjectCreate(const CUDA_RESOURCE_DESC& resource, CUsurfObject* object) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kSurfObjectCreate)) return *injected;
  if (resource.resType != CU_RESOURCE_TYPE_ARRAY || !resourceLive(resource)) {
    return misused("surfObjectCreate over a dead array or a non-array", CUDA_ERROR_INVALID_VALUE);
  }
  *object = nextObjectHandle_++;
  objects_[*object] = resource;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::surfObjectDestroy(CUsurfObject object) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kSurfObjectDestroy)) return *injected;
  if (objects_.erase(object) == 0)
    return misused("surfObjectDestroy of " + hex(object), CUDA_ERROR_INVALID_HANDLE);
  return CUDA_SUCCESS;
}

std::size_t FakeGpuBackend::liveArrays() const {
  std::lock_guard lock(mutex_);
  std::size_t plain = 0;
  for (const auto& [array, record] : arrays_) plain += record.owner == nullptr;
  return plain + mipmapped_.size();
}

std::size_t FakeGpuBackend::liveObjects() const {
  std::lock_guard lock(mutex_);
  return objects_.size();
}

std::optional<CUDA_RESOURCE_DESC> FakeGpuBackend::objectResource(std::uint64_t object) const {
  std::lock_guard lock(mutex_);
  auto it = objects_.find(object);
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

// The driver's encoding is opaque: the fake writes the description's fields in order, so that
// equal descriptions give equal bytes and different ones (another address) differ.
CUresult FakeGpuBackend::tensorMapEncode(const TensorMapDescription& description, CUtensorMap* map) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kTensorMapEncode)) return *injected;
  *map = CUtensorMap{};
  auto* out = reinterpret_cast<unsigned char*>(map);
  std::size_t at = 0;
  const auto put = [&](const auto& field) {
    const std::size_t n = std::min(sizeof field, sizeof(CUtensorMap) - at);
    std::memcpy(out + at, &field, n);
    at += n;
  };
  put(description.globalAddress);
  put(description.globalDim);
  put(description.globalStrides);
  put(description.boxDim);
  put(description.dataType);
  put(description.rank);
  put(static_cast<std::uint32_t>(description.kind));
  put(description.swizzle);
  return CUDA_SUCCESS;
}

}  // namespace agileos::worker
