// CUDA arrays and texture and surface objects on the driver API (libcuda.so.1 exports), over the
// same worker calls as the runtime shim's (client/session/array_calls.h): a CUarray is the
// worker's token, a CUtexObject the driver's handle the worker made from a resource it checked.
// Resource views are not offered (they fail closed). The object queries answer the descriptions an
// object was created with, as the driver does: a CUDA runtime linked into the program asks for them
// (cudaGetTextureObjectResourceDesc and the like become cuTexObjectGetResourceDesc).
#include <cuda.h>

#include <cstdint>
#include <optional>

#include "client/cuda/copy_targets.h"
#include "client/cuda/driver_call.h"
#include "client/session/array_calls.h"
#include "client/session/array_copies.h"
#include "client/session/array_registry.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;
namespace v1 = agileos::v1;

namespace {

constexpr unsigned kArrayFlags =
    CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_TEXTURE_GATHER;

CUresult createArray(std::uint64_t* token, CUarray_format format, unsigned channels, cudaExtent extent,
                     unsigned flags, unsigned levels) {
  if (token == nullptr || (flags & ~kArrayFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  ArrayInfo info{{}, extent, flags, levels, 0};
  if (!channelDescOf(format, channels, &info.desc, &info.elementBytes)) return CUDA_ERROR_INVALID_VALUE;
  return inContext([&] { return createArrayOnWorker(info, format, channels, token); });
}

bool formatOf(const ArrayInfo& info, CUarray_format* format, unsigned* channels) {
  std::uint32_t element = 0;
  return arrayFormatOf(info.desc, format, channels, &element);
}

CUresult describeResource(const CUDA_RESOURCE_DESC& in, v1::TextureResource* out) {
  if (in.flags != 0) return CUDA_ERROR_INVALID_VALUE;
  out->set_type(static_cast<std::uint32_t>(in.resType));
  switch (in.resType) {
    case CU_RESOURCE_TYPE_ARRAY:
      out->set_array(arrayToken(in.res.array.hArray));
      return CUDA_SUCCESS;
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
      out->set_array(arrayToken(in.res.mipmap.hMipmappedArray));
      return CUDA_SUCCESS;
    case CU_RESOURCE_TYPE_LINEAR:
      out->set_device(in.res.linear.devPtr);
      out->set_format(in.res.linear.format);
      out->set_channels(in.res.linear.numChannels);
      out->set_size_bytes(in.res.linear.sizeInBytes);
      return CUDA_SUCCESS;
    case CU_RESOURCE_TYPE_PITCH2D:
      out->set_device(in.res.pitch2D.devPtr);
      out->set_format(in.res.pitch2D.format);
      out->set_channels(in.res.pitch2D.numChannels);
      out->set_width(in.res.pitch2D.width);
      out->set_height(in.res.pitch2D.height);
      out->set_pitch(in.res.pitch2D.pitchInBytes);
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

void describeTexture(const CUDA_TEXTURE_DESC& in, v1::TextureDescription* out) {
  for (int i = 0; i < 3; ++i) out->add_address_mode(static_cast<std::uint32_t>(in.addressMode[i]));
  for (int i = 0; i < 4; ++i) out->add_border_color(in.borderColor[i]);
  out->set_filter_mode(static_cast<std::uint32_t>(in.filterMode));
  out->set_flags(in.flags);
  out->set_max_anisotropy(in.maxAnisotropy);
  out->set_mipmap_filter_mode(static_cast<std::uint32_t>(in.mipmapFilterMode));
  out->set_mipmap_level_bias(in.mipmapLevelBias);
  out->set_min_mipmap_level_clamp(in.minMipmapLevelClamp);
  out->set_max_mipmap_level_clamp(in.maxMipmapLevelClamp);
}

CUresult destroyObject(std::uint64_t object, v1::ArrayTexture::Step step) {
  return inContext([&] { return destroyObjectOnWorker(object, step); });
}

// Answers *out with the description an object was created with (the worker checked it; these are
// the program's own words, kept in the session's ArrayRegistry, which a device reset empties):
// `find` gives it, or nullopt for an object this shim did not create (or destroyed), which is
// CUDA_ERROR_INVALID_VALUE as the runtime shim answers cudaErrorInvalidValue for one.
template <typename Description, typename Find>
CUresult answerDescription(Description* out, Find find) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  const std::optional<Description> kept = find(ArrayRegistry::instance());
  if (!kept) return CUDA_ERROR_INVALID_VALUE;
  *out = *kept;
  return CUDA_SUCCESS;
}

}  // namespace

namespace agileos::client::cuda_shim {

// One end of a cuMemcpy2D/3D that names an array (api_memory.cpp, api_memory_3d_peer.cpp).
bool arrayCopyEnd(int type, const void* host, CUdeviceptr device, CUarray array, std::size_t x, std::size_t y,
                  std::size_t z, std::size_t pitch, std::size_t rows, ArrayCopyEnd* end) {
  end->x = x;
  end->y = y;
  end->z = z;
  switch (type) {
    case CU_MEMORYTYPE_ARRAY:
      end->array = arrayToken(array);
      return end->array != 0;
    case CU_MEMORYTYPE_HOST:
      end->pointer = const_cast<void*>(host);
      break;
    case CU_MEMORYTYPE_DEVICE:
      end->pointer = reinterpret_cast<void*>(device);
      end->device = true;
      break;
    case CU_MEMORYTYPE_UNIFIED:
      end->pointer = reinterpret_cast<void*>(device);
      end->device = isDeviceAddress(end->pointer);
      break;
    default:
      return false;
  }
  end->pitch = pitch;
  end->rows = rows;
  return true;
}

}  // namespace agileos::client::cuda_shim

extern "C" {

CUresult cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* pAllocateArray) {
  if (pHandle == nullptr || pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t token = 0;
  const CUresult result = createArray(&token, pAllocateArray->Format, pAllocateArray->NumChannels,
                                      cudaExtent{pAllocateArray->Width, pAllocateArray->Height, 0}, 0, 0);
  if (result == CUDA_SUCCESS) *pHandle = reinterpret_cast<CUarray>(token);
  return result;
}

CUresult cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
  if (pHandle == nullptr || pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t token = 0;
  const CUresult result =
      createArray(&token, pAllocateArray->Format, pAllocateArray->NumChannels,
                  cudaExtent{pAllocateArray->Width, pAllocateArray->Height, pAllocateArray->Depth},
                  pAllocateArray->Flags, 0);
  if (result == CUDA_SUCCESS) *pHandle = reinterpret_cast<CUarray>(token);
  return result;
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pMipmappedArrayDesc,
                                unsigned int numMipmapLevels) {
  if (pHandle == nullptr || pMipmappedArrayDesc == nullptr || numMipmapLevels == 0)
    return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t token = 0;
  const CUresult result = createArray(
      &token, pMipmappedArrayDesc->Format, pMipmappedArrayDesc->NumChannels,
      cudaExtent{pMipmappedArrayDesc->Width, pMipmappedArrayDesc->Height, pMipmappedArrayDesc->Depth},
      pMipmappedArrayDesc->Flags, numMipmapLevels);
  if (result == CUDA_SUCCESS) *pHandle = reinterpret_cast<CUmipmappedArray>(token);
  return result;
}

CUresult cuMipmappedArrayGetLevel(CUarray* pLevelArray, CUmipmappedArray hMipmappedArray,
                                  unsigned int level) {
  if (pLevelArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t token = 0;
  const CUresult result =
      inContext([&] { return mipmapLevelOnWorker(arrayToken(hMipmappedArray), level, &token); });
  if (result == CUDA_SUCCESS) *pLevelArray = reinterpret_cast<CUarray>(token);
  return result;
}

CUresult cuArrayDestroy(CUarray hArray) {
  if (hArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return inContext([&] { return destroyArrayOnWorker(arrayToken(hArray)); });
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  if (hMipmappedArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return inContext([&] { return destroyArrayOnWorker(arrayToken(hMipmappedArray)); });
}

CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* pArrayDescriptor, CUarray hArray) {
  if (pArrayDescriptor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  const std::optional<ArrayInfo> info = ArrayRegistry::instance().array(arrayToken(hArray));
  CUarray_format format{};
  unsigned channels = 0;
  if (!info || info->levels != 0 || !formatOf(*info, &format, &channels)) return CUDA_ERROR_INVALID_HANDLE;
  *pArrayDescriptor = CUDA_ARRAY_DESCRIPTOR{info->extent.width, info->extent.height, format, channels};
  return CUDA_SUCCESS;
}

CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* pArrayDescriptor, CUarray hArray) {
  if (pArrayDescriptor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  const std::optional<ArrayInfo> info = ArrayRegistry::instance().array(arrayToken(hArray));
  CUarray_format format{};
  unsigned channels = 0;
  if (!info || info->levels != 0 || !formatOf(*info, &format, &channels)) return CUDA_ERROR_INVALID_HANDLE;
  *pArrayDescriptor = CUDA_ARRAY3D_DESCRIPTOR{
      info->extent.width, info->extent.height, info->extent.depth, format, channels, info->flags};
  return CUDA_SUCCESS;
}

CUresult cuTexObjectCreate(CUtexObject* pTexObject, const CUDA_RESOURCE_DESC* pResDesc,
                           const CUDA_TEXTURE_DESC* pTexDesc, const CUDA_RESOURCE_VIEW_DESC* pResViewDesc) {
  if (pTexObject == nullptr || pResDesc == nullptr || pTexDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (pResViewDesc != nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  v1::CallRequest request;
  v1::ArrayTexture* args = request.mutable_array_texture();
  args->set_step(v1::ArrayTexture::TEXTURE_CREATE);
  if (CUresult result = describeResource(*pResDesc, args->mutable_resource()); result != CUDA_SUCCESS)
    return result;
  describeTexture(*pTexDesc, args->mutable_texture());
  std::uint64_t object = 0;
  const CUresult result = inContext([&] { return createObjectOnWorker(request, &object); });
  if (result == CUDA_SUCCESS) {
    *pTexObject = object;
    ArrayRegistry::instance().addDriverTexture(object, *pResDesc, *pTexDesc);
  }
  return result;
}

CUresult cuTexObjectDestroy(CUtexObject texObject) {
  const CUresult result = destroyObject(texObject, v1::ArrayTexture::TEXTURE_DESTROY);
  if (result == CUDA_SUCCESS) ArrayRegistry::instance().forgetTexture(texObject);
  return result;
}

CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUtexObject texObject) {
  return answerDescription(pResDesc, [&](const ArrayRegistry& kept) -> std::optional<CUDA_RESOURCE_DESC> {
    const auto both = kept.driverTexture(texObject);
    return both ? std::optional(both->first) : std::nullopt;
  });
}

CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC* pTexDesc, CUtexObject texObject) {
  return answerDescription(pTexDesc, [&](const ArrayRegistry& kept) -> std::optional<CUDA_TEXTURE_DESC> {
    const auto both = kept.driverTexture(texObject);
    return both ? std::optional(both->second) : std::nullopt;
  });
}

CUresult cuSurfObjectCreate(CUsurfObject* pSurfObject, const CUDA_RESOURCE_DESC* pResDesc) {
  if (pSurfObject == nullptr || pResDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (pResDesc->resType != CU_RESOURCE_TYPE_ARRAY) return CUDA_ERROR_INVALID_VALUE;
  v1::CallRequest request;
  v1::ArrayTexture* args = request.mutable_array_texture();
  args->set_step(v1::ArrayTexture::SURFACE_CREATE);
  if (CUresult result = describeResource(*pResDesc, args->mutable_resource()); result != CUDA_SUCCESS)
    return result;
  std::uint64_t object = 0;
  const CUresult result = inContext([&] { return createObjectOnWorker(request, &object); });
  if (result == CUDA_SUCCESS) {
    *pSurfObject = object;
    ArrayRegistry::instance().addDriverSurface(object, *pResDesc);
  }
  return result;
}

CUresult cuSurfObjectDestroy(CUsurfObject surfObject) {
  const CUresult result = destroyObject(surfObject, v1::ArrayTexture::SURFACE_DESTROY);
  if (result == CUDA_SUCCESS) ArrayRegistry::instance().forgetSurface(surfObject);
  return result;
}

CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUsurfObject surfObject) {
  return answerDescription(pResDesc,
                           [&](const ArrayRegistry& kept) { return kept.driverSurface(surfObject); });
}

}  // extern "C"
