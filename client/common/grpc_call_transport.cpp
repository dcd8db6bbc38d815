#include "client/common/grpc_call_transport.h"

#include "client/common/log.h"
#include "client/common/reply_trace.h"

namespace agileos::client {

GrpcCallTransport::GrpcCallTransport(const std::string& endpoint, std::string sessionToken)
    : sessionToken_(std::move(sessionToken)) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxCallMessageBytes);
  args.SetMaxSendMessageSize(kMaxCallMessageBytes);
  channel_ = grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args);
  stub_ = v1::Worker::NewStub(channel_);
}

TransportStatus GrpcCallTransport::call(const v1::CallRequest& request, v1::CallReply* reply) {
  grpc::ClientContext context;
  context.AddMetadata("x-agileos-session-bin", sessionToken_);
  const grpc::Status status = stub_->Call(&context, request, reply);
  if (status.ok()) {
    traceReply(*reply);
    return TransportStatus::kOk;
  }
  AGILEOS_LOG_ERROR("call to worker failed: %s (%d)", status.error_message().c_str(),
                    static_cast<int>(status.error_code()));
  return status.error_code() == grpc::StatusCode::UNAUTHENTICATED ? TransportStatus::kRejected
                                                                  : TransportStatus::kUnavailable;
}

}  // namespace agileos::client
