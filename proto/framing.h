// Length-prefixed protobuf messages over a stream socket or pipe.
//
// Frame: 4-byte little-endian payload length, then the serialized message.
// A frame longer than kMaxFrameBytes is refused without reading its payload,
// so a peer cannot make the reader allocate unbounded memory.
//
// Thread-safety: none; callers serialize writes and reads per descriptor.
#pragma once

#include <google/protobuf/message_lite.h>

#include <cstddef>
#include <cstdint>

namespace agileos::wire {

inline constexpr std::size_t kMaxFrameBytes = 16u << 20;

enum class FrameStatus { kOk, kClosed, kTooLarge, kMalformed, kIoError };

// Writes one frame; retries on EINTR and short writes. Returns kOk or kIoError/kClosed.
FrameStatus writeFrame(int fd, const google::protobuf::MessageLite& message);

// Blocks until one whole frame is read and parsed into `message`.
// kClosed: orderly EOF before any byte of a frame.
FrameStatus readFrame(int fd, google::protobuf::MessageLite* message);

const char* toString(FrameStatus status);

}  // namespace agileos::wire
