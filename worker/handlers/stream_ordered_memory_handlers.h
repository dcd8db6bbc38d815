// Stream-ordered allocation (proto StreamOrderedMemory): the part other handlers share.
#pragma once

#include "worker/call_context.h"

namespace agileos::worker {

// Gives back to the memory manager every stream-ordered free whose work has finished (the events
// are queried, never waited for). Only for handlers that run exclusively within their client
// (Exclusivity::kInvalidates): memory goes, so no concurrent call of the client may hold a check
// of it.
void giveBackCompletedFrees(CallContext& ctx);

}  // namespace agileos::worker
