#include "proto/shm/fd_passing.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agileos::shm {

bool sendFd(int socketFd, char tag, int fd, std::string* error, std::chrono::milliseconds timeout) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  iovec io{&tag, 1};
  msghdr header{};
  header.msg_iov = &io;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&header);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + timeout;
  ssize_t n;
  for (;;) {
    n = ::sendmsg(socketFd, &header, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) break;
    if (errno == EINTR) continue;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      *error = "the peer does not read its socket";
      return false;
    }
    pollfd p{socketFd, POLLOUT, 0};
    ::poll(&p, 1, static_cast<int>(left));
  }
  if (n != 1) {
    *error = std::string("sendmsg: ") + std::strerror(errno);
    return false;
  }
  return true;
}

bool receiveFd(int socketFd, std::chrono::milliseconds timeout, char* tag, int* fd, std::string* error,
               bool* closed) {
  if (closed != nullptr) *closed = false;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      *error = "timed out waiting for a file descriptor";
      return false;
    }
    pollfd p{socketFd, POLLIN, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(left));
    if (rc > 0) break;
    if (rc < 0 && errno != EINTR) {
      *error = std::string("poll: ") + std::strerror(errno);
      return false;
    }
  }
  char byte = 0;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  iovec io{&byte, 1};
  msghdr header{};
  header.msg_iov = &io;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(socketFd, &header, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  int received = -1;
  int count = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t fds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < fds; ++i) {
      int one = -1;
      std::memcpy(&one, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (count++ == 0) {
        received = one;
      } else {
        ::close(one);
      }
    }
  }
  if (n == 1 && count == 1 && (header.msg_flags & MSG_CTRUNC) == 0) {
    *tag = byte;
    *fd = received;
    return true;
  }
  if (received >= 0) ::close(received);
  if (n == 0 && closed != nullptr) *closed = true;
  *error = n == 0  ? "the peer closed the socket"
           : n < 0 ? std::string("recvmsg: ") + std::strerror(errno)
                   : "a message without exactly one file descriptor";
  return false;
}

}  // namespace agileos::shm
