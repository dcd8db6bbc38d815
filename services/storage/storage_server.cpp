#include "services/storage/storage_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <list>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>

#include "services/storage/connection.h"
#include "services/storage/cuda_buffer_backend.h"
#include "services/storage/host_buffer_backend.h"
#include "services/storage/service_counters.h"

namespace agileos::services::storage {
namespace {

struct ConnectionThread {
  UniqueFd fd;  // closed only after the thread is joined, so the number is never reused under it
  std::shared_ptr<std::atomic<bool>> finished = std::make_shared<std::atomic<bool>>(false);
  std::thread thread;
};

// "" if the peer of `fd` may use the service, else why not. `socket_group`: the group of the
// listening socket when it is a group the workers share (not root's, not this service's own), else
// nullopt.
std::string peerRefusal(int fd, std::optional<gid_t> socket_group) {
  ucred peer{};
  socklen_t peer_length = sizeof(peer);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_length) != 0) {
    return std::string("no peer credentials: ") + std::strerror(errno);
  }
  if (peer.uid == 0 || peer.uid == ::geteuid()) return "";
  if (socket_group) {
    gid_t groups[256];
    socklen_t groups_length = sizeof(groups);
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &groups_length) == 0) {
      const std::size_t count = groups_length / sizeof(gid_t);
      if (peer.gid == *socket_group || std::find(groups, groups + count, *socket_group) != groups + count) {
        return "";
      }
    }
    return "uid " + std::to_string(peer.uid) + " is not in the workers' group " +
           std::to_string(*socket_group);
  }
  return "uid " + std::to_string(peer.uid) + " (only uid " + std::to_string(::geteuid()) +
         " and root may connect)";
}

// The listening socket's group if it is a shared group (see peerRefusal).
std::optional<gid_t> sharedSocketGroup(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) return std::nullopt;
  if (status.st_gid == 0 || status.st_gid == ::getegid()) return std::nullopt;
  return status.st_gid;
}

void reapFinished(std::list<ConnectionThread>* connections) {
  for (auto it = connections->begin(); it != connections->end();) {
    if (it->finished->load(std::memory_order_acquire)) {
      it->thread.join();
      it = connections->erase(it);
    } else {
      ++it;
    }
  }
}

// Blocks SIGTERM and SIGINT (threads started later inherit the mask) and returns a signalfd
// for them.
UniqueFd stopSignals(std::string* reason) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  if (::pthread_sigmask(SIG_BLOCK, &signals, nullptr) != 0) {
    *reason = "pthread_sigmask failed";
    return UniqueFd();
  }
  UniqueFd fd(::signalfd(-1, &signals, SFD_CLOEXEC));
  if (!fd.valid()) *reason = std::string("signalfd: ") + std::strerror(errno);
  return fd;
}

}  // namespace

int listenAt(const std::string& path, UniqueFd* out, std::string* reason) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    *reason = "socket path empty or longer than " + std::to_string(sizeof(address.sun_path) - 1) + " bytes";
    return -ENAMETOOLONG;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size());
  struct stat existing;
  if (::lstat(path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode)) {
      *reason = path + " exists and is not a socket";
      return -EEXIST;
    }
    // A socket someone still listens on is not stale: never take it over.
    UniqueFd probe(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (probe.valid() &&
        ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) {
      *reason = path + " is in use by a running service";
      return -EADDRINUSE;
    }
    ::unlink(path.c_str());  // a previous instance's, left by a crash
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    const int error = errno;
    *reason = std::string("socket: ") + std::strerror(error);
    return -error;
  }
  // The file is created 0660 (umask), not chmod-ed afterwards: no moment where others may
  // connect. The group is the directory's: the daemon's workers' shared group when they run as
  // ids of their own (the directory is setgid then), else the daemon's, in a 0700 directory.
  const mode_t previous = ::umask(0117);
  const int bound = ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  const int bind_error = errno;
  ::umask(previous);
  if (bound != 0) {
    *reason = "bind " + path + ": " + std::strerror(bind_error);
    return -bind_error;
  }
  if (::listen(fd.get(), 64) != 0) {
    const int error = errno;
    *reason = std::string("listen: ") + std::strerror(error);
    ::unlink(path.c_str());
    return -error;
  }
  *out = std::move(fd);
  return 0;
}

int runStorageService(const ServiceOptions& options) {
  std::string reason;
  UniqueFd signal_fd = stopSignals(&reason);
  if (!signal_fd.valid()) {
    spdlog::critical("cannot start: {}", reason);
    return 1;
  }
  ::signal(SIGPIPE, SIG_IGN);  // replies use MSG_NOSIGNAL; this covers any other write

  UniqueFd root(::open(options.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) {
    spdlog::critical("cannot start: --root {}: {}", options.root, std::strerror(errno));
    return 1;
  }
  std::unique_ptr<BufferBackend> backend =
      options.buffer_backend == "host" ? makeHostBufferBackend() : makeCudaBufferBackend(options.device);
  UniqueFd listener;
  if (listenAt(options.socket_path, &listener, &reason) != 0) {
    spdlog::critical("cannot start: {}", reason);
    return 1;
  }
  const std::optional<gid_t> socket_group = sharedSocketGroup(options.socket_path);

  ServiceCounters counters;
  std::atomic<bool> stopping{false};
  ServiceContext context;
  context.root_fd = root.get();
  context.backend = backend.get();
  context.counters = &counters;
  context.threads = options.threads;
  context.stopping = &stopping;
  spdlog::info(
      "listening on {}: root {}, {} pollers per lease, {} buffer backend{}", options.socket_path,
      options.root, options.threads, backend->name(),
      options.buffer_backend == "cuda" ? ", device " + std::to_string(options.device) : std::string());

  std::list<ConnectionThread> connections;
  std::uint64_t next_id = 1;
  for (;;) {
    pollfd waits[2] = {{listener.get(), POLLIN, 0}, {signal_fd.get(), POLLIN, 0}};
    if (::poll(waits, 2, -1) < 0 && errno != EINTR) {
      spdlog::error("poll: {}", std::strerror(errno));
      break;
    }
    reapFinished(&connections);
    if (waits[1].revents != 0) {
      signalfd_siginfo signal{};
      if (::read(signal_fd.get(), &signal, sizeof(signal)) == sizeof(signal)) {
        spdlog::info("{}: stopping", ::strsignal(static_cast<int>(signal.ssi_signo)));
      }
      break;
    }
    if (waits[0].revents == 0) continue;
    UniqueFd accepted(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!accepted.valid()) {
      const int error = errno;
      if (error != EINTR && error != ECONNABORTED && error != EAGAIN) {
        spdlog::warn("accept: {}", std::strerror(error));
        // EMFILE and the like last a while: let connections end instead of spinning.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      continue;
    }
    // Only the daemon's workers may talk to it: root, this service's uid, or (when the workers
    // run as ids of their own) a member of the socket's group, the workers' shared group. The
    // directory and the file modes say so already; the peer check holds even if one were wrong.
    if (std::string refusal = peerRefusal(accepted.get(), socket_group); !refusal.empty()) {
      spdlog::warn("refused a connection: {}", refusal);
      continue;
    }
    const std::uint64_t id = next_id++;
    spdlog::debug("connection {} accepted", id);
    ConnectionThread& connection = connections.emplace_back();
    connection.fd = std::move(accepted);
    try {
      connection.thread =
          std::thread([fd = connection.fd.get(), id, &context, finished = connection.finished] {
            serveConnection(fd, id, context);
            spdlog::debug("connection {} ended", id);
            finished->store(true, std::memory_order_release);
          });
    } catch (const std::system_error& failure) {  // out of threads: drop this connection, carry on
      spdlog::error("connection {} dropped: no thread for it: {}", id, failure.what());
      connections.pop_back();
    }
  }

  // Shutting a connection down ends its thread's receive; the thread then revokes its lease.
  stopping.store(true, std::memory_order_release);
  for (ConnectionThread& connection : connections) ::shutdown(connection.fd.get(), SHUT_RDWR);
  for (ConnectionThread& connection : connections) connection.thread.join();
  connections.clear();
  ::unlink(options.socket_path.c_str());
  spdlog::info("stopped: {} leases served, {} reads completed", counters.leases_served.load(),
               counters.reads_completed.load());
  return 0;
}

}  // namespace agileos::services::storage
