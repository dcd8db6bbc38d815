// CallTransport: how the client's calls reach its worker (untrusted side).
//
// The schema is agileos.v1.CallRequest/CallReply whatever carries it, so a
// transport moves messages and decides nothing. Implementations: gRPC over a
// unix socket (grpc_call_transport.h); a shared-memory ring comes later.
//
// Thread-safety: call() may be used from several threads at once.
#pragma once

#include "agileos/v1/client_api.pb.h"

namespace agileos::client {

enum class TransportStatus {
  kOk,           // the reply is the worker's answer
  kUnavailable,  // the worker cannot be reached (it died or the session ended)
  kRejected,     // the worker refused the session token
};

class CallTransport {
 public:
  virtual ~CallTransport() = default;
  virtual TransportStatus call(const v1::CallRequest& request, v1::CallReply* reply) = 0;
};

}  // namespace agileos::client
