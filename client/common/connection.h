// Connection: the process's one link to AgileOS (untrusted side), shared by
// every shim in the process (cudart now; cuFFT, NVRTC and the driver shim later).
//
// Established lazily by the first call that needs the GPU: a Session with
// agileosd (AGILEOS_SOCKET, default /run/agileos/agileosd.sock), then a call
// transport to the assigned worker. The outcome, success or failure, is kept
// for the life of the process, like CUDA's own initialization.
//
// The object is intentionally never destroyed: CUDA programs call into the
// runtime from atexit handlers and static destructors.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "client/common/call_transport.h"
#include "client/common/daemon_session.h"

namespace agileos::client {

enum class ConnectionState { kConnected, kNoDaemon, kBusy, kLost };

class Connection {
 public:
  static Connection& instance();

  // Connects if not yet tried. Returns the state after the attempt.
  ConnectionState ensure();

  // True once a connection was made and not lost; never connects.
  bool established();

  // Sends one call. Returns kLost (and stays lost) if the worker is gone.
  ConnectionState call(const v1::CallRequest& request, v1::CallReply* reply);
  // CallTransport::send: without waiting for the reply where the transport can
  // (*replied = false), else as call() (*replied = true).
  ConnectionState send(const v1::CallRequest& request, v1::CallReply* reply, bool* replied);
  // CallTransport::stage; null if not connected or the transport has no staging area.
  // A transport failure during staged calls shows as kUnavailable from them; the next
  // call() then reports the connection lost.
  std::unique_ptr<StagedCalls> stage();
  bool sharesHostMemory();
  // CallTransport::allocateShared.
  ConnectionState allocateShared(const v1::CallRequest& request, v1::CallReply* reply, void** mapping,
                                 bool atDeviceAddress = false);

  // True once the process has begun exiting: late calls (unregistration at exit)
  // must not start a connection.
  static bool exiting();

 private:
  Connection() = default;
  ConnectionState lost();

  std::mutex mutex_;
  bool tried_ = false;
  ConnectionState state_ = ConnectionState::kNoDaemon;
  DaemonSession session_;
  std::unique_ptr<CallTransport> transport_;
};

}  // namespace agileos::client
