// Events. Inter-process events are refused: their IPC handles would cross the
// client boundary.
#include "worker/dispatcher.h"

namespace agileos::worker {
namespace {

constexpr unsigned kClientEventFlags = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING;

void eventCreate(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const unsigned flags = request.event_create().flags();
  if ((flags & ~kClientEventFlags) != 0) {
    refuse(reply, cudaErrorInvalidValue, "unsupported event flags (inter-process events are refused)");
    return;
  }
  if (ctx.session.events.full()) {
    refuse(reply, cudaErrorMemoryAllocation, "the client holds the most events a client may");
    return;
  }
  CUevent event = nullptr;
  if (!succeeded(ctx, ctx.gpu.eventCreate(flags, &event), reply, "cuEventCreate")) return;
  reply.mutable_token()->set_token(ctx.session.events.insert({event, flags}));
}

void eventDestroy(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  auto record = ctx.session.events.erase(request.event_destroy().event());
  if (!record) {
    refuse(reply, cudaErrorInvalidResourceHandle, "unknown event handle");
    return;
  }
  succeeded(ctx, ctx.gpu.eventDestroy(record->event), reply, "cuEventDestroy");
}

void eventRecord(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.event_record();
  if ((args.flags() & ~static_cast<unsigned>(CU_EVENT_RECORD_EXTERNAL)) != 0) {
    refuse(reply, cudaErrorInvalidValue, "unknown record flags");
    return;
  }
  CUevent event = nullptr;
  CUstream stream = nullptr;
  if (!resolveEvent(ctx, args.event(), &event, reply)) return;
  if (!resolveStream(ctx, args.stream(), &stream, reply)) return;
  succeeded(ctx, ctx.gpu.eventRecord(event, stream, args.flags()), reply, "cuEventRecord");
}

void eventSynchronize(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  CUevent event = nullptr;
  if (!resolveEvent(ctx, request.event_synchronize().event(), &event, reply)) return;
  succeeded(ctx, ctx.gpu.eventSynchronize(event), reply, "cuEventSynchronize");
}

void eventQuery(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  CUevent event = nullptr;
  if (!resolveEvent(ctx, request.event_query().event(), &event, reply)) return;
  const CUresult result = ctx.gpu.eventQuery(event);
  if (result == CUDA_ERROR_NOT_READY) {
    reply.set_error(cudaErrorNotReady);
    return;
  }
  succeeded(ctx, result, reply, "cuEventQuery");
}

void eventElapsedTime(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.event_elapsed_time();
  CUevent start = nullptr, end = nullptr;
  if (!resolveEvent(ctx, args.start(), &start, reply)) return;
  if (!resolveEvent(ctx, args.end(), &end, reply)) return;
  float ms = 0;
  const CUresult result = ctx.gpu.eventElapsedTime(&ms, start, end);
  if (result == CUDA_ERROR_NOT_READY) {
    reply.set_error(cudaErrorNotReady);
    return;
  }
  if (!succeeded(ctx, result, reply, "cuEventElapsedTime")) return;
  reply.mutable_elapsed_time()->set_milliseconds(ms);
}

}  // namespace

void registerEventHandlers(HandlerRegistry& registry) {
  using Op = v1::CallRequest::OpCase;
  registry.add(Op::kEventCreate, eventCreate);
  registry.add(Op::kEventDestroy, eventDestroy, Exclusivity::kInvalidates);
  registry.add(Op::kEventRecord, eventRecord);
  registry.add(Op::kEventSynchronize, eventSynchronize);
  registry.add(Op::kEventQuery, eventQuery);
  registry.add(Op::kEventElapsedTime, eventElapsedTime);
}

}  // namespace agileos::worker
