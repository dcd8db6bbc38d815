#include "scheduler/agileosctl/admin_client.h"

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "agileos/v1/admin.grpc.pb.h"
#include "agileos/v1/grpc_health.grpc.pb.h"

namespace agileos::ctl {
namespace {

namespace admin = agileos::v1::admin;

constexpr auto kDeadline = std::chrono::seconds(10);

std::shared_ptr<grpc::Channel> unixChannel(const std::string& socket_path) {
  return grpc::CreateChannel("unix:" + socket_path, grpc::InsecureChannelCredentials());
}

RpcOutcome outcomeOf(const grpc::Status& status) {
  if (status.ok()) return {true, ""};
  return {false, status.error_message().empty() ? "gRPC status " + std::to_string(status.error_code())
                                                : status.error_message()};
}

// One unary call with a deadline.
template <typename Call>
RpcOutcome invoke(Call call) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kDeadline);
  return outcomeOf(call(&context));
}

}  // namespace

AdminClient::AdminClient(const std::string& socket_path) : channel_(unixChannel(socket_path)) {}

RpcOutcome AdminClient::status(admin::Status* out) {
  auto stub = admin::Admin::NewStub(channel_);
  return invoke(
      [&](grpc::ClientContext* context) { return stub->GetStatus(context, admin::StatusRequest(), out); });
}

RpcOutcome AdminClient::metrics(std::string* text) {
  auto stub = admin::Admin::NewStub(channel_);
  admin::MetricsText reply;
  RpcOutcome outcome = invoke([&](grpc::ClientContext* context) {
    return stub->GetMetrics(context, admin::MetricsRequest(), &reply);
  });
  *text = reply.text();
  return outcome;
}

// An action RPC: its reply's message goes to *message.
template <typename Request, typename Rpc>
RpcOutcome act(const std::shared_ptr<grpc::Channel>& channel, const Request& request, Rpc rpc,
               std::string* message) {
  auto stub = admin::Admin::NewStub(channel);
  admin::ActionReply reply;
  RpcOutcome outcome =
      invoke([&](grpc::ClientContext* context) { return ((*stub).*rpc)(context, request, &reply); });
  *message = reply.message();
  return outcome;
}

RpcOutcome AdminClient::drainWorker(std::uint64_t worker, const std::string& reason, std::string* message) {
  admin::DrainWorkerRequest request;
  request.set_worker(worker);
  request.set_reason(reason);
  return act(channel_, request, &admin::Admin::Stub::DrainWorker, message);
}

RpcOutcome AdminClient::endSession(std::uint64_t client, const std::string& reason, std::string* message) {
  admin::EndSessionRequest request;
  request.set_client(client);
  request.set_reason(reason);
  return act(channel_, request, &admin::Admin::Stub::EndSession, message);
}

RpcOutcome AdminClient::reloadModules(std::string* message) {
  return act(channel_, admin::ReloadModulesRequest(), &admin::Admin::Stub::ReloadModules, message);
}

RpcOutcome checkHealth(const std::string& socket_path, std::string* status) {
  auto stub = grpc::health::v1::Health::NewStub(unixChannel(socket_path));
  grpc::health::v1::HealthCheckResponse reply;
  RpcOutcome outcome = invoke([&](grpc::ClientContext* context) {
    return stub->Check(context, grpc::health::v1::HealthCheckRequest(), &reply);
  });
  *status = grpc::health::v1::HealthCheckResponse::ServingStatus_Name(reply.status());
  return outcome;
}

}  // namespace agileos::ctl
