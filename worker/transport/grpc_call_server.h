// GrpcCallServer: the gRPC transport of the worker's call plane.
//
// Each Call carries the session token in metadata "x-agileos-session"; a call
// without a valid token is answered UNAUTHENTICATED and never dispatched. The
// transport only moves messages: every decision is WorkerRuntime's, so the
// shared-memory transport can feed the same runtime.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "agileos/v1/client_api.grpc.pb.h"
#include "worker/worker_runtime.h"

namespace agileos::worker {

// Binary metadata ("-bin"): the token is raw random bytes.
inline constexpr char kSessionMetadataKey[] = "x-agileos-session-bin";
// Largest message either side accepts: a 64 MiB copy chunk plus envelope.
inline constexpr int kMaxCallMessageBytes = (64 << 20) + (1 << 20);
// Calls a worker serves at once over gRPC; more wait (or are refused by gRPC).
inline constexpr int kMaxCallThreads = 64;
inline constexpr int kMaxConcurrentCalls = 32;

class GrpcCallServer final : public v1::Worker::Service {
 public:
  explicit GrpcCallServer(WorkerRuntime& runtime) : runtime_(runtime) {}

  // Listens on `endpoint` (e.g. "unix:/run/agileos/worker-1.sock"). Returns false with *error set on failure.
  bool start(const std::string& endpoint, std::string* error);
  void shutdown();

  grpc::Status Call(grpc::ServerContext* context, const v1::CallRequest* request,
                    v1::CallReply* reply) override;

 private:
  WorkerRuntime& runtime_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace agileos::worker
