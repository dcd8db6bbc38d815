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

class HandlerRegistry {
 public:
  // Aborts on a duplicate registration: that is a programming error found at start-up.
  void add(v1::CallRequest::OpCase op, Handler handler);
  Handler find(v1::CallRequest::OpCase op) const;

 private:
  static constexpr std::size_t kSlots = 128;  // > the largest field number in CallRequest.op
  std::array<Handler, kSlots> handlers_{};
};

void registerDeviceHandlers(HandlerRegistry& registry);
void registerMemoryHandlers(HandlerRegistry& registry);
void registerStreamHandlers(HandlerRegistry& registry);
void registerEventHandlers(HandlerRegistry& registry);
void registerModuleHandlers(HandlerRegistry& registry);

class Dispatcher {
 public:
  Dispatcher();
  void dispatch(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) const;

 private:
  HandlerRegistry registry_;
};

}  // namespace agileos::worker
