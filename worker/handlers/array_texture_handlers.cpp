// CUDA arrays and the copies that name them (proto ArrayTexture). Arrays are made by the worker
// from descriptors it checked (array_geometry.h), charged to the client's quota
// (DriverShare::kArrays) before the driver allocates them, and named by tokens of the client's
// ArrayTable. A copy's array end is bounded by the array's extent, its linear end by one live
// allocation of the client (the whole pitched span) or by the host bytes the transport carries.
#include "worker/handlers/array_texture_handlers.h"

#include <spdlog/spdlog.h>

#include "worker/array_texture/array_geometry.h"

namespace agileos::worker {
namespace {

constexpr memmgr::DriverShare kShare = memmgr::DriverShare::kArrays;
// Largest inline payload of one message (as memory_handlers.cpp); clients split bigger copies.
constexpr std::uint64_t kMaxInlineBytes = 64ull << 20;

CUDA_ARRAY3D_DESCRIPTOR descriptorOf(const v1::ArrayDescriptor& in) {
  CUDA_ARRAY3D_DESCRIPTOR out{};
  out.Width = in.width();
  out.Height = in.height();
  out.Depth = in.depth();
  out.Format = static_cast<CUarray_format>(in.format());
  out.NumChannels = in.channels();
  out.Flags = in.flags();
  return out;
}

void describe(const CUDA_ARRAY3D_DESCRIPTOR& in, v1::ArrayDescriptor* out) {
  out->set_width(in.Width);
  out->set_height(in.Height);
  out->set_depth(in.Depth);
  out->set_format(in.Format);
  out->set_channels(in.NumChannels);
  out->set_flags(in.Flags);
}

// Charges, creates and records a plain (levels 0) or mipmapped array.
void createArray(CallContext& ctx, const v1::ArrayTexture& args, bool mipmapped, v1::CallReply& reply) {
  const CUDA_ARRAY3D_DESCRIPTOR descriptor = descriptorOf(args.shape());
  const unsigned levels = mipmapped ? args.levels() : 0;
  if (mipmapped && levels == 0) {
    refuse(reply, cudaErrorInvalidValue, "a mipmapped array without levels");
    return;
  }
  if (const std::string why = arrays::checkDescriptor(descriptor, levels); !why.empty()) {
    refuse(reply, cudaErrorInvalidValue, why);
    return;
  }
  if (ctx.session.arrays.full()) {
    refuse(reply, cudaErrorMemoryAllocation, "too many arrays and objects for one client");
    return;
  }
  const std::uint64_t bytes = arrays::chargedBytes(descriptor, levels);
  if (!ctx.memory.addDriverCharge(ctx.session.id(), kShare, bytes)) {
    refuse(reply, cudaErrorMemoryAllocation, "the array does not fit in the client's device-memory quota");
    return;
  }
  ArrayRecord record{.descriptor = descriptor, .levels = levels, .chargedBytes = bytes};
  const CUresult result = mipmapped ? ctx.gpu.mipmappedArrayCreate(descriptor, levels, &record.mipmapped)
                                    : ctx.gpu.arrayCreate(descriptor, &record.array);
  if (!succeeded(ctx, result, reply, mipmapped ? "cuMipmappedArrayCreate" : "cuArray3DCreate")) {
    ctx.memory.subtractDriverCharge(ctx.session.id(), kShare, bytes);
    return;
  }
  reply.mutable_array_texture_result()->set_array(ctx.session.arrays.add(record));
}

void mipmapLevel(CallContext& ctx, const v1::ArrayTexture& args, v1::CallReply& reply) {
  const std::optional<ArrayRecord> parent = ctx.session.arrays.find(args.array());
  if (!parent || parent->mipmapped == nullptr) {
    refuse(reply, cudaErrorInvalidResourceHandle, "not a mipmapped array of this client");
    return;
  }
  if (args.level() >= parent->levels) {
    refuse(reply, cudaErrorInvalidValue, "a level the mipmapped array does not have");
    return;
  }
  ArrayRecord level{.descriptor = arrays::levelDescriptor(parent->descriptor, args.level())};
  if (!succeeded(ctx, ctx.gpu.mipmappedArrayLevel(parent->mipmapped, args.level(), &level.array), reply,
                 "cuMipmappedArrayGetLevel")) {
    return;
  }
  const Token token = ctx.session.arrays.levelToken(args.array(), args.level(), level);
  if (token == 0) {
    refuse(reply, cudaErrorInvalidResourceHandle, "not a mipmapped array of this client");
    return;
  }
  reply.mutable_array_texture_result()->set_array(token);
  describe(level.descriptor, reply.mutable_array_texture_result()->mutable_shape());
}

void destroyArray(CallContext& ctx, const v1::ArrayTexture& args, v1::CallReply& reply) {
  const std::optional<ArrayRecord> record = ctx.session.arrays.find(args.array());
  if (!record || record->parent != 0) {
    refuse(reply, cudaErrorInvalidValue, "not an array of this client (or a level of a mipmapped one)");
    return;
  }
  // cudaFreeArray waits for the device, as cudaFree does: no copy or kernel may still use it.
  // (Alone within the client: nothing else of it runs between here and the removal.)
  if (!succeeded(ctx, ctx.gpu.synchronizeContext(), reply, "cuCtxSynchronize")) return;
  const std::optional<std::vector<ArrayRecord>> records = ctx.session.arrays.remove(args.array());
  if (records) destroyArrayRecords(ctx.gpu, ctx.memory, ctx.session, *records);
}

// One end of a copy, resolved: what CUDA_MEMCPY3D takes for it.
struct ResolvedEnd {
  CUmemorytype type = CU_MEMORYTYPE_HOST;
  CUarray array = nullptr;
  CUdeviceptr device = 0;
  const void* host = nullptr;
  std::uint64_t pitch = 0, rows = 0;
};

// Resolves one end of `args` (the source when `source`). `box` is the copy's box at this end.
bool resolveEnd(CallContext& ctx, const v1::ArrayTexture& args, bool source, const arrays::Box& box,
                ResolvedEnd* end, std::shared_ptr<SharedHostSegment>* segment, v1::CallReply& reply) {
  const v1::ArrayCopyEnd& in = source ? args.src() : args.dst();
  const char* what = source ? "source" : "destination";
  if (in.array() != 0) {
    const std::optional<ArrayRecord> record = ctx.session.arrays.find(in.array());
    if (!record || record->array == nullptr) {
      return refuse(reply, cudaErrorInvalidResourceHandle,
                    std::string(what) + " is not an array of this client");
    }
    const std::uint32_t element =
        arrays::elementBytes(record->descriptor.Format, record->descriptor.NumChannels);
    const std::string why = arrays::checkArrayBox(arrays::levelExtent(record->descriptor, 0), element, box);
    if (!why.empty()) return refuse(reply, cudaErrorInvalidValue, std::string(what) + ": " + why);
    end->type = CU_MEMORYTYPE_ARRAY;
    end->array = record->array;
    return true;
  }
  const std::optional<std::uint64_t> span = arrays::pitchedSpan(in.pitch(), in.rows(), box);
  if (!span)
    return refuse(reply, cudaErrorInvalidPitchValue, std::string(what) + ": rows outside their pitch");
  end->pitch = in.pitch();
  end->rows = in.rows();
  const int kinds = (in.device() != 0) + in.has_host() + in.inline_host();
  if (kinds != 1) return refuse(reply, cudaErrorInvalidValue, std::string(what) + ": not exactly one memory");
  if (in.device() != 0) {
    if (!checkRange(ctx, in.device(), *span, reply, what)) return false;
    end->type = CU_MEMORYTYPE_DEVICE;
    end->device = in.device();
    return true;
  }
  end->type = CU_MEMORYTYPE_HOST;
  if (in.has_host()) {
    if (*span > in.host().size())
      return refuse(reply, cudaErrorInvalidValue, std::string(what) + " past its host buffer");
    std::uint8_t* host = nullptr;
    if (!resolveHostBuffer(ctx, in.host(), &host, segment, reply)) return false;
    end->host = host;
    return true;
  }
  // Inline bytes: the request's data (to an array), or the reply's (from one).
  if (source) {
    if (*span > args.data().size())
      return refuse(reply, cudaErrorInvalidValue, "source past the request's bytes");
    end->host = args.data().data();
  } else {
    if (*span > kMaxInlineBytes)
      return refuse(reply, cudaErrorInvalidValue, "a copy larger than one reply carries");
    std::string* data = reply.mutable_array_texture_result()->mutable_data();
    data->resize(*span);
    end->host = data->data();
  }
  return true;
}

void copy(CallContext& ctx, const v1::ArrayTexture& args, v1::CallReply& reply) {
  if (args.src().array() == 0 && args.dst().array() == 0) {
    refuse(reply, cudaErrorInvalidValue, "an array copy without an array");
    return;
  }
  if (args.width_bytes() == 0 || args.height() == 0 || args.depth() == 0) return;
  auto boxAt = [&](const v1::ArrayCopyEnd& end) {
    return arrays::Box{end.x(), end.y(), end.z(), args.width_bytes(), args.height(), args.depth()};
  };
  ResolvedEnd src, dst;
  std::shared_ptr<SharedHostSegment> srcSegment, dstSegment;
  if (!resolveEnd(ctx, args, true, boxAt(args.src()), &src, &srcSegment, reply)) return;
  if (!resolveEnd(ctx, args, false, boxAt(args.dst()), &dst, &dstSegment, reply)) {
    reply.mutable_array_texture_result()->clear_data();
    return;
  }
  CUstream stream = nullptr;
  if (!resolveStream(ctx, args.stream(), &stream, reply)) {
    reply.clear_array_texture_result();
    return;
  }
  CUDA_MEMCPY3D copy{};
  copy.srcXInBytes = args.src().x();
  copy.srcY = args.src().y();
  copy.srcZ = args.src().z();
  copy.srcMemoryType = src.type;
  copy.srcHost = src.host;
  copy.srcDevice = src.device;
  copy.srcArray = src.array;
  copy.srcPitch = src.pitch;
  copy.srcHeight = src.rows;
  copy.dstXInBytes = args.dst().x();
  copy.dstY = args.dst().y();
  copy.dstZ = args.dst().z();
  copy.dstMemoryType = dst.type;
  copy.dstHost = const_cast<void*>(dst.host);
  copy.dstDevice = dst.device;
  copy.dstArray = dst.array;
  copy.dstPitch = dst.pitch;
  copy.dstHeight = dst.rows;
  copy.WidthInBytes = args.width_bytes();
  copy.Height = args.height();
  copy.Depth = args.depth();
  if (!succeeded(ctx, ctx.gpu.copy3D(copy, stream, args.async()), reply, "cuMemcpy3D")) {
    reply.mutable_array_texture_result()->clear_data();
  }
}

void arrayTexture(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const v1::ArrayTexture& args = request.array_texture();
  switch (args.step()) {
    case v1::ArrayTexture::ARRAY_CREATE:
      return createArray(ctx, args, false, reply);
    case v1::ArrayTexture::MIPMAPPED_CREATE:
      return createArray(ctx, args, true, reply);
    case v1::ArrayTexture::MIPMAP_LEVEL:
      return mipmapLevel(ctx, args, reply);
    case v1::ArrayTexture::ARRAY_DESTROY:
      return destroyArray(ctx, args, reply);
    case v1::ArrayTexture::COPY:
      return copy(ctx, args, reply);
    case v1::ArrayTexture::TEXTURE_CREATE:
      return createTextureObject(ctx, args, reply);
    case v1::ArrayTexture::TEXTURE_DESTROY:
      return destroyObject(ctx, args, ObjectKind::kTexture, reply);
    case v1::ArrayTexture::SURFACE_CREATE:
      return createSurfaceObject(ctx, args, reply);
    case v1::ArrayTexture::SURFACE_DESTROY:
      return destroyObject(ctx, args, ObjectKind::kSurface, reply);
    default:
      refuse(reply, cudaErrorInvalidValue, "unknown array or texture step");
      return;
  }
}

}  // namespace

Exclusivity arrayTextureExclusivity(const v1::ArrayTexture& request) {
  switch (request.step()) {
    case v1::ArrayTexture::ARRAY_DESTROY:
    case v1::ArrayTexture::TEXTURE_DESTROY:
    case v1::ArrayTexture::SURFACE_DESTROY:
      return Exclusivity::kInvalidates;
    default:
      return Exclusivity::kConcurrent;
  }
}

void destroyArrayRecords(GpuBackend& gpu, memmgr::MemoryManager& memory, ClientSession& session,
                         const std::vector<ArrayRecord>& records) {
  for (const ArrayRecord& record : records) {
    if (record.parent != 0) continue;  // a level goes with its mipmapped array
    const CUresult result = record.mipmapped != nullptr ? gpu.mipmappedArrayDestroy(record.mipmapped)
                                                        : gpu.arrayDestroy(record.array);
    if (result != CUDA_SUCCESS) {
      // The driver may still hold the memory: it stays charged until the session ends.
      spdlog::warn("client {}: destroying an array failed ({})", session.id(), int(result));
      continue;
    }
    memory.subtractDriverCharge(session.id(), kShare, record.chargedBytes);
  }
}

void releaseArraysAndObjects(GpuBackend& gpu, memmgr::MemoryManager& memory, ClientSession& session) {
  std::vector<std::pair<std::uint64_t, ObjectRecord>> objects;
  std::vector<ArrayRecord> records;
  session.arrays.drain(&objects, &records);
  for (const auto& [handle, object] : objects) {
    if (object.kind == ObjectKind::kTexture) {
      gpu.texObjectDestroy(handle);
    } else {
      gpu.surfObjectDestroy(handle);
    }
  }
  destroyArrayRecords(gpu, memory, session, records);
}

void registerArrayTextureHandlers(HandlerRegistry& registry) {
  // The exclusivity per step comes from arrayTextureExclusivity (Dispatcher::exclusivity).
  registry.add(v1::CallRequest::kArrayTexture, arrayTexture);
}

}  // namespace agileos::worker
