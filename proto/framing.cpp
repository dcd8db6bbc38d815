#include "proto/framing.h"

#include <cerrno>
#include <string>
#include <unistd.h>

namespace agileos::wire {
namespace {

FrameStatus writeAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EPIPE ? FrameStatus::kClosed : FrameStatus::kIoError;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return FrameStatus::kOk;
}

// Reads exactly `size` bytes. `*got` tells how many arrived before EOF.
FrameStatus readAll(int fd, char* data, std::size_t size, std::size_t* got) {
  *got = 0;
  while (*got < size) {
    ssize_t n = ::read(fd, data + *got, size - *got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return FrameStatus::kIoError;
    }
    if (n == 0) return FrameStatus::kClosed;
    *got += static_cast<std::size_t>(n);
  }
  return FrameStatus::kOk;
}

}  // namespace

FrameStatus writeFrame(int fd, const google::protobuf::MessageLite& message) {
  std::string payload;
  if (!message.SerializeToString(&payload)) return FrameStatus::kMalformed;
  if (payload.size() > kMaxFrameBytes) return FrameStatus::kTooLarge;
  const auto len = static_cast<uint32_t>(payload.size());
  char header[4] = {static_cast<char>(len & 0xff), static_cast<char>((len >> 8) & 0xff),
                    static_cast<char>((len >> 16) & 0xff), static_cast<char>((len >> 24) & 0xff)};
  payload.insert(0, header, sizeof header);
  return writeAll(fd, payload.data(), payload.size());
}

FrameStatus readFrame(int fd, google::protobuf::MessageLite* message) {
  unsigned char header[4];
  std::size_t got = 0;
  FrameStatus status = readAll(fd, reinterpret_cast<char*>(header), sizeof header, &got);
  if (status == FrameStatus::kClosed && got != 0) return FrameStatus::kMalformed;
  if (status != FrameStatus::kOk) return status;
  const uint32_t len = static_cast<uint32_t>(header[0]) | static_cast<uint32_t>(header[1]) << 8 |
                       static_cast<uint32_t>(header[2]) << 16 | static_cast<uint32_t>(header[3]) << 24;
  if (len > kMaxFrameBytes) return FrameStatus::kTooLarge;
  std::string payload(len, '\0');
  status = readAll(fd, payload.data(), len, &got);
  if (status == FrameStatus::kClosed) return FrameStatus::kMalformed;
  if (status != FrameStatus::kOk) return status;
  return message->ParseFromString(payload) ? FrameStatus::kOk : FrameStatus::kMalformed;
}

const char* toString(FrameStatus status) {
  switch (status) {
    case FrameStatus::kOk: return "ok";
    case FrameStatus::kClosed: return "peer closed";
    case FrameStatus::kTooLarge: return "frame too large";
    case FrameStatus::kMalformed: return "malformed frame";
    case FrameStatus::kIoError: return "i/o error";
  }
  return "unknown";
}

}  // namespace agileos::wire
