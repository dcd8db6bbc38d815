// The shared-memory transport's handshake, over a unix stream socket next to the
// worker's gRPC socket (shmSocketPathFor()).
//
//   client -> worker: u32 little-endian length, then the raw session token
//   worker -> client: one byte kHandshakeAccepted, carrying the region's memfd (SCM_RIGHTS)
//   (an unknown token: the worker closes the socket without answering)
//
// The socket stays open for the connection's lifetime: its closure is how each side
// learns that the other is gone (peerGone()).
//
// All functions retry on EINTR and take a timeout where they may block on the peer.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace agileos::shm {

inline constexpr std::size_t kMaxTokenBytes = 256;
inline constexpr char kHandshakeAccepted = 'A';

// "unix:/x/worker-3.sock" -> "/x/worker-3.shm.sock"; nullopt for a non-unix endpoint.
std::optional<std::string> shmSocketPathFor(const std::string& grpcEndpoint);

// Client side. Connects to `socketPath`, sends `token`, and waits up to `timeout` for the
// region. On success returns true with *socketFd (keep it open) and *regionFd (both owned
// by the caller); otherwise false with *error set and nothing left open.
bool clientHandshake(const std::string& socketPath, const std::string& token, std::chrono::milliseconds timeout,
                     int* socketFd, int* regionFd, std::string* error);

// Worker side: reads the token frame (at most kMaxTokenBytes) within `timeout`.
bool readTokenFrame(int socketFd, std::chrono::milliseconds timeout, std::string* token, std::string* error);
// Worker side: sends kHandshakeAccepted with `regionFd`.
bool sendRegionFd(int socketFd, int regionFd, std::string* error);

// True if the peer closed its end (or the socket failed); waits up to `timeout` to find out.
bool peerGone(int socketFd, std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

}  // namespace agileos::shm
