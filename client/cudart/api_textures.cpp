// Texture and surface objects (cudart exports). The client translates the runtime's resource and
// texture descriptions into the driver's (channel descriptors to array formats, the read mode and
// switches to CU_TRSF_* flags) and the worker builds the object from what it validated: the
// handle the program gets is the driver's, which its kernels read. The descriptions are kept here
// for the Get*Desc queries.
#include <cuda_runtime_api.h>

#include <cstring>

#include "client/cudart/unsupported_calls.h"
#include "client/session/array_calls.h"
#include "client/session/array_registry.h"
#include "client/session/error_state.h"
#include "client/session/thread_contexts.h"
#include "client/session/worker_calls.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;
namespace v1 = agileos::v1;

namespace {

bool isIntegerFormat(CUarray_format format) {
  return format != CU_AD_FORMAT_FLOAT && format != CU_AD_FORMAT_HALF;
}

bool isWideIntegerFormat(CUarray_format format) {
  return format == CU_AD_FORMAT_SIGNED_INT32 || format == CU_AD_FORMAT_UNSIGNED_INT32;
}

// What the CUDA runtime itself refuses before the driver sees a texture (measured natively on the
// H100, stop 39's probe_texture_linear_pitch): 32-bit integers cannot be read as normalized
// floats, and integers read as they are cannot be filtered linearly (the hardware interpolates
// only what it returns as floats).
cudaError_t checkReadAndFilter(const cudaTextureDesc& texture, bool integer, bool wide) {
  if (wide && texture.readMode == cudaReadModeNormalizedFloat) return cudaErrorInvalidNormSetting;
  if (integer && texture.readMode == cudaReadModeElementType && texture.filterMode == cudaFilterModeLinear)
    return cudaErrorInvalidFilterSetting;
  return cudaSuccess;
}

// The resource as the worker takes it; *integer tells whether its elements are integers, *wide
// whether they are 32-bit integers.
cudaError_t describeResource(const cudaResourceDesc& in, v1::TextureResource* out, bool* integer,
                             bool* wide) {
  out->set_type(static_cast<std::uint32_t>(in.resType));
  *integer = false;
  *wide = false;
  switch (in.resType) {
    case cudaResourceTypeArray:
    case cudaResourceTypeMipmappedArray: {
      const void* array = in.resType == cudaResourceTypeArray
                              ? static_cast<const void*>(in.res.array.array)
                              : static_cast<const void*>(in.res.mipmap.mipmap);
      const std::optional<ArrayInfo> info = ArrayRegistry::instance().array(arrayToken(array));
      if (!info) return cudaErrorInvalidResourceHandle;
      CUarray_format format{};
      unsigned channels = 0;
      std::uint32_t element = 0;
      if (arrayFormatOf(info->desc, &format, &channels, &element)) {
        *integer = isIntegerFormat(format);
        *wide = isWideIntegerFormat(format);
      }
      out->set_array(arrayToken(array));
      return cudaSuccess;
    }
    case cudaResourceTypeLinear:
    case cudaResourceTypePitch2D: {
      const bool linear = in.resType == cudaResourceTypeLinear;
      const cudaChannelFormatDesc& desc = linear ? in.res.linear.desc : in.res.pitch2D.desc;
      CUarray_format format{};
      unsigned channels = 0;
      std::uint32_t element = 0;
      if (!arrayFormatOf(desc, &format, &channels, &element)) return cudaErrorInvalidChannelDescriptor;
      *integer = isIntegerFormat(format);
      *wide = isWideIntegerFormat(format);
      out->set_format(format);
      out->set_channels(channels);
      if (linear) {
        out->set_device(reinterpret_cast<std::uint64_t>(in.res.linear.devPtr));
        out->set_size_bytes(in.res.linear.sizeInBytes);
      } else {
        out->set_device(reinterpret_cast<std::uint64_t>(in.res.pitch2D.devPtr));
        out->set_width(in.res.pitch2D.width);
        out->set_height(in.res.pitch2D.height);
        out->set_pitch(in.res.pitch2D.pitchInBytes);
      }
      return cudaSuccess;
    }
    default:
      return cudaErrorInvalidValue;
  }
}

void describeTexture(const cudaTextureDesc& in, bool integer, v1::TextureDescription* out) {
  for (int i = 0; i < 3; ++i) out->add_address_mode(static_cast<std::uint32_t>(in.addressMode[i]));
  for (int i = 0; i < 4; ++i) out->add_border_color(in.borderColor[i]);
  out->set_filter_mode(static_cast<std::uint32_t>(in.filterMode));
  unsigned flags = 0;
  // Integer elements are read as they are unless the program asks for normalized floats.
  if (integer && in.readMode == cudaReadModeElementType) flags |= CU_TRSF_READ_AS_INTEGER;
  if (in.normalizedCoords != 0) flags |= CU_TRSF_NORMALIZED_COORDINATES;
  if (in.sRGB != 0) flags |= CU_TRSF_SRGB;
  if (in.disableTrilinearOptimization != 0) flags |= CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION;
  if (in.seamlessCubemap != 0) flags |= CU_TRSF_SEAMLESS_CUBEMAP;
  out->set_flags(flags);
  out->set_max_anisotropy(in.maxAnisotropy);
  out->set_mipmap_filter_mode(static_cast<std::uint32_t>(in.mipmapFilterMode));
  out->set_mipmap_level_bias(in.mipmapLevelBias);
  out->set_min_mipmap_level_clamp(in.minMipmapLevelClamp);
  out->set_max_mipmap_level_clamp(in.maxMipmapLevelClamp);
}

}  // namespace

extern "C" {

cudaError_t cudaCreateTextureObject(cudaTextureObject_t* texObject, const struct cudaResourceDesc* resDesc,
                                    const struct cudaTextureDesc* texDesc,
                                    const struct cudaResourceViewDesc* resViewDesc) {
  bindPrimaryContextIfNoneCurrent();
  if (texObject == nullptr || resDesc == nullptr || texDesc == nullptr)
    return recordError(cudaErrorInvalidValue);
  if (resViewDesc != nullptr) return reportUnsupported("cudaCreateTextureObject with a resource view");
  v1::CallRequest request;
  v1::ArrayTexture* args = request.mutable_array_texture();
  args->set_step(v1::ArrayTexture::TEXTURE_CREATE);
  bool integer = false, wide = false;
  if (cudaError_t error = describeResource(*resDesc, args->mutable_resource(), &integer, &wide);
      error != cudaSuccess)
    return recordError(error);
  if (cudaError_t error = checkReadAndFilter(*texDesc, integer, wide); error != cudaSuccess)
    return recordError(error);
  describeTexture(*texDesc, integer, args->mutable_texture());
  std::uint64_t object = 0;
  if (cudaError_t error = createObjectOnWorker(request, &object); error != cudaSuccess)
    return recordError(error);
  *texObject = object;
  ArrayRegistry::instance().addTexture(*texObject, {*resDesc, *texDesc});
  return cudaSuccess;
}

cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject) {
  if (texObject == 0) return cudaSuccess;
  cudaError_t error = destroyObjectOnWorker(texObject, v1::ArrayTexture::TEXTURE_DESTROY);
  if (error == cudaSuccess) ArrayRegistry::instance().forgetTexture(texObject);
  return recordError(error);
}

cudaError_t cudaGetTextureObjectResourceDesc(struct cudaResourceDesc* resDesc,
                                             cudaTextureObject_t texObject) {
  if (resDesc == nullptr) return recordError(cudaErrorInvalidValue);
  const std::optional<TextureInfo> info = ArrayRegistry::instance().texture(texObject);
  if (!info) return recordError(cudaErrorInvalidValue);
  *resDesc = info->resource;
  return cudaSuccess;
}

cudaError_t cudaGetTextureObjectTextureDesc(struct cudaTextureDesc* texDesc, cudaTextureObject_t texObject) {
  if (texDesc == nullptr) return recordError(cudaErrorInvalidValue);
  const std::optional<TextureInfo> info = ArrayRegistry::instance().texture(texObject);
  if (!info) return recordError(cudaErrorInvalidValue);
  *texDesc = info->texture;
  return cudaSuccess;
}

cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t* surfObject, const struct cudaResourceDesc* resDesc) {
  bindPrimaryContextIfNoneCurrent();
  if (surfObject == nullptr || resDesc == nullptr) return recordError(cudaErrorInvalidValue);
  if (resDesc->resType != cudaResourceTypeArray) return recordError(cudaErrorInvalidValue);
  v1::CallRequest request;
  v1::ArrayTexture* args = request.mutable_array_texture();
  args->set_step(v1::ArrayTexture::SURFACE_CREATE);
  bool integer = false;
  bool wide = false;
  if (cudaError_t error = describeResource(*resDesc, args->mutable_resource(), &integer, &wide);
      error != cudaSuccess)
    return recordError(error);
  std::uint64_t object = 0;
  if (cudaError_t error = createObjectOnWorker(request, &object); error != cudaSuccess)
    return recordError(error);
  *surfObject = object;
  ArrayRegistry::instance().addSurface(*surfObject, *resDesc);
  return cudaSuccess;
}

cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject) {
  if (surfObject == 0) return cudaSuccess;
  cudaError_t error = destroyObjectOnWorker(surfObject, v1::ArrayTexture::SURFACE_DESTROY);
  if (error == cudaSuccess) ArrayRegistry::instance().forgetSurface(surfObject);
  return recordError(error);
}

cudaError_t cudaGetSurfaceObjectResourceDesc(struct cudaResourceDesc* resDesc,
                                             cudaSurfaceObject_t surfObject) {
  if (resDesc == nullptr) return recordError(cudaErrorInvalidValue);
  const std::optional<cudaResourceDesc> resource = ArrayRegistry::instance().surface(surfObject);
  if (!resource) return recordError(cudaErrorInvalidValue);
  *resDesc = *resource;
  return cudaSuccess;
}

}  // extern "C"
