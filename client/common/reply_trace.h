// A record of every message the program received from AgileOS, for tests that inspect what an
// untrusted client gets to see (tests/gpu/modules: no reply may carry a protected address, a
// descriptor, a service socket or a physical address).
//
// With AGILEOS_TRACE_REPLIES=<file>, each reply the transports parse and each message of the
// daemon session is appended to <file> as a 4-byte little-endian length and the message's
// serialized bytes. Off (the default), it costs one relaxed atomic load per reply.
// Thread-safe.
#pragma once

#include <google/protobuf/message_lite.h>

namespace agileos::client {

void traceReply(const google::protobuf::MessageLite& message);

}  // namespace agileos::client
