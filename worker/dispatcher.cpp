#include "worker/dispatcher.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "proto/wire/wire_operations.h"
#include "worker/adapters/library_adapter.h"
#include "worker/handlers/array_texture_handlers.h"
#include "worker/handlers/guard_handlers.h"
#include "worker/handlers/module_loading.h"

namespace agileos::worker {

void HandlerRegistry::add(v1::CallRequest::OpCase op, Handler handler, Exclusivity exclusivity) {
  const auto slot = static_cast<std::size_t>(op);
  if (slot == 0 || slot >= kSlots || handlers_[slot].handler != nullptr || handler == nullptr ||
      wire::findWireOperation(op) == nullptr) {
    spdlog::critical("handler registration for op {} is invalid or duplicated", slot);
    std::abort();
  }
  handlers_[slot] = {handler, exclusivity};
}

HandlerEntry HandlerRegistry::find(v1::CallRequest::OpCase op) const {
  const auto slot = static_cast<std::size_t>(op);
  return slot < kSlots ? handlers_[slot] : HandlerEntry{};
}

namespace {

void handleAdapterCall(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  if (ctx.adapters == nullptr) {
    refuse(reply, cudaErrorNotSupported, "this worker hosts no library adapters");
    return;
  }
  ctx.adapters->handle(ctx, request.adapter_call(), reply);
}

}  // namespace

Dispatcher::Dispatcher() {
  // Exclusivity per operation comes from the adapter's declaration (exclusivity()).
  registry_.add(v1::CallRequest::kAdapterCall, handleAdapterCall);
  registerDeviceHandlers(registry_);
  registerMemoryHandlers(registry_);
  registerVirtualMemoryHandlers(registry_);
  registerStreamOrderedMemoryHandlers(registry_);
  registerStreamHandlers(registry_);
  registerEventHandlers(registry_);
  registerModuleHandlers(registry_);
  registerHostMemoryHandlers(registry_);
  registerGuardHandlers(registry_);
  registerModuleImageHandlers(registry_);
  registerModuleControlHandlers(registry_);
  registerArrayTextureHandlers(registry_);
  registerTensorMapHandlers(registry_);
  // Every operation of the wire table has a handler: found at start-up, not by a client.
  for (const wire::WireOperation& operation : wire::wireOperations()) {
    if (registry_.find(operation.op).handler == nullptr) {
      spdlog::critical("wire operation {} has no handler", operation.name);
      std::abort();
    }
  }
}

Exclusivity Dispatcher::exclusivity(const v1::CallRequest& request) const {
  if (request.op_case() == v1::CallRequest::kAdapterCall) {
    return adapters_ != nullptr && adapters_->invalidates(request.adapter_call()) ? Exclusivity::kInvalidates
                                                                                  : Exclusivity::kConcurrent;
  }
  if (request.op_case() == v1::CallRequest::kArrayTexture)
    return arrayTextureExclusivity(request.array_texture());
  return registry_.find(request.op_case()).exclusivity;
}

void Dispatcher::dispatch(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) const {
  Handler handler = registry_.find(request.op_case()).handler;
  if (handler == nullptr) {
    refuse(reply, cudaErrorNotSupported, "request carries no supported operation");
    return;
  }
  // A client the guard poisoned gets the fault from every call, as after a kernel fault
  // (its status remains readable).
  if (ctx.session.guard.poisoned && request.op_case() != v1::CallRequest::kGuardStatusQuery) {
    refusePoisoned(reply);
    return;
  }
  reply.set_error(cudaSuccess);
  handler(ctx, request, reply);
  if (reply.error() == cudaSuccess && wire::checksGuard(request)) checkGuardAfterSynchronize(ctx, reply);
}

}  // namespace agileos::worker
