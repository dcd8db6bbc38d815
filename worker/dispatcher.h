// Dispatcher: the worker's one table of call handlers, keyed by the request's op.
//
// Each handler family (device, memory, stream, event, module) registers its
// handlers in its own file. A request whose op has no handler (including an
// empty request) is refused with cudaErrorNotSupported; nothing else happens.
#pragma once

#include <array>

#include "worker/call_context.h"

namespace agileos::worker {

using Handler = void (*)(CallContext&, const v1::CallRequest&, v1::CallReply&);

// Whether a call can end the life of something another call of the same client
// may have validated and be about to use (memory, a stream, an event, a module).
// Such calls run alone within their client; all others run concurrently with
// each other. This closes every check-then-use window: between a handler's
// validation and its driver call, nothing it validated can be freed or destroyed.
enum class Exclusivity { kConcurrent, kInvalidates };

struct HandlerEntry {
  Handler handler = nullptr;
  Exclusivity exclusivity = Exclusivity::kConcurrent;
};

class HandlerRegistry {
 public:
  // Aborts on a duplicate registration, or one for an operation the wire table
  // (proto/wire/wire_operations.h) does not list: programming errors found at start-up.
  void add(v1::CallRequest::OpCase op, Handler handler, Exclusivity exclusivity = Exclusivity::kConcurrent);
  HandlerEntry find(v1::CallRequest::OpCase op) const;

 private:
  static constexpr std::size_t kSlots = 128;  // > the largest field number in CallRequest.op
  std::array<HandlerEntry, kSlots> handlers_{};
};

void registerDeviceHandlers(HandlerRegistry& registry);
void registerMemoryHandlers(HandlerRegistry& registry);
void registerVirtualMemoryHandlers(HandlerRegistry& registry);
void registerStreamOrderedMemoryHandlers(HandlerRegistry& registry);
void registerStreamHandlers(HandlerRegistry& registry);
void registerEventHandlers(HandlerRegistry& registry);
void registerModuleHandlers(HandlerRegistry& registry);
void registerHostMemoryHandlers(HandlerRegistry& registry);
void registerGuardHandlers(HandlerRegistry& registry);
void registerModuleControlHandlers(HandlerRegistry& registry);
void registerArrayTextureHandlers(HandlerRegistry& registry);
void registerTensorMapHandlers(HandlerRegistry& registry);

class AdapterHost;

class Dispatcher {
 public:
  Dispatcher();
  // The library adapters whose declarations say which AdapterCalls invalidate (may be null).
  void setAdapters(const AdapterHost* adapters) { adapters_ = adapters; }
  // How the caller must hold the client's gate while dispatching `request`.
  Exclusivity exclusivity(const v1::CallRequest& request) const;
  void dispatch(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) const;

 private:
  HandlerRegistry registry_;
  const AdapterHost* adapters_ = nullptr;
};

}  // namespace agileos::worker
