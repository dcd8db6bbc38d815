#include "worker/device_output.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>

namespace agileos::worker {

bool DeviceOutputCapture::start() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  if (::pipe2(stopFd_, O_CLOEXEC) != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return false;
  }
  std::fflush(stdout);
  if (::dup2(fds[1], STDOUT_FILENO) < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return false;
  }
  ::close(fds[1]);
  readFd_ = fds[0];
  ::fcntl(readFd_, F_SETFL, ::fcntl(readFd_, F_GETFL) | O_NONBLOCK);
  drainer_ = std::thread([this] { drainLoop(); });
  return true;
}

DeviceOutputCapture::~DeviceOutputCapture() {
  if (drainer_.joinable()) {
    char byte = 0;
    (void)!::write(stopFd_[1], &byte, 1);
    drainer_.join();
  }
  for (int fd : {readFd_, stopFd_[0], stopFd_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void DeviceOutputCapture::readAvailableLocked() {
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(readFd_, chunk, sizeof chunk);
    if (n <= 0) return;
    const auto count = static_cast<std::size_t>(n);
    if (buffer_.size() + count > kMaxBuffered) {
      truncated_ = true;
      continue;
    }
    buffer_.append(chunk, count);
  }
}

void DeviceOutputCapture::drainLoop() {
  pollfd fds[2] = {{readFd_, POLLIN, 0}, {stopFd_[0], POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    if (fds[0].revents & (POLLERR | POLLNVAL)) return;
    std::lock_guard lock(mutex_);
    readAvailableLocked();
  }
}

bool DeviceOutputCapture::imageMayPrint(const std::string& image) {
  return image.find("vprintf") != std::string::npos || image.find("__assertfail") != std::string::npos;
}

std::string DeviceOutputCapture::take() {
  if (readFd_ < 0 || !expecting_.load(std::memory_order_relaxed)) return {};
  std::fflush(stdout);  // the driver writes through stdio; push it into the pipe first
  std::lock_guard lock(mutex_);
  readAvailableLocked();
  std::string out;
  out.swap(buffer_);
  if (truncated_) {
    out += "\n[agileos: device printf output truncated]\n";
    truncated_ = false;
  }
  return out;
}

}  // namespace agileos::worker
