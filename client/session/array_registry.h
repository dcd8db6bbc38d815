// What the client keeps about its CUDA arrays and texture and surface objects (untrusted side):
// what the queries (cudaArrayGetInfo, cudaGetChannelDesc, cudaGetTextureObjectResourceDesc, ...)
// answer without asking the worker. A cudaArray_t the program holds is the worker's token for
// the array, never a worker pointer; the worker resolves and checks every token again.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <utility>

namespace agileos::client {

struct ArrayInfo {
  cudaChannelFormatDesc desc{};
  cudaExtent extent{};  // as the program asked (0 height / depth for 1D / 2D)
  unsigned flags = 0;   // cudaArray* flags (same bits as CUDA_ARRAY3D_*)
  unsigned levels = 0;  // a mipmapped array's levels; 0 for an array
  std::uint32_t elementBytes = 0;
};

struct TextureInfo {
  cudaResourceDesc resource{};
  cudaTextureDesc texture{};
};

// The driver's array format for a channel descriptor (x, then y, then w: 1, 2 or 4 channels of
// equal width), or false when the worker has no such format.
bool arrayFormatOf(const cudaChannelFormatDesc& desc, CUarray_format* format, unsigned* channels,
                   std::uint32_t* elementBytes);

// The channel descriptor of an array format (the driver API's arrays, recorded for the runtime's
// queries too); false for a format or channel count the worker does not admit.
bool channelDescOf(CUarray_format format, unsigned channels, cudaChannelFormatDesc* desc,
                   std::uint32_t* elementBytes);

std::uint64_t arrayToken(const void* array);  // cudaArray_t / cudaMipmappedArray_t -> token

class ArrayRegistry {
 public:
  static ArrayRegistry& instance();
  void addArray(std::uint64_t token, const ArrayInfo& info);
  std::optional<ArrayInfo> array(std::uint64_t token) const;
  void forgetArray(std::uint64_t token);
  void addTexture(std::uint64_t object, const TextureInfo& info);
  std::optional<TextureInfo> texture(std::uint64_t object) const;
  void forgetTexture(std::uint64_t object);
  void addSurface(std::uint64_t object, const cudaResourceDesc& resource);
  std::optional<cudaResourceDesc> surface(std::uint64_t object) const;
  void forgetSurface(std::uint64_t object);
  // The driver API's objects (cuTexObjectCreate, cuSurfObjectCreate), in the driver's words, for
  // its queries. An object is the worker's token, so one forgetTexture/forgetSurface serves both.
  void addDriverTexture(std::uint64_t object, const CUDA_RESOURCE_DESC& resource,
                        const CUDA_TEXTURE_DESC& texture);
  std::optional<std::pair<CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC>> driverTexture(std::uint64_t object) const;
  void addDriverSurface(std::uint64_t object, const CUDA_RESOURCE_DESC& resource);
  std::optional<CUDA_RESOURCE_DESC> driverSurface(std::uint64_t object) const;
  // A device reset destroyed every array and object in the worker (resetDevice): the queries
  // then answer none of them, as the driver answers for destroyed handles.
  void forgetAll();
};

}  // namespace agileos::client
