// Streams. A stream exists for the client only as a token in its session's table.
#include "worker/dispatcher.h"
#include "worker/handlers/launch_attributes.h"

namespace agileos::worker {
namespace {

void streamCreate(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.stream_create();
  if ((args.flags() & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0) {
    refuse(reply, cudaErrorInvalidValue, "unknown stream flags");
    return;
  }
  if (ctx.session.streams.full()) {
    refuse(reply, cudaErrorMemoryAllocation, "the client holds the most streams a client may");
    return;
  }
  CUstream stream = nullptr;
  if (!succeeded(ctx, ctx.gpu.streamCreate(args.flags(), args.priority(), &stream), reply,
                 "cuStreamCreate")) {
    return;
  }
  const Token token = ctx.session.streams.insert({stream, args.flags(), args.priority()});
  reply.mutable_token()->set_token(token);
}

void streamDestroy(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  auto record = ctx.session.streams.erase(request.stream_destroy().stream());
  if (!record) {
    refuse(reply, cudaErrorInvalidResourceHandle, "unknown stream handle");
    return;
  }
  // Kept launch chains of this stream go first: the driver may give its handle to a later stream.
  ctx.session.launchChains.dropStream(ctx.gpu, record->stream);
  succeeded(ctx, ctx.gpu.streamDestroy(record->stream), reply, "cuStreamDestroy");
}

void streamSynchronize(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  CUstream stream = nullptr;
  if (!resolveStream(ctx, request.stream_synchronize().stream(), &stream, reply)) return;
  succeeded(ctx, ctx.gpu.streamSynchronize(stream), reply, "cuStreamSynchronize");
}

void streamQuery(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  CUstream stream = nullptr;
  if (!resolveStream(ctx, request.stream_query().stream(), &stream, reply)) return;
  const CUresult result = ctx.gpu.streamQuery(stream);
  if (result == CUDA_ERROR_NOT_READY) {
    reply.set_error(cudaErrorNotReady);  // a status, not a failure
    return;
  }
  succeeded(ctx, result, reply, "cuStreamQuery");
}

// Validates the stream (a forged token is refused as for every stream argument) and
// returns the driver's id for it. The client builds cudaStreamGetId, cudaStreamGetDevice
// and the capture-status queries on it: none of them may succeed for a forged stream.
void streamGetId(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  CUstream stream = nullptr;
  if (!resolveStream(ctx, request.stream_get_id().stream(), &stream, reply)) return;
  unsigned long long id = 0;
  if (!succeeded(ctx, ctx.gpu.streamGetId(stream, &id), reply, "cuStreamGetId")) return;
  reply.mutable_stream_id()->set_id(id);
}

// The attributes a stream carries for the work launched on it (cuStreamSetAttribute's documented
// kinds); launch-only ones (clusters, carveout, ...) are refused for streams.
bool isStreamAttribute(int id) {
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      return true;
    default:
      return false;
  }
}

// cuStreamSetAttribute / cuStreamGetAttribute on one of the client's streams: a value is checked
// as a launch's would be (launch_attributes.h), the access policy window confined to the client's
// memory; a get names only the attribute.
void streamAttribute(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.stream_attribute();
  CUstream stream = nullptr;
  if (!resolveStream(ctx, args.stream(), &stream, reply)) return;
  if (!isStreamAttribute(args.value().id())) {
    refuse(reply, cudaErrorInvalidValue,
           "attribute " + std::to_string(args.value().id()) + " is not a stream's");
    return;
  }
  CUlaunchAttribute attribute{};
  attribute.id = static_cast<CUlaunchAttributeID>(args.value().id());
  if (!args.set()) {
    if (!succeeded(ctx, ctx.gpu.streamGetAttribute(stream, attribute.id, &attribute.value), reply,
                   "cuStreamGetAttribute")) {
      return;
    }
    writeLaunchAttribute(attribute, reply.mutable_stream_attribute_value());
    return;
  }
  std::string reason;
  if (!readLaunchAttribute(args.value(), &attribute, &reason,
                           [&ctx](std::uint64_t base, std::uint64_t* bytes) {
                             return confineAccessWindow(ctx, base, bytes);
                           })) {
    refuse(reply, cudaErrorInvalidValue, reason);
    return;
  }
  succeeded(ctx, ctx.gpu.streamSetAttribute(stream, attribute.id, attribute.value), reply,
            "cuStreamSetAttribute");
}

void streamWaitEvent(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.stream_wait_event();
  if ((args.flags() & ~static_cast<unsigned>(CU_EVENT_WAIT_EXTERNAL)) != 0) {
    refuse(reply, cudaErrorInvalidValue, "unknown wait flags");
    return;
  }
  CUstream stream = nullptr;
  CUevent event = nullptr;
  if (!resolveStream(ctx, args.stream(), &stream, reply)) return;
  if (!resolveEvent(ctx, args.event(), &event, reply)) return;
  succeeded(ctx, ctx.gpu.streamWaitEvent(stream, event, args.flags()), reply, "cuStreamWaitEvent");
}

}  // namespace

void registerStreamHandlers(HandlerRegistry& registry) {
  using Op = v1::CallRequest::OpCase;
  registry.add(Op::kStreamCreate, streamCreate);
  registry.add(Op::kStreamDestroy, streamDestroy, Exclusivity::kInvalidates);
  registry.add(Op::kStreamSynchronize, streamSynchronize);
  registry.add(Op::kStreamQuery, streamQuery);
  registry.add(Op::kStreamWaitEvent, streamWaitEvent);
  registry.add(Op::kStreamGetId, streamGetId);
  registry.add(Op::kStreamAttribute, streamAttribute);
}

}  // namespace agileos::worker
