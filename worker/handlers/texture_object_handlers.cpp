// Texture and surface objects (steps of proto ArrayTexture). The worker builds each resource
// description itself from what it resolved: an array of the client's, or linear memory that lies
// inside one live allocation of the client in the user range (memmgr/address_layout.h), whole
// extent included (a linear view past its allocation's end is clamped to it). An object can therefore
// describe only the client's own memory; see docs/security-model.md ("Texture and surface objects") for why
// the handle a kernel holds cannot reach anything else.
#include <spdlog/spdlog.h>

#include <limits>

#include "memmgr/address_layout.h"
#include "worker/array_texture/array_geometry.h"
#include "worker/handlers/array_texture_handlers.h"

namespace agileos::worker {
namespace {

constexpr unsigned kAdmittedTextureFlags = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES |
                                           CU_TRSF_SRGB | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION |
                                           CU_TRSF_SEAMLESS_CUBEMAP;

// Linear memory a resource may view: inside one live allocation of the client, in the user range
// (not a module variable: its address is the driver's and may serve other code once unloaded).
bool checkLinear(CallContext& ctx, std::uint64_t base, std::uint64_t bytes, v1::CallReply& reply) {
  if (memmgr::classify(base) != memmgr::RegionKind::kUser) {
    return refuse(reply, cudaErrorInvalidValue, "a texture's linear memory outside the client's allocations");
  }
  return checkRange(ctx, base, bytes, reply, "texture resource");
}

// A linear view longer than the allocation its base lies in is clamped to it (bytesInsideAllocation):
// the driver accepts the longer view (cuda-samples' convolutionFFT2D asks for its padded size over
// an unpadded buffer), so refusing it would fail a program that runs natively; a fetch past a
// linear texture's end reads zero instead of whatever follows natively.
std::uint64_t linearBytesInside(CallContext& ctx, std::uint64_t base, std::uint64_t bytes,
                                std::uint32_t element) {
  const std::uint64_t inside = bytesInsideAllocation(ctx, base, bytes, element);
  if (inside != bytes) {
    SPDLOG_INFO("client {}: a linear texture of {} bytes at {:#x} views the {} bytes its allocation holds",
                ctx.session.id(), bytes, base, inside);
  }
  return inside;
}

// Builds the driver's resource description from the request; *root gets the array it views.
bool resolveResource(CallContext& ctx, const v1::TextureResource& in, bool surface, CUDA_RESOURCE_DESC* out,
                     Token* root, v1::CallReply& reply) {
  *out = CUDA_RESOURCE_DESC{};
  *root = 0;
  out->resType = static_cast<CUresourcetype>(in.type());
  switch (in.type()) {
    case CU_RESOURCE_TYPE_ARRAY:
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: {
      const bool mipmapped = in.type() == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
      const std::optional<ArrayRecord> record = ctx.session.arrays.find(in.array());
      if (!record || (mipmapped ? record->mipmapped == nullptr : record->array == nullptr)) {
        return refuse(reply, cudaErrorInvalidResourceHandle,
                      mipmapped ? "not a mipmapped array of this client" : "not an array of this client");
      }
      // A surface on an array made without cudaArraySurfaceLoadStore is left to the driver, which
      // accepts it (cudaSuccess natively on the H200): the array is the client's either way.
      *root = record->parent != 0 ? record->parent : in.array();
      if (mipmapped) {
        out->res.mipmap.hMipmappedArray = record->mipmapped;
      } else {
        out->res.array.hArray = record->array;
      }
      return true;
    }
    case CU_RESOURCE_TYPE_LINEAR:
    case CU_RESOURCE_TYPE_PITCH2D: {
      if (surface) return refuse(reply, cudaErrorInvalidValue, "a surface object on linear memory");
      const std::uint32_t element = arrays::elementBytes(in.format(), in.channels());
      if (element == 0)
        return refuse(reply, cudaErrorInvalidChannelDescriptor, "a format the worker does not admit");
      if (in.type() == CU_RESOURCE_TYPE_LINEAR) {
        if (in.size_bytes() == 0) return refuse(reply, cudaErrorInvalidValue, "a linear texture of no bytes");
        const std::uint64_t viewed = linearBytesInside(ctx, in.device(), in.size_bytes(), element);
        if (!checkLinear(ctx, in.device(), viewed, reply)) return false;
        out->res.linear = {.devPtr = in.device(),
                           .format = static_cast<CUarray_format>(in.format()),
                           .numChannels = in.channels(),
                           .sizeInBytes = viewed};
        return true;
      }
      constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
      if (in.width() == 0 || in.height() == 0 || in.width() > kMax / element ||
          in.width() * element > in.pitch()) {
        return refuse(reply, cudaErrorInvalidValue, "a pitched texture whose rows do not fit in its pitch");
      }
      if (in.height() > kMax / in.pitch()) {
        return refuse(reply, cudaErrorInvalidValue, "a pitched texture whose pitch * height overflows");
      }
      if (!checkLinear(ctx, in.device(), in.pitch() * in.height(), reply)) return false;
      out->res.pitch2D = {.devPtr = in.device(),
                          .format = static_cast<CUarray_format>(in.format()),
                          .numChannels = in.channels(),
                          .width = in.width(),
                          .height = in.height(),
                          .pitchInBytes = in.pitch()};
      return true;
    }
    default:
      return refuse(reply, cudaErrorInvalidValue, "a resource type the worker does not admit");
  }
}

bool textureDescriptionOf(const v1::TextureDescription& in, CUDA_TEXTURE_DESC* out, v1::CallReply& reply) {
  *out = CUDA_TEXTURE_DESC{};
  if (in.address_mode_size() > 3 || in.border_color_size() > 4 ||
      (in.flags() & ~kAdmittedTextureFlags) != 0) {
    return refuse(reply, cudaErrorInvalidValue, "a texture description the worker does not admit");
  }
  for (int i = 0; i < in.address_mode_size(); ++i)
    out->addressMode[i] = static_cast<CUaddress_mode>(in.address_mode(i));
  for (int i = 0; i < in.border_color_size(); ++i) out->borderColor[i] = in.border_color(i);
  out->filterMode = static_cast<CUfilter_mode>(in.filter_mode());
  out->flags = in.flags();
  out->maxAnisotropy = in.max_anisotropy();
  out->mipmapFilterMode = static_cast<CUfilter_mode>(in.mipmap_filter_mode());
  out->mipmapLevelBias = in.mipmap_level_bias();
  out->minMipmapLevelClamp = in.min_mipmap_level_clamp();
  out->maxMipmapLevelClamp = in.max_mipmap_level_clamp();
  return true;
}

// Records an object the driver made; one the table cannot take is destroyed again.
void recordObject(CallContext& ctx, std::uint64_t handle, ObjectRecord record, v1::CallReply& reply) {
  if (!ctx.session.arrays.addObject(handle, record)) {
    if (record.kind == ObjectKind::kTexture) {
      ctx.gpu.texObjectDestroy(handle);
    } else {
      ctx.gpu.surfObjectDestroy(handle);
    }
    refuse(reply, cudaErrorUnknown, "the driver returned an object handle that is still in use");
    return;
  }
  reply.mutable_array_texture_result()->set_object(handle);
}

}  // namespace

void createTextureObject(CallContext& ctx, const v1::ArrayTexture& args, v1::CallReply& reply) {
  CUDA_RESOURCE_DESC resource;
  CUDA_TEXTURE_DESC texture;
  Token root = 0;
  if (!resolveResource(ctx, args.resource(), false, &resource, &root, reply)) return;
  if (!textureDescriptionOf(args.texture(), &texture, reply)) return;
  if (ctx.session.arrays.full()) {
    refuse(reply, cudaErrorMemoryAllocation, "too many arrays and objects for one client");
    return;
  }
  CUtexObject object = 0;
  if (!succeeded(ctx, ctx.gpu.texObjectCreate(resource, texture, &object), reply, "cuTexObjectCreate"))
    return;
  recordObject(ctx, object, {ObjectKind::kTexture, root}, reply);
}

void createSurfaceObject(CallContext& ctx, const v1::ArrayTexture& args, v1::CallReply& reply) {
  CUDA_RESOURCE_DESC resource;
  Token root = 0;
  if (args.resource().type() != CU_RESOURCE_TYPE_ARRAY) {
    refuse(reply, cudaErrorInvalidValue, "a surface object views an array only");
    return;
  }
  if (!resolveResource(ctx, args.resource(), true, &resource, &root, reply)) return;
  if (ctx.session.arrays.full()) {
    refuse(reply, cudaErrorMemoryAllocation, "too many arrays and objects for one client");
    return;
  }
  CUsurfObject object = 0;
  if (!succeeded(ctx, ctx.gpu.surfObjectCreate(resource, &object), reply, "cuSurfObjectCreate")) return;
  recordObject(ctx, object, {ObjectKind::kSurface, root}, reply);
}

void destroyObject(CallContext& ctx, const v1::ArrayTexture& args, ObjectKind kind, v1::CallReply& reply) {
  std::vector<ArrayRecord> release;
  if (!ctx.session.arrays.removeObject(args.object(), kind, &release)) {
    refuse(reply, cudaErrorInvalidValue,
           kind == ObjectKind::kTexture ? "not a texture object of this client"
                                        : "not a surface object of this client");
    return;
  }
  const CUresult result = kind == ObjectKind::kTexture ? ctx.gpu.texObjectDestroy(args.object())
                                                       : ctx.gpu.surfObjectDestroy(args.object());
  if (result != CUDA_SUCCESS)
    spdlog::warn("client {}: destroying an object failed ({})", ctx.session.id(), int(result));
  if (!release.empty() && succeeded(ctx, ctx.gpu.synchronizeContext(), reply, "cuCtxSynchronize")) {
    destroyArrayRecords(ctx.gpu, ctx.memory, ctx.session, release);
  }
  succeeded(ctx, result, reply, kind == ObjectKind::kTexture ? "cuTexObjectDestroy" : "cuSurfObjectDestroy");
}

}  // namespace agileos::worker
