// AdminServer: agileosd's admin API (proto/agileos/v1/admin.proto) on a socket of its own, with
// a gRPC server of its own, so that nothing of it is reachable on the clients' socket.
//
// Every RPC first checks the caller (admin_access.h: root, the daemon's uid, the admin group);
// others get PERMISSION_DENIED and the refusal is logged. Every action (drain, end a session,
// reload the modules) is recorded in the audit trail with the caller's kernel identity.
//
// The server reads the daemon's state through AdminBackend, which names no gRPC type; the
// daemon (daemon_service.cpp) implements it over its pool, services, registry and metrics.
//
// Thread-safety: start() and stop() from one thread; the RPCs run on gRPC's threads.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "agileos/v1/admin.pb.h"

namespace grpc {
class Server;
}

namespace agileos::scheduler {

class AuditLog;
class PeerListener;

// What the admin API can see and do. Each method runs on a gRPC thread.
class AdminBackend {
 public:
  virtual ~AdminBackend() = default;
  virtual agileos::v1::admin::Status status() const = 0;
  // Each returns false with *message saying why, or true with what was done.
  virtual bool drainWorker(std::uint64_t worker, const std::string& reason, std::string* message) = 0;
  virtual bool endSession(std::uint64_t client, const std::string& reason, std::string* message) = 0;
  virtual bool reloadModules(std::string* message) = 0;
  virtual std::string metricsText() const = 0;
};

struct AdminServerOptions {
  std::string socket_path;
  gid_t admin_gid = 0;
  std::shared_ptr<AuditLog> audit;  // may be null
};

class AdminServer {
 public:
  AdminServer(AdminServerOptions options, AdminBackend& backend);
  ~AdminServer();  // stop()
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // Makes the socket's directory (root's, 0750, the admin group's), replaces a stale socket and
  // listens. False with *error.
  bool start(std::string* error);
  void stop();

 private:
  class Service;
  const AdminServerOptions options_;
  AdminBackend& backend_;
  std::unique_ptr<PeerListener> listener_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace agileos::scheduler
