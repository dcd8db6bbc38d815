#include "client/common/daemon_session.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "client/common/log.h"

namespace agileos::client {
namespace {

std::string programName() {
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

}  // namespace

DaemonSession::Result DaemonSession::open(const std::string& socketPath) {
  Result result;
  channel_ = grpc::CreateChannel("unix:" + socketPath, grpc::InsecureChannelCredentials());
  stub_ = v1::Daemon::NewStub(channel_);
  context_ = std::make_unique<grpc::ClientContext>();
  stream_ = stub_->Session(context_.get());

  v1::SessionUp up;
  v1::Hello* hello = up.mutable_hello();
  hello->set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
  hello->set_program(programName());
  hello->set_pid(static_cast<std::uint32_t>(::getpid()));
  // The kernel memory guard policy this program asks for; the daemon admits it or refuses
  // the session (guard.allowed_policies). Unset: the daemon's default.
  if (const char* policy = std::getenv("AGILEOS_GUARD_POLICY"); policy != nullptr)
    hello->set_guard_policy(policy);
  v1::SessionDown down;
  if (!stream_->Write(up) || !stream_->Read(&down)) {
    const grpc::Status status = stream_->Finish();
    result.message = "cannot reach agileosd at " + socketPath + ": " + status.error_message();
    return result;
  }
  switch (down.msg_case()) {
    case v1::SessionDown::kAssignment:
      if (down.assignment().protocol_version() != v1::PROTOCOL_VERSION_CURRENT) {
        result.message =
            "agileosd speaks protocol version " + std::to_string(down.assignment().protocol_version());
        return result;
      }
      result.assigned = true;
      result.assignment = down.assignment();
      watcher_ = std::thread([this] { watch(); });
      watcher_.detach();  // lives as long as the process; the session ends with it
      return result;
    case v1::SessionDown::kRefusal:
      result.busy = down.refusal().reason() == v1::Refusal::BUSY;
      result.message = "agileosd refused the session: " + down.refusal().message();
      return result;
    default:
      result.message = "agileosd sent an unexpected first message";
      return result;
  }
}

void DaemonSession::watch() {
  v1::SessionDown down;
  while (stream_->Read(&down)) {
    if (down.has_ended()) {
      AGILEOS_LOG_ERROR("agileosd ended the session: %s", down.ended().reason().c_str());
      break;
    }
  }
  ended_ = true;
}

}  // namespace agileos::client
