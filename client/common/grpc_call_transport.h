// GrpcCallTransport: CallTransport over gRPC (unary Worker.Call), carrying the
// session token as binary metadata on every call.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "agileos/v1/client_api.grpc.pb.h"
#include "client/common/call_transport.h"

namespace agileos::client {

// The worker accepts messages up to one 64 MiB chunk plus envelope; the copy
// engine sends at most kCopyChunkBytes (32 MiB) of data per message.
inline constexpr int kMaxCallMessageBytes = (64 << 20) + (1 << 20);

class GrpcCallTransport final : public CallTransport {
 public:
  GrpcCallTransport(const std::string& endpoint, std::string sessionToken);
  TransportStatus call(const v1::CallRequest& request, v1::CallReply* reply) override;

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Worker::Stub> stub_;
  const std::string sessionToken_;
};

}  // namespace agileos::client
