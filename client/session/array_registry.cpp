#include "client/session/array_registry.h"

#include <map>
#include <mutex>

namespace agileos::client {
namespace {

struct Tables {
  std::mutex mutex;
  std::map<std::uint64_t, ArrayInfo> arrays;
  std::map<std::uint64_t, TextureInfo> textures;
  std::map<std::uint64_t, cudaResourceDesc> surfaces;
  std::map<std::uint64_t, std::pair<CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC>> driverTextures;
  std::map<std::uint64_t, CUDA_RESOURCE_DESC> driverSurfaces;
};

Tables& tables() {
  static Tables* t = new Tables;  // never destroyed: queries may run during exit
  return *t;
}

template <typename Map>
auto lookUp(const Map& map, std::uint64_t key) -> std::optional<typename Map::mapped_type> {
  std::lock_guard lock(tables().mutex);
  auto it = map.find(key);
  if (it == map.end()) return std::nullopt;
  return it->second;
}

}  // namespace

bool arrayFormatOf(const cudaChannelFormatDesc& desc, CUarray_format* format, unsigned* channels,
                   std::uint32_t* elementBytes) {
  const int bits = desc.x;
  if (bits <= 0) return false;
  unsigned count = 1;
  if (desc.y != 0) count = desc.z != 0 ? (desc.w != 0 ? 4 : 3) : 2;
  if (count == 2 && desc.w != 0) return false;
  if (count == 3) return false;  // no three-channel arrays
  for (int other : {desc.y, desc.z, desc.w}) {
    if (other != 0 && other != bits) return false;
  }
  switch (desc.f) {
    case cudaChannelFormatKindSigned:
      *format = bits == 8    ? CU_AD_FORMAT_SIGNED_INT8
                : bits == 16 ? CU_AD_FORMAT_SIGNED_INT16
                             : CU_AD_FORMAT_SIGNED_INT32;
      break;
    case cudaChannelFormatKindUnsigned:
      *format = bits == 8    ? CU_AD_FORMAT_UNSIGNED_INT8
                : bits == 16 ? CU_AD_FORMAT_UNSIGNED_INT16
                             : CU_AD_FORMAT_UNSIGNED_INT32;
      break;
    case cudaChannelFormatKindFloat:
      if (bits != 16 && bits != 32) return false;
      *format = bits == 16 ? CU_AD_FORMAT_HALF : CU_AD_FORMAT_FLOAT;
      break;
    default:
      return false;
  }
  if (bits != 8 && bits != 16 && bits != 32) return false;
  *channels = count;
  *elementBytes = static_cast<std::uint32_t>(bits / 8 * count);
  return true;
}

bool channelDescOf(CUarray_format format, unsigned channels, cudaChannelFormatDesc* desc,
                   std::uint32_t* elementBytes) {
  int bits = 0;
  cudaChannelFormatKind kind = cudaChannelFormatKindNone;
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
      bits = 8;
      kind = cudaChannelFormatKindUnsigned;
      break;
    case CU_AD_FORMAT_UNSIGNED_INT16:
      bits = 16;
      kind = cudaChannelFormatKindUnsigned;
      break;
    case CU_AD_FORMAT_UNSIGNED_INT32:
      bits = 32;
      kind = cudaChannelFormatKindUnsigned;
      break;
    case CU_AD_FORMAT_SIGNED_INT8:
      bits = 8;
      kind = cudaChannelFormatKindSigned;
      break;
    case CU_AD_FORMAT_SIGNED_INT16:
      bits = 16;
      kind = cudaChannelFormatKindSigned;
      break;
    case CU_AD_FORMAT_SIGNED_INT32:
      bits = 32;
      kind = cudaChannelFormatKindSigned;
      break;
    case CU_AD_FORMAT_HALF:
      bits = 16;
      kind = cudaChannelFormatKindFloat;
      break;
    case CU_AD_FORMAT_FLOAT:
      bits = 32;
      kind = cudaChannelFormatKindFloat;
      break;
    default:
      return false;
  }
  if (channels != 1 && channels != 2 && channels != 4) return false;
  *desc = cudaChannelFormatDesc{bits, channels >= 2 ? bits : 0, channels == 4 ? bits : 0,
                                channels == 4 ? bits : 0, kind};
  *elementBytes = static_cast<std::uint32_t>(bits / 8 * channels);
  return true;
}

std::uint64_t arrayToken(const void* array) { return reinterpret_cast<std::uintptr_t>(array); }

ArrayRegistry& ArrayRegistry::instance() {
  static ArrayRegistry registry;
  return registry;
}

void ArrayRegistry::addArray(std::uint64_t token, const ArrayInfo& info) {
  std::lock_guard lock(tables().mutex);
  tables().arrays[token] = info;
}
std::optional<ArrayInfo> ArrayRegistry::array(std::uint64_t token) const {
  return lookUp(tables().arrays, token);
}
void ArrayRegistry::forgetArray(std::uint64_t token) {
  std::lock_guard lock(tables().mutex);
  tables().arrays.erase(token);
}

void ArrayRegistry::addTexture(std::uint64_t object, const TextureInfo& info) {
  std::lock_guard lock(tables().mutex);
  tables().textures[object] = info;
}
std::optional<TextureInfo> ArrayRegistry::texture(std::uint64_t object) const {
  return lookUp(tables().textures, object);
}
void ArrayRegistry::forgetTexture(std::uint64_t object) {
  std::lock_guard lock(tables().mutex);
  tables().textures.erase(object);
  tables().driverTextures.erase(object);
}

void ArrayRegistry::forgetAll() {
  std::lock_guard lock(tables().mutex);
  tables().arrays.clear();
  tables().textures.clear();
  tables().surfaces.clear();
  tables().driverTextures.clear();
  tables().driverSurfaces.clear();
}

void ArrayRegistry::addSurface(std::uint64_t object, const cudaResourceDesc& resource) {
  std::lock_guard lock(tables().mutex);
  tables().surfaces[object] = resource;
}
std::optional<cudaResourceDesc> ArrayRegistry::surface(std::uint64_t object) const {
  return lookUp(tables().surfaces, object);
}
void ArrayRegistry::forgetSurface(std::uint64_t object) {
  std::lock_guard lock(tables().mutex);
  tables().surfaces.erase(object);
  tables().driverSurfaces.erase(object);
}

void ArrayRegistry::addDriverTexture(std::uint64_t object, const CUDA_RESOURCE_DESC& resource,
                                     const CUDA_TEXTURE_DESC& texture) {
  std::lock_guard lock(tables().mutex);
  tables().driverTextures[object] = {resource, texture};
}
std::optional<std::pair<CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC>> ArrayRegistry::driverTexture(
    std::uint64_t object) const {
  return lookUp(tables().driverTextures, object);
}
void ArrayRegistry::addDriverSurface(std::uint64_t object, const CUDA_RESOURCE_DESC& resource) {
  std::lock_guard lock(tables().mutex);
  tables().driverSurfaces[object] = resource;
}
std::optional<CUDA_RESOURCE_DESC> ArrayRegistry::driverSurface(std::uint64_t object) const {
  return lookUp(tables().driverSurfaces, object);
}

}  // namespace agileos::client
