#include "services/storage/storage_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace agileos::services::storage {
namespace {

using Clock = std::chrono::steady_clock;

// Milliseconds left until `deadline` for poll(): -1 without a deadline, never below 0.
int remainingMs(bool limited, Clock::time_point deadline) {
  if (!limited) return -1;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Waits for `events` on fd. 0, -ETIMEDOUT or poll's errno (EINTR is retried).
int waitFor(int fd, short events, bool limited, Clock::time_point deadline) {
  for (;;) {
    pollfd entry{fd, events, 0};
    const int ready = ::poll(&entry, 1, remainingMs(limited, deadline));
    if (ready > 0) return 0;  // readable, writable, or an error/hang-up that the next call reports
    if (ready == 0) return -ETIMEDOUT;
    if (errno != EINTR) return -errno;
  }
}

void closeReceivedFds(msghdr* message) {
  for (cmsghdr* c = CMSG_FIRSTHDR(message); c != nullptr; c = CMSG_NXTHDR(message, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      ::close(fd);
    }
  }
}

int sendUntil(int fd, const agileos_storage_request& request, const int* fds, std::size_t nfds, bool limited,
              Clock::time_point deadline) {
  if (nfds > kMaxRequestFds || (nfds > 0 && fds == nullptr)) return -EINVAL;
  iovec io{const_cast<agileos_storage_request*>(&request), sizeof(request)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxRequestFds)] = {};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  if (nfds > 0) {
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
  }
  for (;;) {
    if (::sendmsg(fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0) return 0;  // SEQPACKET: all or nothing
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return -errno;
    if (int waited = waitFor(fd, POLLOUT, limited, deadline); waited != 0) return waited;
  }
}

int receiveUntil(int fd, agileos_storage_reply* reply, bool limited, Clock::time_point deadline) {
  for (;;) {
    // One byte more than a reply, so that a longer message shows as too long.
    char buffer[sizeof(agileos_storage_reply) + 1];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
    iovec io{buffer, sizeof(buffer)};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    const ssize_t received = ::recvmsg(fd, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (received < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -errno;
      if (int waited = waitFor(fd, POLLIN, limited, deadline); waited != 0) return waited;
      continue;
    }
    if (received == 0) return -ECONNRESET;
    const bool has_fds = message.msg_controllen > 0;
    closeReceivedFds(&message);  // the service never sends descriptors
    if (has_fds || static_cast<std::size_t>(received) != sizeof(*reply) || (message.msg_flags & MSG_TRUNC))
      return -EPROTO;
    std::memcpy(reply, buffer, sizeof(*reply));
    return 0;
  }
}

}  // namespace

agileos_storage_request makeStorageRequest(agileos_storage_op op) {
  agileos_storage_request request;
  std::memset(&request, 0, sizeof(request));  // padding included: the whole message is sent
  request.op = op;
  request.version = AGILEOS_STORAGE_PROTOCOL_VERSION;
  return request;
}

int storageConnect(const char* path, int* out_fd) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::size_t length = std::strlen(path);
  if (length == 0 || length >= sizeof(address.sun_path)) return -ENAMETOOLONG;
  std::memcpy(address.sun_path, path, length);
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    const int error = errno;
    ::close(fd);
    return -error;
  }
  *out_fd = fd;
  return 0;
}

int storageSend(int fd, const agileos_storage_request& request, const int* fds, std::size_t nfds,
                int timeout_ms) {
  return sendUntil(fd, request, fds, nfds, timeout_ms >= 0,
                   Clock::now() + std::chrono::milliseconds(timeout_ms));
}

int storageReceive(int fd, agileos_storage_reply* reply, int timeout_ms) {
  return receiveUntil(fd, reply, timeout_ms >= 0, Clock::now() + std::chrono::milliseconds(timeout_ms));
}

int storageCall(int fd, const agileos_storage_request& request, const int* fds, std::size_t nfds,
                agileos_storage_reply* reply, int timeout_ms) {
  const bool limited = timeout_ms >= 0;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  if (int sent = sendUntil(fd, request, fds, nfds, limited, deadline); sent != 0) return sent;
  return receiveUntil(fd, reply, limited, deadline);
}

}  // namespace agileos::services::storage
