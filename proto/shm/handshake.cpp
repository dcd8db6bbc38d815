#include "proto/shm/handshake.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "proto/shm/fd_passing.h"

namespace agileos::shm {
namespace {

using Clock = std::chrono::steady_clock;

std::string errnoText(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Waits until `fd` is ready for `events` or `deadline` passes. Returns false on timeout or error.
bool waitReady(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(left));
    if (rc > 0) return true;  // readable, or an error/hangup the next read reports
    if (rc < 0 && errno != EINTR) return false;
  }
}

bool readExactly(int fd, void* data, std::size_t size, Clock::time_point deadline, std::string* error) {
  auto* bytes = static_cast<std::uint8_t*>(data);
  while (size > 0) {
    if (!waitReady(fd, POLLIN, deadline)) return (*error = "timed out reading the handshake", false);
    const ssize_t n = ::recv(fd, bytes, size, MSG_DONTWAIT);
    if (n == 0) return (*error = "the peer closed the socket", false);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return (*error = errnoText("recv"), false);
    }
    bytes += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool writeAll(int fd, const void* data, std::size_t size, std::string* error) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return (*error = errnoText("send"), false);
    }
    bytes += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

std::optional<std::string> shmSocketPathFor(const std::string& grpcEndpoint) {
  constexpr std::string_view kUnix = "unix:";
  if (!grpcEndpoint.starts_with(kUnix)) return std::nullopt;
  std::string path = grpcEndpoint.substr(kUnix.size());
  if (path.empty()) return std::nullopt;
  constexpr std::string_view kSock = ".sock";
  if (path.ends_with(kSock)) path.resize(path.size() - kSock.size());
  return path + ".shm.sock";
}

bool clientHandshake(const std::string& socketPath, const std::string& token,
                     std::chrono::milliseconds timeout, int* socketFd, int* regionFd, std::string* error) {
  const Clock::time_point deadline = Clock::now() + timeout;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socketPath.size() >= sizeof(address.sun_path)) return (*error = "socket path too long", false);
  if (token.size() > kMaxTokenBytes) return (*error = "session token too long", false);
  std::memcpy(address.sun_path, socketPath.c_str(), socketPath.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return (*error = errnoText("socket"), false);
  auto fail = [&](std::string message) {
    ::close(fd);
    *error = std::move(message);
    return false;
  };
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return fail(errnoText(("connect " + socketPath).c_str()));
  }
  std::string frame(4, '\0');
  const auto length = static_cast<std::uint32_t>(token.size());
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  frame += token;
  std::string message;
  if (!writeAll(fd, frame.data(), frame.size(), &message)) return fail(message);

  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  char answer = 0;
  int received = -1;
  bool closed = false;
  if (!receiveFd(fd, std::max(left, std::chrono::milliseconds(1)), &answer, &received, &message, &closed)) {
    return fail(closed ? "the worker refused the session token" : "handshake: " + message);
  }
  if (answer != kHandshakeAccepted) {
    ::close(received);
    return fail("malformed handshake answer");
  }
  *socketFd = fd;
  *regionFd = received;
  return true;
}

bool readTokenFrame(int socketFd, std::chrono::milliseconds timeout, std::string* token, std::string* error) {
  const Clock::time_point deadline = Clock::now() + timeout;
  std::uint8_t prefix[4];
  if (!readExactly(socketFd, prefix, sizeof prefix, deadline, error)) return false;
  const std::uint32_t length =
      prefix[0] | (prefix[1] << 8) | (prefix[2] << 16) | (std::uint32_t{prefix[3]} << 24);
  if (length == 0 || length > kMaxTokenBytes) return (*error = "token frame of bad length", false);
  token->assign(length, '\0');
  return readExactly(socketFd, token->data(), length, deadline, error);
}

bool sendRegionFd(int socketFd, int regionFd, std::string* error) {
  return sendFd(socketFd, kHandshakeAccepted, regionFd, error);
}

bool peerGone(int socketFd, std::chrono::milliseconds timeout) {
  // Only hang-up events are asked for: bytes (or file descriptors) a peer sends after the
  // handshake are ignored, so they cannot make this return early in a loop.
  pollfd p{socketFd, POLLRDHUP, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) return true;
  return rc > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace agileos::shm
