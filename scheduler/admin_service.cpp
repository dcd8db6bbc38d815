#include "scheduler/admin_service.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "agileos/v1/admin.grpc.pb.h"
#include "scheduler/admin_access.h"
#include "scheduler/audit_log.h"
#include "scheduler/peer_listener.h"
#include "scheduler/printable_line.h"
#include "scheduler/runtime_files.h"

namespace agileos::scheduler {
namespace {

namespace admin = agileos::v1::admin;

// Requests are a few ids and a reason; nothing bigger is read.
constexpr int kMaxAdminRequestBytes = 16 * 1024;
constexpr std::size_t kMaxReasonBytes = 512;

// A reason for the log, the trail and a client's SessionEnded: one printable, bounded line.
std::string printableReason(const std::string& text, const char* fallback) {
  return text.empty() ? fallback : printableLine(text, kMaxReasonBytes);
}

}  // namespace

class AdminServer::Service final : public admin::Admin::Service {
 public:
  Service(const AdminServerOptions& options, AdminBackend& backend, const PeerListener& listener)
      : options_(options), backend_(backend), listener_(listener) {}

  grpc::Status GetStatus(grpc::ServerContext* context, const admin::StatusRequest*,
                         admin::Status* reply) override {
    if (auto denied = authorize(context, "GetStatus")) return *denied;
    *reply = backend_.status();
    return grpc::Status::OK;
  }

  grpc::Status GetMetrics(grpc::ServerContext* context, const admin::MetricsRequest*,
                          admin::MetricsText* reply) override {
    if (auto denied = authorize(context, "GetMetrics")) return *denied;
    reply->set_text(backend_.metricsText());
    return grpc::Status::OK;
  }

  grpc::Status DrainWorker(grpc::ServerContext* context, const admin::DrainWorkerRequest* request,
                           admin::ActionReply* reply) override {
    const std::string reason = printableReason(request->reason(), "drained by an administrator");
    return act(
        context, "drain_worker", {{"worker", request->worker()}, {"reason", reason}}, reply,
        [&](std::string* message) { return backend_.drainWorker(request->worker(), reason, message); });
  }

  grpc::Status EndSession(grpc::ServerContext* context, const admin::EndSessionRequest* request,
                          admin::ActionReply* reply) override {
    const std::string reason = printableReason(request->reason(), "ended by an administrator");
    return act(context, "end_session", {{"client", request->client()}, {"reason", reason}}, reply,
               [&](std::string* message) { return backend_.endSession(request->client(), reason, message); });
  }

  grpc::Status ReloadModules(grpc::ServerContext* context, const admin::ReloadModulesRequest*,
                             admin::ActionReply* reply) override {
    return act(context, "reload_modules", nlohmann::json::object(), reply,
               [&](std::string* message) { return backend_.reloadModules(message); });
  }

 private:
  // nullopt when the caller may administer (its credentials then in *caller, if asked for); else
  // the status to answer with.
  std::optional<grpc::Status> authorize(grpc::ServerContext* context, const char* rpc,
                                        PeerCredentials* caller = nullptr) {
    const std::optional<PeerCredentials> peer = listener_.credentialsOf(context->peer());
    if (peer && isAdministrator(*peer, options_.admin_gid, ::geteuid())) {
      if (caller != nullptr) *caller = *peer;
      return std::nullopt;
    }
    spdlog::warn("admin: {} refused to {} (uid {}, pid {}): not root, the daemon's uid or in group {}", rpc,
                 context->peer(), peer ? std::to_string(peer->uid) : "unknown",
                 peer ? std::to_string(peer->pid) : "unknown", options_.admin_gid);
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "the admin API is for root and group " + std::to_string(options_.admin_gid));
  }

  // Checks the caller, runs `action`, logs it and records it in the audit trail.
  template <typename Action>
  grpc::Status act(grpc::ServerContext* context, const char* name, nlohmann::json details,
                   admin::ActionReply* reply, Action action) {
    PeerCredentials peer;
    if (auto denied = authorize(context, name, &peer)) return *denied;
    std::string message;
    const bool done = action(&message);
    spdlog::info("admin: {} by uid {} (pid {}): {}{}", name, peer.uid, peer.pid,
                 done ? "" : "refused: ", message);
    if (options_.audit) {
      nlohmann::json event = {
          {"event", "admin_action"}, {"action", name}, {"done", done}, {"message", message}};
      event.update({{"uid", peer.uid}, {"gid", peer.gid}, {"pid", peer.pid}});
      event.update(details);
      options_.audit->record(std::move(event));
    }
    if (!done) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, message);
    reply->set_message(message);
    return grpc::Status::OK;
  }

  const AdminServerOptions& options_;
  AdminBackend& backend_;
  const PeerListener& listener_;
};

AdminServer::AdminServer(AdminServerOptions options, AdminBackend& backend)
    : options_(std::move(options)), backend_(backend) {}

AdminServer::~AdminServer() { stop(); }

bool AdminServer::start(std::string* error) {
  // Root can give the socket to the admin group; a daemon of another uid keeps its own group
  // (the admin API is then for root and its own uid).
  const gid_t group = ::geteuid() == 0 ? options_.admin_gid : ::getegid();
  const std::string dir = parentDirectory(options_.socket_path);
  if (!ensureDirectory(dir, error)) {
    *error = "admin socket: " + *error;
    return false;
  }
  // The directory is tightened only when it is the socket's own (the default,
  // <runtime_dir>-admin): a configured path in a shared directory (/run, /tmp) must not take that
  // directory from everyone else. The socket's own mode and group and the credential check of
  // every call hold either way.
  if (holdsOnly(dir, std::filesystem::path(options_.socket_path).filename())) {
    if (!restrictDirectory(dir, ::geteuid(), group, 0750, error)) {
      *error = "admin socket: " + *error;
      return false;
    }
  } else {
    spdlog::warn("admin API: {} holds other files; its permissions are left as they are", dir);
  }
  if (!prepareSocketPath(options_.socket_path, error)) {
    *error = "admin socket: " + *error;
    return false;
  }
  listener_ = std::make_unique<PeerListener>();
  service_ = std::make_unique<Service>(options_, backend_, *listener_);
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(kMaxAdminRequestBytes);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_) {
    *error = "admin socket: cannot start its gRPC server";
    return false;
  }
  if (!listener_->start(options_.socket_path, server_.get(), error, 0660, group)) {
    *error = "admin socket: " + *error;
    server_->Shutdown();
    server_.reset();
    return false;
  }
  spdlog::info("admin API: unix:{} (root and group {})", options_.socket_path, group);
  return true;
}

void AdminServer::stop() {
  if (!server_) return;
  listener_->stop();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  server_.reset();
  ::unlink(options_.socket_path.c_str());
}

}  // namespace agileos::scheduler
