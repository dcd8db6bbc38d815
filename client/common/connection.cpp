#include "client/common/connection.h"

#include <atomic>
#include <cstdlib>
#include <string_view>

#include "client/common/grpc_call_transport.h"
#include "client/common/log.h"
#include "client/common/shm_call_transport.h"

namespace agileos::client {
namespace {

std::atomic<bool> gExiting{false};

const char* socketPath() {
  const char* path = std::getenv("AGILEOS_SOCKET");
  return path != nullptr && *path != '\0' ? path : "/run/agileos/agileosd.sock";
}

// Shared memory (the worker's region, shm_call_transport.h) unless
// AGILEOS_TRANSPORT=grpc asks for gRPC. If the shared-memory transport cannot be
// set up, calls go over gRPC instead: both reach the same worker, with the same
// checks, so nothing is bypassed; only speed differs.
std::unique_ptr<CallTransport> makeCallTransport(const v1::Assignment& assignment) {
  const char* choice = std::getenv("AGILEOS_TRANSPORT");
  const std::string_view requested = choice != nullptr ? choice : "shm";
  if (requested != "grpc") {
    if (requested != "shm") AGILEOS_LOG_WARN("AGILEOS_TRANSPORT=%s is not shm or grpc; using shm", choice);
    std::string error = "the worker offers no shared-memory endpoint";
    if (!assignment.shm_endpoint().empty()) {
      // Requests too large for the region's arena (huge module images) go over gRPC.
      auto oversized =
          std::make_unique<GrpcCallTransport>(assignment.worker_endpoint(), assignment.session_token());
      auto transport = ShmCallTransport::connect(assignment.shm_endpoint(), assignment.session_token(),
                                                 ShmCallTransport::waitPolicyFromEnvironment(),
                                                 std::move(oversized), &error);
      if (transport) {
        AGILEOS_LOG_INFO("calls go over shared memory (%s)", assignment.shm_endpoint().c_str());
        return transport;
      }
    }
    AGILEOS_LOG_WARN("shared-memory transport unavailable (%s); using gRPC", error.c_str());
  }
  AGILEOS_LOG_INFO("calls go over gRPC (%s)", assignment.worker_endpoint().c_str());
  return std::make_unique<GrpcCallTransport>(assignment.worker_endpoint(), assignment.session_token());
}

}  // namespace

Connection& Connection::instance() {
  static Connection* connection = new Connection();  // never destroyed: see header
  return *connection;
}

bool Connection::exiting() { return gExiting.load(); }

ConnectionState Connection::ensure() {
  std::lock_guard lock(mutex_);
  if (tried_) {
    if (state_ == ConnectionState::kConnected && session_.ended()) state_ = ConnectionState::kLost;
    return state_;
  }
  tried_ = true;
  DaemonSession::Result result = session_.open(socketPath());
  if (!result.assigned) {
    AGILEOS_LOG_ERROR("%s", result.message.c_str());
    state_ = result.busy ? ConnectionState::kBusy : ConnectionState::kNoDaemon;
    return state_;
  }
  transport_ = makeCallTransport(result.assignment);
  std::atexit([] { gExiting = true; });
  AGILEOS_LOG_INFO("connected: client %llu on %s",
                   static_cast<unsigned long long>(result.assignment.client_id()),
                   result.assignment.worker_endpoint().c_str());
  state_ = ConnectionState::kConnected;
  return state_;
}

bool Connection::established() {
  std::lock_guard lock(mutex_);
  return tried_ && state_ == ConnectionState::kConnected;
}

ConnectionState Connection::lost() {
  std::lock_guard lock(mutex_);
  state_ = ConnectionState::kLost;
  return state_;
}

ConnectionState Connection::call(const v1::CallRequest& request, v1::CallReply* reply) {
  const ConnectionState state = ensure();
  if (state != ConnectionState::kConnected) return state;
  if (transport_->call(request, reply) == TransportStatus::kOk) return ConnectionState::kConnected;
  return lost();
}

ConnectionState Connection::send(const v1::CallRequest& request, v1::CallReply* reply, bool* replied) {
  *replied = false;
  const ConnectionState state = ensure();
  if (state != ConnectionState::kConnected) return state;
  if (transport_->send(request, reply, replied) == TransportStatus::kOk) return ConnectionState::kConnected;
  return lost();
}

std::unique_ptr<StagedCalls> Connection::stage() {
  if (ensure() != ConnectionState::kConnected) return nullptr;
  return transport_->stage();
}

bool Connection::sharesHostMemory() {
  return ensure() == ConnectionState::kConnected && transport_->sharesHostMemory();
}

ConnectionState Connection::allocateShared(const v1::CallRequest& request, v1::CallReply* reply,
                                           void** mapping, bool atDeviceAddress) {
  *mapping = nullptr;
  const ConnectionState state = ensure();
  if (state != ConnectionState::kConnected) return state;
  if (transport_->allocateShared(request, reply, mapping, atDeviceAddress) == TransportStatus::kOk) {
    return ConnectionState::kConnected;
  }
  return lost();
}

}  // namespace agileos::client
