// Stream-ordered allocation (proto StreamOrderedMemory): the part other handlers share.
#pragma once

#include "worker/call_context.h"

namespace agileos::worker {

// Gives back to the memory manager every stream-ordered free whose work has finished (the events
// are queried, never waited for). Only for handlers that run exclusively within their client
// (Exclusivity::kInvalidates): memory goes, so no concurrent call of the client may hold a check
// of it.
void giveBackCompletedFrees(CallContext& ctx);

// The stream a token names, as stream-ordered reuse tells streams apart: 0 and 1 are both the
// legacy stream (resolveStream); any other token is one stream's for its whole life.
inline std::uint64_t streamIdentity(std::uint64_t token) { return token == 1 ? 0 : token; }

}  // namespace agileos::worker
