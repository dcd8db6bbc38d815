#include "client/common/reply_trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>

namespace agileos::client {
namespace {

std::once_flag gOpenOnce;
std::atomic<int> gTraceFd{-1};
std::mutex gWriteMutex;

void openTrace() {
  const char* path = std::getenv("AGILEOS_TRACE_REPLIES");
  if (path == nullptr || *path == '\0') return;
  gTraceFd.store(::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600), std::memory_order_relaxed);
}

bool writeAll(int fd, const char* data, std::size_t bytes) {
  while (bytes > 0) {
    const ssize_t written = ::write(fd, data, bytes);
    if (written <= 0) return false;
    data += written;
    bytes -= static_cast<std::size_t>(written);
  }
  return true;
}

}  // namespace

void traceReply(const google::protobuf::MessageLite& message) {
  std::call_once(gOpenOnce, openTrace);
  const int fd = gTraceFd.load(std::memory_order_relaxed);
  if (fd < 0) return;
  const std::string bytes = message.SerializeAsString();
  const auto length = static_cast<std::uint32_t>(bytes.size());
  const unsigned char prefix[4] = {
      static_cast<unsigned char>(length), static_cast<unsigned char>(length >> 8),
      static_cast<unsigned char>(length >> 16), static_cast<unsigned char>(length >> 24)};
  std::lock_guard lock(gWriteMutex);
  writeAll(fd, reinterpret_cast<const char*>(prefix), sizeof prefix);
  writeAll(fd, bytes.data(), bytes.size());
}

}  // namespace agileos::client
