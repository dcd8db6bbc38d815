// Passing one file descriptor with a one-byte tag over a unix stream socket
// (SCM_RIGHTS). The shared-memory transport uses it twice: the worker hands the client
// its call region at the handshake (tag kHandshakeAccepted, handshake.h) and each shared
// host segment right before the HostAlloc reply (tag kSegmentFdTag).
//
// Both functions retry on EINTR. A received message that carries no fd, more than one,
// or was truncated is refused, and any fd it did carry is closed: nothing leaks.
#pragma once

#include <chrono>
#include <string>

namespace agileos::shm {

inline constexpr char kSegmentFdTag = 'S';

// Gives up after `timeout` if the peer does not drain its socket (a client that never
// reads must not hold the sender's thread forever).
bool sendFd(int socketFd, char tag, int fd, std::string* error,
            std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));

// Waits up to `timeout` for one tagged fd. Returns true with *tag and *fd (owned by the
// caller, close-on-exec) or false with *error set; *closed tells whether the peer closed
// the socket instead of sending.
bool receiveFd(int socketFd, std::chrono::milliseconds timeout, char* tag, int* fd, std::string* error,
               bool* closed = nullptr);

}  // namespace agileos::shm
