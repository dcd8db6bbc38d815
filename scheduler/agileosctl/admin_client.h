// AdminClient: agileosctl's connection to agileosd's admin socket (proto/agileos/v1/admin.proto)
// and to the standard health service of either of the daemon's sockets.
#pragma once

#include <memory>
#include <string>

#include "agileos/v1/admin.pb.h"

namespace grpc {
class Channel;
}

namespace agileos::ctl {

// What an RPC gave: ok, or the gRPC error's message (PERMISSION_DENIED for a caller who is not an
// administrator, FAILED_PRECONDITION for a refused action, UNAVAILABLE for no daemon).
struct RpcOutcome {
  bool ok = false;
  std::string error;
};

class AdminClient {
 public:
  explicit AdminClient(const std::string& socket_path);

  RpcOutcome status(v1::admin::Status* out);
  RpcOutcome metrics(std::string* text);
  RpcOutcome drainWorker(std::uint64_t worker, const std::string& reason, std::string* message);
  RpcOutcome endSession(std::uint64_t client, const std::string& reason, std::string* message);
  RpcOutcome reloadModules(std::string* message);

 private:
  std::shared_ptr<grpc::Channel> channel_;
};

// grpc.health.v1.Health/Check on unix:`socket_path`: "SERVING", "NOT_SERVING", ... or the error.
RpcOutcome checkHealth(const std::string& socket_path, std::string* status);

}  // namespace agileos::ctl
