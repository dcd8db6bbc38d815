// DaemonSession: the client's Session stream with agileosd (untrusted side).
//
// open() sends Hello (with AGILEOS_GUARD_POLICY and AGILEOS_MODULES, if set) and waits for the
// daemon's answer. On an Assignment the stream stays open for the life of the process: its end
// tells the daemon the client is gone. A background thread watches for the daemon ending the
// session (worker lost, daemon shutdown) and flips `ended()`.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agileos/v1/client_api.grpc.pb.h"

namespace agileos::client {

// The protected modules a program asks for, from AGILEOS_MODULES: entries separated by ';', each
// "name" or "name@requirement", split at the first '@' (a requirement may hold ',' as in
// ">=1,<2", hence ';' between entries), e.g. "kvstore@^1.2;storage". Blanks around entries,
// names and requirements are dropped and empty entries skipped; nothing else is checked here:
// a malformed entry is sent as written, and the daemon, which validates every request, refuses
// the session naming it (fail closed: never a session without a module the program asked for).
std::vector<v1::ModuleRequest> parseModuleRequests(std::string_view text);

// AGILEOS_MEMORY_QUOTA: the device memory the program asks for (Hello.memory_quota_bytes), a
// whole number of bytes with an optional binary suffix: K, M, G, T (also KiB ... TiB). nullopt
// for anything else, zero and overflow included: the session is then not opened (a program
// that asked for a limit never runs without it).
std::optional<std::uint64_t> parseMemoryQuota(std::string_view text);

class DaemonSession {
 public:
  struct Result {
    bool assigned = false;
    bool busy = false;    // the daemon had no worker for us
    std::string message;  // why not, for the log
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
