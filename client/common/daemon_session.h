// DaemonSession: the client's Session stream with agileosd (untrusted side).
//
// open() sends Hello and waits for the daemon's answer. On an Assignment the
// stream stays open for the life of the process: its end tells the daemon the
// client is gone. A background thread watches for the daemon ending the
// session (worker lost, daemon shutdown) and flips `ended()`.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "agileos/v1/client_api.grpc.pb.h"

namespace agileos::client {

class DaemonSession {
 public:
  struct Result {
    bool assigned = false;
    bool busy = false;     // the daemon had no worker for us
    std::string message;   // why not, for the log
    v1::Assignment assignment;
  };

  // `socketPath` is a filesystem path; the daemon is reached at "unix:<socketPath>".
  Result open(const std::string& socketPath);
  bool ended() const { return ended_.load(); }

 private:
  void watch();

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Daemon::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SessionUp, v1::SessionDown>> stream_;
  std::thread watcher_;
  std::atomic<bool> ended_{false};
};

}  // namespace agileos::client
