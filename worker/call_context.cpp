#include "worker/call_context.h"

#include <spdlog/spdlog.h>

#include "worker/cuda_errors.h"
#include "worker/handlers/guard_handlers.h"
#include "worker/launch_batch.h"

namespace agileos::worker {

bool succeeded(CallContext& ctx, CUresult result, v1::CallReply& reply, const char* what) {
  if (result == CUDA_SUCCESS) return true;
  reply.set_error(toCudaError(result));
  if (isContextFatal(result) && ctx.taint != nullptr) {
    std::string reason = std::string(what) + " reported CUresult " + std::to_string(result);
    // Under trap the guard sends a protected access into its fault window: say so, as the
    // driver only sees an illegal address.
    const GuardConfig& guard = ctx.session.guard.setting;
    if (result == CUDA_ERROR_ILLEGAL_ADDRESS && guard.enabled &&
        guard.ptx.policy == ptx::GuardPolicy::kTrap) {
      reason += " (an access the kernel memory guard stopped, or another illegal address)";
    }
    ctx.taint->contextTainted(ctx.session.id(), reason);
  }
  return false;
}

void flushHeldLaunches(CallContext& ctx) {
  if (ctx.shared == nullptr || ctx.shared->launches == nullptr || ctx.shared->launches->empty()) return;
  if (ctx.session.guard.poisoned.load()) {
    // Poisoned by the guard meanwhile (through another connection): like every later call of the
    // client, the held launches are refused and never run (and the context is not tainted: poison
    // keeps it usable).
    ctx.shared->launches->discard();
    if (ctx.shared->heldLaunchError == 0) {
      v1::CallReply refused;
      refusePoisoned(refused);
      ctx.shared->heldLaunchError = refused.error();
      ctx.shared->heldLaunchDetail = refused.error_detail();
    }
    return;
  }
  std::string what;
  const CUresult result = ctx.shared->launches->flush(ctx, &what);
  if (result == CUDA_SUCCESS) return;
  v1::CallReply failure;
  succeeded(ctx, result, failure, what.c_str());  // a context-fatal failure is reported as any call's
  if (ctx.shared->heldLaunchError == 0) {
    ctx.shared->heldLaunchError = failure.error();
    ctx.shared->heldLaunchDetail = what + " failed with CUresult " + std::to_string(result);
  }
}

bool refuse(v1::CallReply& reply, cudaError_t error, std::string detail) {
  reply.set_error(error);
  reply.set_error_detail(std::move(detail));
  return false;
}

bool resolveStream(CallContext& ctx, std::uint64_t token, CUstream* stream, v1::CallReply& reply) {
  if (token == 0 || token == 1) {
    *stream = nullptr;
    return true;
  }
  auto record = ctx.session.streams.find(token);
  if (!record) return refuse(reply, cudaErrorInvalidResourceHandle, "unknown stream handle");
  *stream = record->stream;
  return true;
}

bool resolveEvent(CallContext& ctx, std::uint64_t token, CUevent* event, v1::CallReply& reply) {
  auto record = ctx.session.events.find(token);
  if (!record) return refuse(reply, cudaErrorInvalidResourceHandle, "unknown event handle");
  *event = record->event;
  return true;
}

bool resolveFunction(CallContext& ctx, std::uint64_t token, FunctionRecord* function, v1::CallReply& reply) {
  auto record = ctx.session.functions.find(token);
  if (!record) return refuse(reply, cudaErrorInvalidDeviceFunction, "unknown function handle");
  *function = std::move(*record);
  return true;
}

bool resolveHostBuffer(CallContext& ctx, const v1::HostBuffer& buffer, std::uint8_t** host,
                       std::shared_ptr<SharedHostSegment>* segment, v1::CallReply& reply) {
  if (ctx.shared == nullptr) {
    return refuse(reply, cudaErrorNotSupported, "shared host memory needs the shared-memory transport");
  }
  std::uint8_t* base = nullptr;
  std::uint64_t limit = 0;
  if (buffer.segment() == 0) {
    base = ctx.shared->staging;
    limit = ctx.shared->stagingBytes;
  } else {
    auto found = ctx.session.hostSegments.find(buffer.segment());
    if (!found) return refuse(reply, cudaErrorInvalidValue, "unknown shared host segment");
    *segment = std::move(*found);
    base = (*segment)->base();
    limit = (*segment)->size();
  }
  if (base == nullptr || buffer.offset() > limit || buffer.size() > limit - buffer.offset()) {
    return refuse(reply, cudaErrorInvalidValue, "shared host range outside its segment");
  }
  *host = base + buffer.offset();
  return true;
}

bool checkRange(CallContext& ctx, std::uint64_t p, std::uint64_t n, v1::CallReply& reply, const char* what) {
  const memmgr::PointerCheck verdict = ctx.memory.check(ctx.session.id(), p, n);
  if (verdict == memmgr::PointerCheck::kOk) return true;
  SPDLOG_DEBUG("client {}: refused {} range [{:#x}, +{}): {}", ctx.session.id(), what, p, n,
               memmgr::toString(verdict));
  return refuse(reply, toCudaError(verdict),
                std::string(what) + " pointer refused: " + memmgr::toString(verdict));
}

bool confineAccessWindow(CallContext& ctx, std::uint64_t base, std::uint64_t* bytes) {
  *bytes = bytesInsideAllocation(ctx, base, *bytes, 1);
  return ctx.memory.check(ctx.session.id(), base, *bytes) == memmgr::PointerCheck::kOk;
}

std::uint64_t bytesInsideAllocation(CallContext& ctx, std::uint64_t base, std::uint64_t bytes,
                                    std::uint64_t unit) {
  const auto fits = [&](std::uint64_t n) {
    return ctx.memory.check(ctx.session.id(), base, n) == memmgr::PointerCheck::kOk;
  };
  if (unit == 0 || fits(bytes) || !fits(unit)) return bytes;
  std::uint64_t inside = 1, outside = bytes / unit;  // in units: fits(inside), !fits(outside)
  if (fits(outside * unit)) return outside * unit;
  while (outside - inside > 1) {
    const std::uint64_t middle = inside + (outside - inside) / 2;
    (fits(middle * unit) ? inside : outside) = middle;
  }
  return inside * unit;
}

}  // namespace agileos::worker
