#include "worker/transport/grpc_call_server.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agileos::worker {

bool GrpcCallServer::start(const std::string& endpoint, std::string* error) {
  constexpr std::string_view kUnixPrefix = "unix:";
  if (endpoint.starts_with(kUnixPrefix)) {
    const std::string path = endpoint.substr(kUnixPrefix.size());
    ::unlink(path.c_str());  // a stale socket from a previous worker with this id
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(endpoint, grpc::InsecureServerCredentials());
  builder.SetMaxReceiveMessageSize(kMaxCallMessageBytes);
  builder.SetMaxSendMessageSize(kMaxCallMessageBytes);
  // Bound what one client can make its worker hold: threads (each call in flight
  // occupies one, possibly blocked in a synchronize) and concurrent calls per connection.
  grpc::ResourceQuota quota("agileos-worker-calls");
  quota.SetMaxThreads(kMaxCallThreads);
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxConcurrentCalls);
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
  if (!server_) {
    *error = "cannot listen on " + endpoint;
    return false;
  }
  if (endpoint.starts_with(kUnixPrefix)) {
    // This worker's alone until a client is attached; the daemon then gives the file to the
    // client's uid (scheduler/endpoint_owner.h), so no other uid can connect, let alone send a
    // stream.
    if (::chmod(endpoint.substr(kUnixPrefix.size()).c_str(), 0600) != 0) {
      *error = "chmod 0600 " + endpoint + ": " + std::strerror(errno);
      server_->Shutdown();
      server_.reset();
      return false;
    }
  }
  return true;
}

void GrpcCallServer::shutdown() {
  if (server_) server_->Shutdown();
}

grpc::Status GrpcCallServer::Call(grpc::ServerContext* context, const v1::CallRequest* request,
                                  v1::CallReply* reply) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find(kSessionMetadataKey);
  if (it == metadata.end()) return {grpc::StatusCode::UNAUTHENTICATED, "missing session token"};
  const std::string token(it->second.data(), it->second.size());
  if (runtime_.call(token, *request, *reply) != WorkerRuntime::CallStatus::kOk) {
    return {grpc::StatusCode::UNAUTHENTICATED, "unknown session token"};
  }
  return grpc::Status::OK;
}

}  // namespace agileos::worker
