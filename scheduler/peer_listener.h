// PeerListener: the daemon's own accept loop on its unix socket, so that every client connection
// is known by its kernel-attested credentials (SO_PEERCRED) before gRPC reads a byte from it.
//
// gRPC's unix listener hides the peer's credentials (ServerContext::peer() is only a path). So
// the daemon listens itself, reads SO_PEERCRED of each accepted connection, records it under the
// descriptor's number and hands the descriptor to gRPC (grpc::AddInsecureChannelFromFd), whose
// streams then name their connection "fd:<N>" in peer(); credentialsOf() maps that back.
//
// Invariants:
// - An entry is recorded before its descriptor reaches gRPC, so a stream of that connection
//   always finds it.
// - Descriptor numbers are reused once gRPC closes a connection; the next accept overwrites the
//   entry. A stream read after its own connection closed could see the next connection's
//   credentials: such a stream is dead (nothing can be sent on it), so the mix-up can at most
//   count a session that is already over against the wrong uid for a moment.
// - accept failing with EMFILE/ENFILE/ENOBUFS/ENOMEM backs off (doubling, up to 1 s) instead of
//   spinning; the listener keeps going.
//
// Thread-safety: start/stop from one thread; credentialsOf from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace grpc {
class Server;
}

namespace agileos::scheduler {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

// The descriptor number in a peer() string "fd:<N>", or nullopt.
std::optional<int> descriptorOfPeer(const std::string& peer);

class PeerListener {
 public:
  PeerListener() = default;
  ~PeerListener();  // stop()
  PeerListener(const PeerListener&) = delete;
  PeerListener& operator=(const PeerListener&) = delete;

  // Binds and listens on `socket_path` and starts accepting into `server`, which must outlive
  // stop(). The socket file gets `mode` and, when given, `group`: 0666 for the clients' socket
  // (sandboxed clients of any uid connect; who they are is what SO_PEERCRED says), 0600 or 0660
  // with the admin group for the admin socket.
  bool start(const std::string& socket_path, grpc::Server* server, std::string* error, mode_t mode = 0666,
             std::optional<gid_t> group = std::nullopt);
  // Stops accepting and closes the listening socket (connections already handed over stay).
  void stop();

  // The credentials of the connection a stream's peer() names; nullopt if it names none.
  std::optional<PeerCredentials> credentialsOf(const std::string& peer) const;

 private:
  void acceptLoop();

  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // stop() writes to [1]; the loop polls [0]
  grpc::Server* server_ = nullptr;
  std::thread thread_;
  mutable std::mutex mu_;
  std::map<int, PeerCredentials> by_fd_;
};

}  // namespace agileos::scheduler
