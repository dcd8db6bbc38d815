// Tensor maps (proto TensorMapEncode): the worker encodes every map a client uses, from a
// description it validated (worker/tensor_maps/tensor_map_description.h) whose whole reachable
// range lies inside one live allocation of the client in the user range, and records the bytes
// (worker/tensor_maps/tensor_map_table.h). cuTensorMapReplaceAddress is an encode of the recorded
// description of an issued map at a new address, checked the same way. At launch, a guarded
// kernel's tensor-map parameters must hold issued maps still over live memory
// (checkTensorMapArguments).
#include "worker/handlers/tensor_map_handlers.h"

#include <spdlog/spdlog.h>

#include <atomic>

#include "memmgr/address_layout.h"
#include "worker/dispatcher.h"

namespace agileos::worker {
namespace {

using Encode = v1::TensorMapEncode;

// The map's range lies inside one live allocation of the client, in the user range (not a module
// variable: its address is the driver's, and may serve other code once its module is unloaded).
bool rangeIsLive(CallContext& ctx, const IssuedTensorMap& map) {
  const std::uint64_t base = map.description.globalAddress;
  return memmgr::classify(base) == memmgr::RegionKind::kUser &&
         ctx.memory.check(ctx.session.id(), base, map.extentBytes) == memmgr::PointerCheck::kOk;
}

template <typename Field, typename Out, std::size_t N>
bool copyRepeated(const google::protobuf::RepeatedField<Field>& in, std::size_t count,
                  std::array<Out, N>* out) {
  if (static_cast<std::size_t>(in.size()) != count || count > N) return false;
  for (std::size_t i = 0; i < count; ++i) (*out)[i] = in[static_cast<int>(i)];
  return true;
}

// The description a request asks for; false when its arrays do not have the rank's lengths.
bool describe(const Encode& args, TensorMapDescription* d) {
  switch (args.kind()) {
    case Encode::TILED:
      d->kind = TensorMapDescription::Kind::kTiled;
      break;
    case Encode::IM2COL:
      d->kind = TensorMapDescription::Kind::kIm2col;
      break;
    case Encode::IM2COL_WIDE:
      d->kind = TensorMapDescription::Kind::kIm2colWide;
      break;
    default:
      return false;
  }
  d->dataType = args.data_type();
  d->rank = args.rank();
  d->globalAddress = args.global_address();
  d->interleave = args.interleave();
  d->swizzle = args.swizzle();
  d->l2Promotion = args.l2_promotion();
  d->oobFill = args.oob_fill();
  d->channelsPerPixel = args.channels_per_pixel();
  d->pixelsPerColumn = args.pixels_per_column();
  d->wideMode = args.wide_mode();
  d->pixelBoxLowerCornerWidth = args.pixel_box_lower_corner_width();
  d->pixelBoxUpperCornerWidth = args.pixel_box_upper_corner_width();
  const std::size_t rank = d->rank;
  if (rank < 1 || rank > 5) return true;  // validate() refuses it with its reason
  if (!copyRepeated(args.global_dim(), rank, &d->globalDim) ||
      !copyRepeated(args.global_strides(), rank - 1, &d->globalStrides) ||
      !copyRepeated(args.element_strides(), rank, &d->elementStrides)) {
    return false;
  }
  if (d->kind == TensorMapDescription::Kind::kTiled) return copyRepeated(args.box_dim(), rank, &d->boxDim);
  if (d->kind == TensorMapDescription::Kind::kIm2col) {
    return rank >= 3 && copyRepeated(args.pixel_box_lower_corner(), rank - 2, &d->pixelBoxLowerCorner) &&
           copyRepeated(args.pixel_box_upper_corner(), rank - 2, &d->pixelBoxUpperCorner);
  }
  return true;
}

const char* driverCall(TensorMapDescription::Kind kind) {
  switch (kind) {
    case TensorMapDescription::Kind::kTiled:
      return "cuTensorMapEncodeTiled";
    case TensorMapDescription::Kind::kIm2col:
      return "cuTensorMapEncodeIm2col";
    case TensorMapDescription::Kind::kIm2colWide:
      return "cuTensorMapEncodeIm2colWide";
  }
  return "cuTensorMapEncode";
}

// Validates `description`, checks its range, encodes and records it, and replies with the bytes.
void encodeAndRecord(CallContext& ctx, const TensorMapDescription& description, v1::CallReply& reply) {
  const TensorMapVerdict verdict = validate(description);
  if (verdict.result == CUDA_ERROR_NOT_SUPPORTED) {
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true)) spdlog::warn("client {}: {}", ctx.session.id(), verdict.reason);
    refuse(reply, cudaErrorNotSupported, verdict.reason);
    return;
  }
  if (verdict.result != CUDA_SUCCESS) {
    refuse(reply, cudaErrorInvalidValue, verdict.reason);
    return;
  }
  const IssuedTensorMap issued{description, verdict.extentBytes};
  if (memmgr::classify(description.globalAddress) != memmgr::RegionKind::kUser) {
    refuse(reply, cudaErrorInvalidValue, "a tensor map outside the client's allocations");
    return;
  }
  if (!checkRange(ctx, description.globalAddress, verdict.extentBytes, reply, "tensor map")) return;
  CUtensorMap map{};  // aligned as its type says, 128 bytes (an alignas(64) here gave 64: UBSan)
  if (!succeeded(ctx, ctx.gpu.tensorMapEncode(description, &map), reply, driverCall(description.kind)))
    return;
  const std::string_view bytes(reinterpret_cast<const char*>(&map), sizeof map);
  if (!ctx.session.tensorMaps.add(bytes, issued,
                                  [&](const IssuedTensorMap& m) { return !rangeIsLive(ctx, m); })) {
    refuse(reply, cudaErrorMemoryAllocation, "the client holds the most tensor maps a client may");
    return;
  }
  reply.mutable_tensor_map_encoded()->set_map(std::string(bytes));
}

void tensorMapEncode(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const Encode& args = request.tensor_map_encode();
  if (args.kind() == Encode::REPLACE_ADDRESS) {
    // The map must be one this client was issued; its recorded description, at the new address.
    std::optional<IssuedTensorMap> issued;
    if (args.map().size() == kTensorMapBytes) issued = ctx.session.tensorMaps.find(args.map());
    if (!issued) {
      refuse(reply, cudaErrorInvalidValue, "cuTensorMapReplaceAddress of a map the worker did not issue");
      return;
    }
    TensorMapDescription description = issued->description;
    description.globalAddress = args.global_address();
    encodeAndRecord(ctx, description, reply);
    return;
  }
  TensorMapDescription description;
  if (!describe(args, &description)) {
    refuse(reply, cudaErrorInvalidValue,
           "a tensor map description whose arrays do not match its rank and kind");
    return;
  }
  encodeAndRecord(ctx, description, reply);
}

}  // namespace

bool checkTensorMapArguments(CallContext& ctx, const FunctionRecord& function, std::string_view params,
                             v1::CallReply& reply) {
  for (std::uint32_t offset : *function.tensorMapOffsets) {
    // The layout check before this one makes every parameter lie inside `params`.
    if (offset > params.size() || params.size() - offset < kTensorMapBytes) {
      return refuse(reply, cudaErrorInvalidValue, "a tensor map parameter outside the parameter block");
    }
    const std::string_view bytes = params.substr(offset, kTensorMapBytes);
    const std::optional<IssuedTensorMap> issued = ctx.session.tensorMaps.find(bytes);
    if (!issued) {
      SPDLOG_DEBUG("client {}: launch refused: tensor map parameter at offset {} is not an issued map",
                   ctx.session.id(), offset);
      return refuse(reply, cudaErrorInvalidValue,
                    "a kernel's tensor map parameter is not a map encoded through the API for this client");
    }
    if (!rangeIsLive(ctx, *issued)) {
      ctx.session.tensorMaps.erase(bytes);
      return refuse(reply, cudaErrorInvalidValue,
                    "a kernel's tensor map parameter describes memory that was freed since it was encoded");
    }
  }
  return true;
}

void registerTensorMapHandlers(HandlerRegistry& registry) {
  registry.add(v1::CallRequest::kTensorMapEncode, tensorMapEncode);
}

}  // namespace agileos::worker
