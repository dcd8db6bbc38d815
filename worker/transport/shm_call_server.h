// ShmCallServer: the shared-memory transport of the worker's call plane, next to
// GrpcCallServer and feeding the same WorkerRuntime.
//
// It listens on a unix socket (proto/shm/handshake.h; by convention next to the
// gRPC socket, shm::shmSocketPathFor()). For each connection, on its own thread: read
// the session token (bounded, with a timeout), refuse it by closing unless
// WorkerRuntime::isAttachedToken(), else create a region (proto/shm/mapped_region.h),
// pass its fd and serve it (serveShmConnection) until the client goes away, the session
// is released, the client breaks the protocol, or shutdown(). The region is unmapped
// and closed when its thread ends.
//
// Limits: at most kMaxConnections connections at once (handshaking ones included), and
// at most kMaxConnectionsPerSession for one session token; more are closed at once.
// Each connection holds one thread and one region (RegionSizes: ~57 MiB reserved, most
// of it the staging area and the arenas).
//
// Thread-safety: start() and shutdown() from one thread; connectionCount() from any.
#pragma once

#include <atomic>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "proto/shm/doorbell.h"
#include "proto/shm/ring_layout.h"
#include "worker/worker_runtime.h"

namespace agileos::worker {

class ShmCallServer {
 public:
  static constexpr std::size_t kMaxConnections = 64;
  static constexpr std::size_t kMaxConnectionsPerSession = 4;
  static constexpr std::chrono::milliseconds kHandshakeTimeout{2000};
  // After accept fails for want of descriptors or memory, the accept loop waits this long.
  static constexpr std::chrono::milliseconds kAcceptBackoff{100};

  explicit ShmCallServer(WorkerRuntime& runtime, shm::RegionSizes sizes = {}, shm::WaitPolicy policy = {})
      : runtime_(runtime), sizes_(sizes), policy_(policy) {}
  ~ShmCallServer();  // shutdown()
  ShmCallServer(const ShmCallServer&) = delete;
  ShmCallServer& operator=(const ShmCallServer&) = delete;

  // Binds `socketPath` (replacing a stale file; mode 0600, root's until an attach gives it to the
  // client's uid) and starts accepting: a connection from any uid but root and the attached
  // clients' (WorkerRuntime::admitsPeerUid) is closed before a byte is read. Returns false with
  // *error set on failure.
  bool start(const std::string& socketPath, std::string* error);
  // Stops accepting, ends every connection and joins their threads; removes the socket file.
  // Idempotent.
  void shutdown();

  // Connections currently open (handshaking or served).
  std::size_t connectionCount() const;

 private:
  struct ConnectionThread {
    std::thread thread;
    std::atomic<bool> done{false};
  };
  void acceptLoop();
  void serve(int socketFd);
  void reapFinished();

  WorkerRuntime& runtime_;
  const shm::RegionSizes sizes_;
  const shm::WaitPolicy policy_;
  std::string socketPath_;
  int listenFd_ = -1;
  int wakeFds_[2] = {-1, -1};  // a pipe: writing wakes the accept loop for shutdown
  std::atomic<bool> stopping_{false};
  std::thread acceptThread_;
  mutable std::mutex mutex_;
  std::list<ConnectionThread> connections_;
  std::map<std::string, std::size_t> perSession_;  // open connections by session token
};

}  // namespace agileos::worker
